// The cluster a wave or a rotation runs in: kwok nodes of EKS size (bench/fleet.ts's stand-in
// node: EKS labels, 44 images, managedFields; conditions written by kwok, which keeps them Ready
// and runs their pods), each an instance of the served group known to the local EC2 and Auto
// Scaling, and 10 Deployments spread over every node (topology spread on the hostname,
// ScheduleAnyway) under budgets of minAvailable 80 %, pods shutting down in 1 to 5 s. And the
// yardstick: one node drained alone on the same plane.
import type { V1Node } from '@kubernetes/client-node';
import { groupName, type Environment } from '../demo/environment.js';
import {
  byDrainer,
  createDeployment,
  createPdb,
  ensureNamespace,
  readAudit,
  sleep,
  until,
} from '../test/cluster/kube.js';
import { fillerNode, round } from './fleet.js';
import { requestsByKind } from './wire.js';

/** Pods shut down in 1 to 5 s. */
export const shutdownDelaysSeconds = [1, 2, 3, 4, 5];
/** Ten Deployments, each spread over every node; budgets let a fifth of each go at a time. */
export const apps = Array.from({ length: 10 }, (_, i) => `app-${i + 1}`);
export const budgetShare = 0.2;
export const namespace = 'wave';
const zones = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];

export interface FleetNode {
  readonly name: string;
  readonly instanceId: string;
  /** Its index: the stand-in's address and name come from it. */
  readonly index: number;
}

export interface NodeShape {
  /** Labels beyond the stand-in's (the target groups' node selectors, a version). */
  readonly labels?: (index: number) => Record<string, string>;
  /** The launch template version the instance was launched from (the local Auto Scaling's). */
  readonly version?: string;
}

/** An EKS-sized worker (bench/fleet.ts's stand-in), but kwok's: it runs pods. */
export function waveNode(i: number, extraLabels: Record<string, string> = {}): { node: V1Node; instanceId: string } {
  const base = fillerNode(i, zones[i % zones.length]!);
  const { 'bench/filler': _filler, ...labels } = base.metadata!.labels!;
  const instanceId = base.spec!.providerID!.split('/').at(-1)!;
  // No conditions: kwok's node-initialize stage writes them (Ready), keeping nodeInfo, images and addresses.
  const { conditions: _conditions, ...status } = base.status!;
  return {
    instanceId,
    node: {
      metadata: {
        ...base.metadata,
        labels: { ...labels, ...extraLabels, 'eks.amazonaws.com/nodegroup': groupName },
        annotations: { ...base.metadata!.annotations, 'kwok.x-k8s.io/node': 'fake' },
      },
      spec: { providerID: base.spec!.providerID },
      status,
    },
  };
}

/** Nodes at these indexes, 16 created at a time, each an InService instance of the group. */
export async function createNodes(env: Environment, indexes: readonly number[], shape: NodeShape = {}) {
  const nodes: FleetNode[] = [];
  let next = 0;
  const create = async () => {
    for (let k = next++; k < indexes.length; k = next++) {
      const index = indexes[k]!;
      const { node, instanceId } = waveNode(index, shape.labels?.(index));
      await env.admin.core.createNode({ body: node });
      env.aws.instances.set(instanceId, {
        privateDnsName: node.metadata!.name!,
        group: groupName,
        lifecycleState: 'InService',
        ...(shape.version !== undefined ? { version: shape.version } : {}),
      });
      nodes[k] = { name: node.metadata!.name!, instanceId, index };
    }
  };
  await Promise.all(Array.from({ length: 16 }, create));
  return nodes;
}

/** Until these nodes are Ready and untainted (kwok initialised them, the controller took the not-ready taint off). */
export async function untilReady(env: Environment, names: ReadonlySet<string>, timeoutMs = 600_000): Promise<void> {
  await until(
    `${names.size} nodes Ready and untainted`,
    timeoutMs,
    async () => {
      const list = (await env.admin.core.listNode({ labelSelector: `eks.amazonaws.com/nodegroup=${groupName}` })).items;
      const ready = list.filter(
        (n) =>
          names.has(n.metadata!.name!) &&
          n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
          (n.spec?.taints ?? []).length === 0,
      );
      return ready.length === names.size;
    },
    2_000,
  );
}

