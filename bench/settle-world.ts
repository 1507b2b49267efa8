// The cluster and the account the settle section (bench/settle.ts) drains a node in: stand-in
// nodes of EKS size (bench/fleet.ts's), VolumeAttachments spread over them as the CSI attacher
// names them, the cluster's target groups in the ELB stand-in (test/fakes/elb-stub.ts) bound by
// TargetGroupBindings on NodePort Services and tagged for the cluster as the AWS Load Balancer
// Controller tags what it makes (0b7823b found them by the tag), and other teams' target groups
// in the same account. The drained node runs a Deployment, has two CSI volumes attached (the
// VolumeAttachment and the Node's status.volumesAttached, test/cluster/kube.ts) and is
// registered in three of the cluster's groups.
import { StorageV1Api } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import type { Environment } from '../demo/environment.js';
import { attachmentNameOf, csiVolumeName } from '../lambda/cluster/rules/volume-names.js';
import type { ElbStub, StubTargetGroup } from '../test/fakes/elb-stub.js';
import {
  attachVolume,
  bindTargetGroup,
  createDeployment,
  ensureNamespace,
  installTargetGroupBindingCrd,
  newInstanceId,
  until,
  waitNodeReady,
} from '../test/cluster/kube.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { fillerNode, fillersSettled } from './fleet.js';

export const namespace = 'settle';
export const clusterGroupCount = 60;
export const otherGroupCount = 800;
/** Of the cluster's groups, those the drained node is registered in. */
export const groupsOfNode = 3;
export const podsOnNode = 5;
export const volumesOfNode = 2;
const zones = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];

export interface World {
  readonly env: Environment;
  readonly elb: ElbStub;
  readonly clusterGroups: readonly StubTargetGroup[];
  /** Stand-in nodes made so far (their names, in order), and attachments spread over them. */
  readonly fillers: string[];
  attachments: number;
}

export interface DrainedNode {
  readonly name: string;
  readonly instanceId: string;
  readonly volumes: readonly string[];
  readonly groups: readonly StubTargetGroup[];
}

/** The CRD, 60 NodePort Services each bound to one of the cluster's groups, 800 other teams' groups. */
export async function createWorld(env: Environment, elb: ElbStub): Promise<World> {
  const a = env.admin;
  await ensureNamespace(a, namespace);
  await installTargetGroupBindingCrd(a);
  const clusterGroups: StubTargetGroup[] = [];
  for (let i = 0; i < clusterGroupCount; i++) {
    const name = `k8s-settle-app${i}`;
    const group = elb.addTargetGroup(name, {
      tags: {
        'elbv2.k8s.aws/cluster': testAws.clusterName,
        'elbv2.k8s.aws/targetGroupBinding': `${namespace}/${name}`,
      },
    });
    clusterGroups.push(group);
    await bindTargetGroup(a, { namespace, service: name, targetGroupArn: group.arn });
  }
  for (let i = 0; i < otherGroupCount; i++) {
    const targets = new Map(Array.from({ length: 10 }, () => [newInstanceId(), 'healthy'] as [string, string]));
    elb.addTargetGroup(`team${i % 40}-svc${i}`, {
      tags: { team: `team${i % 40}`, 'elbv2.k8s.aws/cluster': `other-cluster-${i % 7}` },
      targets,
    });
  }
  return { env, elb, clusterGroups, fillers: [], attachments: 0 };
}

/** Every group of the cluster registers `instances` instances (a group registers every node of a cluster this size). */
export function registerInstances(w: World, instances: number): void {
  const ids = Array.from({ length: instances }, () => newInstanceId());
  for (const g of w.clusterGroups) {
    g.targets.clear();
    for (const id of ids) g.targets.set(id, 'healthy');
  }
}

const countNodes = async (w: World) =>
  ((await w.env.admin.core.listNode({ limit: 1 })).metadata?.remainingItemCount ?? 0) + 1;

