// The settle section of `npm run bench` (issue 27): what one termination's settle phase costs
// (the wait for the node's volumes to detach and for the load balancers to let it go) on a
// 20-node cluster and, on the same plane, on a 2,000-node one with 5,000 VolumeAttachments,
// 60 target groups of the cluster (2,000 registered instances each) and 800 other teams' groups
// in the account (bench/settle-world.ts). The drained node is in 3 of the cluster's groups,
// which drain it for a few seconds once it carries the exclusion label; its two volumes detach
// a few seconds after its pods left. This tree's handler drains one node at each size; with
// --handler-tree, that tree's handler drains one more at each size, on the same plane and in
// the same account, in a container of its own. ELB calls and bytes come from the stand-in,
// Kubernetes requests from the audit log, bytes from the counting proxy.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startEnvironment, type EnvironmentOptions } from '../demo/environment.js';
import { createRuntime } from '../lambda/runtime.js';
import { startElbStub } from '../test/fakes/elb-stub.js';
import { byDrainer, detachVolume, podsOn, readAudit, sleep, until } from '../test/cluster/kube.js';
import { round } from './fleet.js';
import {
  addServices,
  attachUpTo,
  clusterGroupCount,
  createWorld,
  drainedNode,
  growTo,
  namespace,
  otherGroupCount,
  registerInstances,
  type DrainedNode,
  type World,
} from './settle-world.js';
import {
  bucket,
  bytesByPath,
  refusedByBucket,
  requestsByAction,
  type Handler,
  type SettleRun,
} from './settle-report.js';
import { requestsByKind } from './wire.js';

export interface SettleOptions {
  readonly say: (line: string) => void;
  readonly smallNodes: number;
  readonly largeNodes: number;
  /** VolumeAttachments of other nodes at the large size (the small one has as many per node). */
  readonly attachments: number;
  /** Then other teams' Services added to the large cluster, and this tree's handler drains one more node (0: not). */
  readonly services: number;
  /** Another tree whose handler (its lambda/runtime.ts) drains a node beside this one's. */
  readonly handlerTree?: string | undefined;
}

/** How long the node's target groups drain it after the exclusion label, and when its volumes detach after its pods left. */
const targetDrainMs = 6_000;
const detachAfterMs = 3_000;
const settleResource = new Set(['volumeattachments', 'services', 'targetgroupbindings', 'persistentvolumes']);
const settlePath = /\/(volumeattachments|services|targetgroupbindings|persistentvolumes)(\/|\?|$)/;
type Build = NonNullable<EnvironmentOptions['createHandler']>;

export async function runSettleSection(o: SettleOptions): Promise<Record<string, unknown>> {
  const say = (line: string) => o.say(`settle: ${line}`);
  const previous = o.handlerTree
    ? ((await import(pathToFileURL(join(o.handlerTree, 'lambda', 'runtime.ts')).href)) as { createRuntime: Build })
        .createRuntime
    : undefined;
  const elb = await startElbStub();
  const env = await startEnvironment({
    log: say,
    // Only when the load balancers cannot be read: a fallback this long shows in the settle time.
    loadBalancerDelaySeconds: 30,
    drainTimeoutSeconds: 600,
    manyNodesWithoutKubelet: true,
    countBytes: true,
    loadBalancersUrl: elb.url,
    createHandler: (v) => (v['BENCH_HANDLER'] === 'previous' && previous ? previous(v) : createRuntime(v)),
  });
  try {
    const w = await createWorld(env, elb);
    // ELB's answers take tens of milliseconds: calls in flight and the bucket are counted at that pace.
    elb.delayMs = 30;
    const handlers: Handler[] = previous ? ['current', 'previous'] : ['current'];
    const runs: SettleRun[] = [];
    runs.push(
      ...(await atSize(
        w,
        'small',
        o.smallNodes,
        o,
        handlers.map((h) => ({ handler: h })),
        say,
      )),
    );
    // At the large size: each handler, then each again under ELB's bucket, then this tree's with many Services.
    const variants: Variant[] = [
      ...handlers.map((h) => ({ handler: h })),
      ...handlers.map((h) => ({ handler: h, throttled: true })),
      ...(o.services > 0 ? [{ handler: 'current' as const, services: o.services }] : []),
    ];
    runs.push(...(await atSize(w, 'large', o.largeNodes, o, variants, say)));
    const pick = (h: Handler, size: 'small' | 'large') =>
      runs.find((r) => r.handler === h && r.size === size && !r.throttled && r.addedServices === 0);
    const [smallNow, largeNow, largeBefore] = [
      pick('current', 'small'),
      pick('current', 'large'),
      pick('previous', 'large'),
    ];
    return {
      targetGroups: {
        cluster: clusterGroupCount,
        otherTeams: otherGroupCount,
        ofDrainedNode: 3,
        drainSecondsAfterExclusion: targetDrainMs / 1000,
        answerDelayMs: 30,
      },
      loadBalancerDelaySeconds: 30,
      volumes: {
        ofDrainedNode: 2,
        detachSecondsAfterPodsLeft: detachAfterMs / 1000,
        ofOtherNodesAtLargeSize: o.attachments,
      },
      elbBucket: bucket,
      runs,
      bytesRatio: round(largeNow!.kubernetes.settleBytes / smallNow!.kubernetes.settleBytes),
      elbBytesRatio: round(largeNow!.elb.bytes / smallNow!.elb.bytes),
      ...(largeBefore
        ? {
            previousOverCurrent: {
              elbCalls: round(largeBefore.elb.calls / largeNow!.elb.calls),
              elbBytes: round(largeBefore.elb.bytes / largeNow!.elb.bytes),
              settleRequests: round(largeBefore.kubernetes.settleRequests / largeNow!.kubernetes.settleRequests),
              settleBytes: round(largeBefore.kubernetes.settleBytes / largeNow!.kubernetes.settleBytes),
            },
          }
        : {}),
    };
  } finally {
    await env.stop();
    await elb.close();
  }
}

