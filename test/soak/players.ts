// What releases an instance in AWS, which nothing local does, played from the cluster's state
// (a poll every half second): the AWS Load Balancer Controller and ELB (a node's target drains
// for a while once the node is excluded from external load balancers, then is gone; a new node
// is registered once Ready), and the attach-detach controller with a CSI driver (a StatefulSet
// pod's volume attached to its node while it runs there, detached a while after it left).
import { StorageV1Api } from '@kubernetes/client-node';
import { attachmentNameOf, csiVolumeName } from '../../lambda/cluster/rules/volume-names.js';
import { attachVolume, detachVolume, type Admin } from '../cluster/kube.js';
import type { StubTargetGroup } from '../fakes/elb-stub.js';

const exclude = 'node.kubernetes.io/exclude-from-external-load-balancers';

export interface Player {
  stop(): void;
}

function every(ms: number, step: () => Promise<void>): Player {
  let stopped = false;
  let running = false;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = true;
    step()
      .catch(() => undefined)
      .finally(() => (running = false));
  }, ms);
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}

/**
 * The target group of a Service behind the AWS Load Balancer Controller: each node of the run
 * registered while it is Ready and not excluded; an excluded node's target drains for
 * `drainSeconds`, then is deregistered; a terminated instance's target goes at once.
 */
export function playTargets(
  a: Admin,
  group: StubTargetGroup,
  o: { nodes: () => ReadonlyMap<string, string>; terminated: (instanceId: string) => boolean; drainSeconds: number },
): Player {
  const draining = new Map<string, NodeJS.Timeout>();
  return every(500, async () => {
    const byName = o.nodes();
    const listed = (await a.core.listNode()).items.filter((n) => byName.has(n.metadata?.name ?? ''));
    for (const node of listed) {
      const id = byName.get(node.metadata!.name!)!;
      const excluded = node.metadata?.labels?.[exclude] === 'true';
      const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      if (o.terminated(id)) continue;
      if (!excluded && ready && !group.targets.has(id) && !draining.has(id)) group.targets.set(id, 'healthy');
      if (excluded && group.targets.get(id) === 'healthy') {
        group.targets.set(id, 'draining');
        draining.set(
          id,
          setTimeout(() => {
            group.targets.delete(id);
            draining.delete(id);
          }, o.drainSeconds * 1000),
        );
      }
    }
    for (const id of group.targets.keys()) if (o.terminated(id)) group.targets.delete(id);
  });
}

/**
 * A StatefulSet's volumes (claims bound ahead to persistent volumes, `volumes`: claim -> PV):
 * attached to the node of the pod that runs with it, detached `detachSeconds` after no pod uses
 * it there any more (at once when the node is gone, as EC2 detaches with the instance).
 */
export function playVolumes(
  a: Admin,
  o: { namespace: string; selector: string; volumes: ReadonlyMap<string, string>; detachSeconds: number },
): Player {
  const attached = new Map<string, string>();
  const detaching = new Set<string>();
  return every(500, async () => {
    const pods = (await a.core.listNamespacedPod({ namespace: o.namespace, labelSelector: o.selector })).items;
    const nodes = new Set((await a.core.listNode()).items.map((n) => n.metadata?.name ?? ''));
    const using = new Map<string, string>();
    for (const pod of pods) {
      const claim = pod.spec?.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName;
      const pv = claim === undefined ? undefined : o.volumes.get(claim);
      if (pv === undefined || pod.spec?.nodeName === undefined) continue;
      using.set(pv, pod.spec.nodeName);
      if (attached.has(pv) || pod.status?.phase !== 'Running' || !nodes.has(pod.spec.nodeName)) continue;
      attached.set(pv, pod.spec.nodeName);
      await attachVolume(a, pv, pod.spec.nodeName);
    }
    for (const [pv, node] of attached) {
      if (using.get(pv) === node || detaching.has(pv)) continue;
      detaching.add(pv);
      const gone = !nodes.has(node);
      setTimeout(
        () =>
          void detachVolume(a, pv, node)
            // The node is gone: only the VolumeAttachment is left to delete.
            .catch(() =>
              a.kc.makeApiClient(StorageV1Api).deleteVolumeAttachment({
                name: attachmentNameOf(csiVolumeName('ebs.csi.aws.com', pv), node)!,
              }),
            )
            .catch(() => undefined)
            .finally(() => {
              attached.delete(pv);
              detaching.delete(pv);
            }),
        gone ? 0 : o.detachSeconds * 1000,
      );
    }
  });
}