/** Stand-in nodes until the cluster has `total`, their not-ready taints taken off (bench/fleet.ts). */
export async function growTo(w: World, total: number, say: (line: string) => void): Promise<number> {
  const a = w.env.admin;
  const start = w.fillers.length;
  const end = start + Math.max(0, total - (await countNodes(w)));
  let next = start;
  const create = async () => {
    for (let i = next++; i < end; i = next++) {
      const node = fillerNode(i, zones[i % zones.length]!);
      await a.core.createNode({ body: node });
      w.fillers[i] = node.metadata!.name!;
      if ((i + 1) % 500 === 0) say(`${i + 1} stand-in nodes`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, create));
  await fillersSettled(a, () => {}, 3_000);
  return countNodes(w);
}

/** VolumeAttachments (CSI, attached as the external attacher leaves them) on the stand-in nodes until there are `total`. */
export async function attachUpTo(w: World, total: number): Promise<void> {
  const storage = w.env.admin.kc.makeApiClient(StorageV1Api);
  let next = w.attachments;
  const create = async () => {
    for (let i = next++; i < total; i = next++) {
      const nodeName = w.fillers[i % w.fillers.length]!;
      const handle = `vol-0${randomBytes(8).toString('hex')}`;
      await storage.createVolumeAttachment({
        body: {
          metadata: {
            name: attachmentNameOf(csiVolumeName('ebs.csi.aws.com', handle), nodeName)!,
            annotations: { 'csi.alpha.kubernetes.io/node-id': `i-0${randomBytes(8).toString('hex')}` },
            finalizers: ['external-attacher/ebs-csi-aws-com'],
          },
          spec: {
            attacher: 'ebs.csi.aws.com',
            nodeName,
            source: { persistentVolumeName: `pvc-${randomBytes(16).toString('hex')}` },
          },
        },
      });
    }
  };
  await Promise.all(Array.from({ length: 16 }, create));
  w.attachments = Math.max(w.attachments, total);
}

/** A node of the group with 5 pods (1 s shutdowns), two CSI volumes attached, registered in three of the cluster's groups. */
export async function drainedNode(w: World, name: string, groupOffset: number): Promise<DrainedNode> {
  const { env } = w;
  const a = env.admin;
  const instanceId = newInstanceId();
  await env.addNode(name, instanceId, { 'settle-pool': name });
  await waitNodeReady(a, name);
  await until(
    `${name} untainted`,
    60_000,
    async () => ((await a.core.readNode({ name })).spec?.taints ?? []).length === 0,
  );
  await createDeployment(a, namespace, name, podsOnNode, { nodeSelector: { 'settle-pool': name }, deleteDelay: '1s' });
  await until(
    `${podsOnNode} pods Running on ${name}`,
    120_000,
    async () =>
      (await a.core.listNamespacedPod({ namespace, fieldSelector: `spec.nodeName=${name},status.phase=Running` })).items
        .length === podsOnNode,
    500,
  );
  const volumes = Array.from({ length: volumesOfNode }, (_, i) => `${name}-pv-${i + 1}`);
  for (const pv of volumes) await attachVolume(a, pv, name);
  const groups = Array.from(
    { length: groupsOfNode },
    (_, i) => w.clusterGroups[(groupOffset + i * 17) % w.clusterGroups.length]!,
  );
  for (const g of groups) g.targets.set(instanceId, 'healthy');
  return { name, instanceId, volumes, groups };
}

/** Other teams' Services (ClusterIP, two ports, a few labels), in a namespace of their own: a cluster this size has thousands. */
export async function addServices(w: World, count: number): Promise<void> {
  const a = w.env.admin;
  const others = 'settle-others';
  await ensureNamespace(a, others);
  let next = 0;
  const create = async () => {
    for (let i = next++; i < count; i = next++) {
      const name = `team${i % 40}-svc${i}`;
      await a.core.createNamespacedService({
        namespace: others,
        body: {
          metadata: {
            name,
            labels: { app: name, team: `team${i % 40}`, 'app.kubernetes.io/managed-by': 'Helm' },
            annotations: { 'meta.helm.sh/release-name': `team${i % 40}` },
          },
          spec: {
            selector: { app: name },
            ports: [
              { name: 'http', port: 80, targetPort: 8080 },
              { name: 'metrics', port: 9090, targetPort: 9090 },
            ],
          },
        },
      });
    }
  };
  await Promise.all(Array.from({ length: 16 }, create));
}