interface Variant {
  readonly handler: Handler;
  /** Under ELB's bucket (the stand-in refuses what it would). */
  readonly throttled?: boolean;
  /** Other teams' Services added first. */
  readonly services?: number;
}

/** The cluster grown to `total` nodes and its attachments to its share, then one termination per variant, each of a node of its own. */
async function atSize(
  w: World,
  size: 'small' | 'large',
  total: number,
  o: SettleOptions,
  variants: readonly Variant[],
  say: (line: string) => void,
): Promise<SettleRun[]> {
  const nodes = await Promise.all(
    variants.map((v, i) => drainedNode(w, `settle-${size}-${i + 1}-${v.handler}`, i * 5 + (size === 'large' ? 1 : 0))),
  );
  const count = await growTo(w, total, say);
  await attachUpTo(w, Math.round((o.attachments * total) / o.largeNodes));
  registerInstances(w, total - nodes.length);
  for (const n of nodes) for (const g of n.groups) g.targets.set(n.instanceId, 'healthy');
  say(
    `${count} nodes, ${w.attachments} VolumeAttachments of other nodes, ${clusterGroupCount} target groups of the cluster with ${total} instances each`,
  );
  const runs: SettleRun[] = [];
  for (const [i, v] of variants.entries()) {
    if (v.services) await addServices(w, v.services);
    w.elb.bucket = v.throttled ? { ...bucket } : undefined;
    runs.push({
      ...(await measure(w, nodes[i]!, v.handler, say)),
      size,
      throttled: v.throttled === true,
      addedServices: v.services ?? 0,
    });
    w.elb.bucket = undefined;
    await gone(w, nodes[i]!);
  }
  return runs;
}