/** The Deployments and their budgets: `replicas` each, spread over every node. */
export async function createWorkloads(env: Environment, replicas: number): Promise<void> {
  const a = env.admin;
  await ensureNamespace(a, namespace);
  for (const [k, app] of apps.entries()) {
    await createDeployment(a, namespace, app, replicas, {
      deleteDelay: `${shutdownDelaysSeconds[k % shutdownDelaysSeconds.length]}s`,
      spreadOverNodes: true,
    });
    await createPdb(a, namespace, app, app, replicas - Math.ceil(replicas * budgetShare));
  }
}

/** Every replica Running and every budget at full health. */
export async function settled(env: Environment, replicas: number, say: (line: string) => void): Promise<void> {
  const a = env.admin;
  const total = replicas * apps.length;
  await until(
    `${total} replicas Running, budgets at full health`,
    900_000,
    async () => {
      const up = (await running(env)).length;
      const budgets = (await a.policy.listNamespacedPodDisruptionBudget({ namespace })).items;
      const healthy = budgets.filter(
        (b) => b.status?.currentHealthy === replicas && b.status?.observedGeneration === b.metadata?.generation,
      ).length;
      if (up < total) say(`${up} of ${total} replicas Running`);
      return up === total && healthy === apps.length;
    },
    3_000,
  );
}

export async function running(env: Environment) {
  return (await env.admin.core.listNamespacedPod({ namespace })).items.filter(
    (p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp,
  );
}

/** The bytes of one node's JSON as the API server answers it. */
export async function nodeJsonBytes(env: Environment, name: string): Promise<number> {
  return Buffer.byteLength(JSON.stringify(await env.admin.core.readNode({ name })));
}

/** The node, among `candidates`, whose pod count is nearest the average: a like-for-like yardstick. */
export async function averageNode(
  env: Environment,
  candidates: readonly FleetNode[],
  podsPerNode: number,
): Promise<FleetNode[]> {
  const podsOn = new Map<string, number>();
  for (const p of await running(env)) podsOn.set(p.spec?.nodeName ?? '', (podsOn.get(p.spec?.nodeName ?? '') ?? 0) + 1);
  const off = (n: FleetNode) => Math.abs((podsOn.get(n.name) ?? 0) - podsPerNode);
  return [...candidates].sort((x, y) => off(x) - off(y));
}

/** One termination alone, on the same plane: the yardstick for a wave's per-node cost. */
export async function singleDrain(
  env: Environment,
  n: FleetNode,
  replicas: number,
  say: (line: string) => void,
  /** Told once the instance is gone (its target groups forget it, as ELB does). */
  gone: (n: FleetNode) => void = () => {},
) {
  const pods = (await running(env)).filter((p) => p.spec?.nodeName === n.name).length;
  await sleep(500);
  const answers = env.proxy!.counts.answers.length;
  const started = Date.now();
  const run = await env.terminate(n.instanceId);
  const done = env.aws.calls.find(
    (c) =>
      c.action === 'CompleteLifecycleAction' && c.outcome === 'ok' && c.params['LifecycleActionToken'] === run.token,
  );
  if (done === undefined)
    throw new Error(`the single drain of ${n.name} did not complete its action: ${JSON.stringify(run.result)}`);
  await sleep(1_000);
  const requests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= started - 50);
  const single = {
    node: n.name,
    pods,
    requests: requests.length,
    responseBytes: env.proxy!.counts.answers.slice(answers).reduce((s, x) => s + x.bytes, 0),
    seconds: round((done.atMs - run.notifiedMs) / 1000),
    awsCalls: env.aws.calls.filter((c) => c.atMs >= started).length,
    requestsByKind: requestsByKind(requests),
  };
  say(
    `single drain of ${n.name} (${pods} pods): ${single.requests} requests, ${single.responseBytes} bytes, ${single.seconds} s`,
  );
  // Its instance terminates (as in AWS, a minute after CONTINUE): the group forgets it, the node goes.
  env.aws.instances.delete(n.instanceId);
  gone(n);
  await env.admin.core.deleteNode({ name: n.name });
  await settled(env, replicas, say);
  return single;
}
