// The demo's stand-ins for what releases an instance in AWS, which no local component does:
// the AWS Load Balancer Controller and ELB (the controller's shapes in the cluster, a
// TargetGroupBinding on the Service's NodePort; once the node is excluded, its target drains for
// the deregistration delay, then is gone) and the attach-detach controller with the CSI driver
// (a volume stays attached until its pod left, then detaches a few seconds later; the database
// takes 12 s to shut down, so its volume is the last thing the node waits for). And how the
// timeline tells the settle phase's log lines.
import {
  attachVolume,
  bindTargetGroup,
  createBoundClaim,
  detachVolume,
  installTargetGroupBindingCrd,
  podAnnotations,
  podSpec,
  until,
  type Admin,
} from '../test/cluster/kube.js';
import type { ElbStub, StubTargetGroup } from '../test/fakes/elb-stub.js';

/** The name the AWS Load Balancer Controller gives the target group of Service shop/nginx, port 80. */
export const demoTargetGroupName = 'k8s-shop-nginx-5e1f0c2a9b';

/**
 * What the AWS Load Balancer Controller leaves in a cluster for a Service it exposes through an
 * instance target group: the TargetGroupBinding CRD, the Service (type NodePort), the target group
 * (tagged as the controller tags it) with every node's instance registered on the NodePort, and
 * the TargetGroupBinding that ties them together, which is how the drainer finds the group
 * (lambda/cluster/served-load-balancers.ts). The controller itself does not run here: this plays
 * its deregistration, once the node is excluded, and ELB's draining for `drainSeconds`.
 *   https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/targetgroupbinding/
 */
export async function playTargetGroup(
  a: Admin,
  elb: ElbStub,
  o: {
    clusterName: string;
    node: string;
    instanceId: string;
    drainSeconds: number;
    /** Every instance of the group: the controller registers each node. */
    instances: readonly string[];
  },
): Promise<StubTargetGroup> {
  await installTargetGroupBindingCrd(a);
  const group = elb.addTargetGroup(demoTargetGroupName, {
    tags: { 'elbv2.k8s.aws/cluster': o.clusterName, 'service.k8s.aws/stack': 'shop/nginx' },
    targets: new Map(o.instances.map((id) => [id, 'healthy'])),
  });
  await bindTargetGroup(a, {
    namespace: 'shop',
    service: 'nginx',
    binding: demoTargetGroupName,
    targetGroupArn: group.arn,
    targetPort: 80,
  });
  void until(
    'the node excluded from load balancers',
    600_000,
    async () =>
      'node.kubernetes.io/exclude-from-external-load-balancers' in
      ((await a.core.readNode({ name: o.node })).metadata?.labels ?? {}),
    500,
  )
    .then(async () => {
      group.targets.set(o.instanceId, 'draining');
      await new Promise((resolve) => setTimeout(resolve, o.drainSeconds * 1000));
      group.targets.delete(o.instanceId);
    })
    .catch(() => undefined);
  return group;
}

/**
 * A one-replica database on `node` whose volume is attached there (a VolumeAttachment, as the
 * CSI driver leaves it); once its pod has left the node the volume detaches `detachSeconds` later.
 */
export async function playVolume(
  a: Admin,
  o: { namespace: string; node: string; detachSeconds: number },
): Promise<void> {
  const pv = 'pvc-0d8e1b6a-db';
  await createBoundClaim(a, o.namespace, 'db-data', pv, '10Gi');
  const affinity = {
    nodeAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          preference: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [o.node] }] },
        },
      ],
    },
  };
  const shutdown = { terminationGracePeriodSeconds: 30, deleteDelay: '12s' };
  const spec = {
    ...podSpec(shutdown),
    affinity,
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'db-data' } }],
  };
  await a.apps.createNamespacedDeployment({
    namespace: o.namespace,
    body: {
      metadata: { name: 'db' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'db' } },
        template: { metadata: { labels: { app: 'db' }, annotations: podAnnotations(shutdown) }, spec },
      },
    },
  });
  const onNode = async () =>
    (await a.core.listNamespacedPod({ namespace: o.namespace, labelSelector: 'app=db' })).items.filter(
      (p) => p.spec?.nodeName === o.node,
    );
  await until('the database running on the node', 60_000, async () =>
    (await onNode()).some((p) => p.status?.phase === 'Running'),
  );
  await attachVolume(a, pv, o.node);
  void until('the database pod gone from the node', 600_000, async () => (await onNode()).length === 0, 250)
    .then(async () => {
      await new Promise((resolve) => setTimeout(resolve, o.detachSeconds * 1000));
      await detachVolume(a, pv, o.node);
    })
    .catch(() => undefined);
}

/** The timeline's words for the settle phase's log lines; undefined for any other line. */
export function settleLine(log: Record<string, unknown>): readonly [string, string] | undefined {
  const list = (v: unknown) => (Array.isArray(v) ? v : []) as Record<string, unknown>[];
  switch (log['message']) {
    case 'waiting for load balancers to let the instance go':
      return [
        'LB wait',
        `${
          list(log['holding'])
            .map((h) => `${String(h['name'])} (${String(h['state'])})`)
            .join(', ') || 'no target group holds the instance'
        }: released once none does`,
      ];
    case 'load balancers let the instance go':
      return [
        'LB let go',
        list(log['deregistered'])
          .map((d) => `${String(d['name'])} after ${String(d['seconds'])} s`)
          .join(', '),
      ];
    case 'waiting for volumes to detach':
      return [
        'volume wait',
        `${list(log['volumes'])
          .map((v) => `${String(v['persistentVolume'])} (${String(v['attacher'])})`)
          .join(', ')} still attached`,
      ];
    case 'volumes detached':
      return [
        'volumes detached',
        list(log['volumes'])
          .map((v) => `${String(v['persistentVolume'])} after ${String(v['seconds'])} s`)
          .join(', '),
      ];
    case 'settled: the instance can go':
      return [
        'settled',
        `${String(log['secondsSinceDrain'])} s after the drain: no load balancer holds the instance, no volume of a departed pod is attached`,
      ];
    case 'still waiting for load balancers and volumes after the drain':
      return [
        'resumed',
        `${String(log['secondsSinceDrain'])} s after the drain: still waiting for load balancers${log['volumesPending'] ? ' and volumes' : ''}`,
      ];
    default:
      return undefined;
  }
}