/** One termination of `n` by one handler, in a container of its own (nothing cached from another). */
async function measure(
  w: World,
  n: DrainedNode,
  handler: Handler,
  say: (line: string) => void,
): Promise<Omit<SettleRun, 'size' | 'throttled' | 'addedServices'>> {
  const { env, elb } = w;
  const logs: Record<string, unknown>[] = [];
  env.onHandlerLog((l) => void (l['node'] === n.name && logs.push(l)));
  await sleep(500);
  const [answers, calls, bytes, started] = [env.proxy!.counts.answers.length, elb.calls.length, elb.bytes, Date.now()];
  const letGo = Promise.all([targetsDrain(w, n), volumesDetach(w, n)]);
  const run = await env.terminate(n.instanceId, { settings: { BENCH_HANDLER: handler, BENCH_TERMINATION: n.name } });
  const [goneMs, detachedMs] = await letGo;
  await sleep(1_000);
  const done = env.aws.calls.find(
    (c) =>
      c.action === 'CompleteLifecycleAction' && c.outcome === 'ok' && c.params['LifecycleActionToken'] === run.token,
  );
  const drainedAt = logs.find((l) => l['message'] === 'node drained');
  const settled = logs.find((l) => String(l['message']).startsWith('settled'));
  if (done === undefined || drainedAt === undefined)
    throw new Error(`settle: ${handler} did not drain ${n.name}: ${JSON.stringify(run.result)}`);
  const services =
    ((await env.admin.core.listServiceForAllNamespaces({ limit: 1 })).metadata?.remainingItemCount ?? 0) + 1;
  const nodes = ((await env.admin.core.listNode({ limit: 1 })).metadata?.remainingItemCount ?? 0) + 1;
  const servicesListBytes = execFileSync(
    env.plane.kubectl,
    ['--kubeconfig', env.plane.adminKubeconfig, 'get', '--raw', '/api/v1/services'],
    { maxBuffer: 2 ** 30 },
  ).length;
  const requests = readAudit(env.plane, (e) => byDrainer(e) && e.receivedMs >= started - 50);
  const settleRequests = requests.filter((e) => settleResource.has(e.resource));
  const wire = env.proxy!.counts.answers.slice(answers);
  const settleWire = wire.filter((x) => settlePath.test(x.path));
  const elbCalls = elb.calls.slice(calls);
  const result: Omit<SettleRun, 'size' | 'throttled' | 'addedServices'> = {
    handler,
    nodes,
    services,
    servicesListBytes,
    status: (run.result as { records?: { status?: string }[] }).records?.[0]?.status ?? 'unknown',
    settleSeconds: round((done.atMs - Date.parse(String(drainedAt['timestamp']))) / 1000),
    afterLetGoSeconds: round((done.atMs - Math.max(goneMs, detachedMs)) / 1000),
    elb: {
      calls: elbCalls.length,
      byAction: requestsByAction(elbCalls),
      bytes: elb.bytes - bytes,
      throttled: elbCalls.filter((c) => c.throttled).length,
      refusedByBucket: refusedByBucket(elbCalls.map((c) => c.atMs)),
    },
    kubernetes: {
      settleRequests: settleRequests.length,
      settleRequestsByKind: requestsByKind(settleRequests),
      settleBytes: settleWire.reduce((s, x) => s + x.bytes, 0),
      settleBytesByKind: bytesByPath(settleWire),
      terminationRequests: requests.length,
      terminationBytes: wire.reduce((s, x) => s + x.bytes, 0),
    },
    handlerSaid: {
      settledSecondsSinceDrain: settled?.['secondsSinceDrain'],
      loadBalancerCalls: settled?.['loadBalancerCalls'],
      warnings: logs.filter((l) => l['level'] === 'WARN' || l['level'] === 'ERROR').map((l) => String(l['message'])),
    },
  };
  say(
    `${handler} at ${nodes} nodes: ${result.status}, settle ${result.settleSeconds} s; ELB ${result.elb.calls} calls ${result.elb.bytes} B; Kubernetes (settle) ${result.kubernetes.settleRequests} requests ${result.kubernetes.settleBytes} B`,
  );
  return result;
}

/** Plays the AWS Load Balancer Controller and ELB: once the node is excluded, its groups drain it for a while, then let it go. */
async function targetsDrain(w: World, n: DrainedNode): Promise<number> {
  await until(`${n.name} excluded from load balancers`, 300_000, async () => {
    const labels = (await w.env.admin.core.readNode({ name: n.name })).metadata?.labels ?? {};
    return 'node.kubernetes.io/exclude-from-external-load-balancers' in labels;
  });
  for (const g of n.groups) g.targets.set(n.instanceId, 'draining');
  await sleep(targetDrainMs);
  for (const g of n.groups) g.targets.delete(n.instanceId);
  return Date.now();
}

/** Plays the attach/detach controller and the CSI driver: the volumes detach a few seconds after the pods left. */
async function volumesDetach(w: World, n: DrainedNode): Promise<number> {
  const a = w.env.admin;
  await until(
    `the pods left ${n.name}`,
    300_000,
    async () => (await podsOn(a, n.name)).every((p) => p.metadata?.namespace !== namespace),
    250,
  );
  await sleep(detachAfterMs);
  for (const pv of n.volumes) await detachVolume(a, pv, n.name);
  return Date.now();
}

/** Its instance terminates (a minute after CONTINUE, in AWS): the group forgets it, the node and its workload go. */
async function gone(w: World, n: DrainedNode): Promise<void> {
  w.env.aws.instances.delete(n.instanceId);
  w.env.admin.kubectl('delete', 'deployment', '-n', namespace, n.name, '--wait=false');
  await w.env.admin.core.deleteNode({ name: n.name });
}
