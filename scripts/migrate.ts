// `migrate --from <old group> --to <new group>`: seed 002's self-managed rolling upgrade and
// seed 004's manual steps as one command. Plan first; approved, it waits for the new group's
// Ready nodes, marks every old node (our PreferNoSchedule taint, or a cordon with --cordon-all:
// owned marks whose lease it renews, so the reconciler takes them back if it dies), lets the
// batch pods on them finish, then shrinks the old group --max-unavailable instances at a time
// (TerminateInstanceInAutoScalingGroup, decrementing) so the terminate hook drains each node,
// stops on the first drain that times out, and leaves the old group at zero. Each step decides
// from what the cluster and Auto Scaling say when it runs: the new group's Ready nodes are
// counted again before every batch (an hour of batch pods is long enough to lose them), and
// Ctrl-C at any wait changes nothing more (the old group's MinSize included).
import {
  DescribeAutoScalingGroupsCommand,
  TerminateInstanceInAutoScalingGroupCommand,
  UpdateAutoScalingGroupCommand,
  type AutoScalingClient,
} from '@aws-sdk/client-auto-scaling';
import type { CoreV1Api } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { reportingComponent } from '../lambda/adapters/kubernetes/object-codecs.js';
import type { EventRecorder } from '../lambda/cluster/ports/event-recorder.js';
import type { NodeGateway } from '../lambda/cluster/ports/node-gateway.js';
import type { NodeReader } from '../lambda/adapters/kubernetes/node-reader.js';
import {
  describeGroups,
  liveInstances,
  servingDeployment,
  type MigratePlan,
  type MigrateRequest,
} from './migrate-plan.js';
import { awaitEarlierMigration, markOldNodes, othersOn, takeBackMarks, type MarkDeps } from './migrate-marks.js';
import { currentDrains } from './upgrade.js';

export interface MigrateDeps {
  readonly autoScaling: AutoScalingClient;
  readonly cluster: Pick<NodeReader, 'getNode'> &
    Pick<NodeGateway, 'markMigrating' | 'unmarkMigrating'> &
    EventRecorder;
  readonly core: CoreV1Api;
  /** instance id -> node name, for the instances whose node is found. */
  readonly nodesOf: (instanceIds: readonly string[]) => Promise<ReadonlyMap<string, string>>;
  readonly out: (line: string) => void;
  readonly showPlan: (plan: MigratePlan) => void;
  readonly confirm?: ((plan: MigratePlan) => Promise<boolean>) | undefined;
  readonly pollMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly interrupted?: () => boolean;
}

export interface MigrateResult {
  readonly exitCode: number;
  readonly status: 'refused' | 'planned' | 'migrated' | 'stopped' | 'interrupted';
  readonly reason?: string | undefined;
  readonly plan?: MigratePlan | undefined;
  /** Old instances terminated, in order. */
  readonly terminated?: readonly string[];
}

const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Pods owned by a Job, not finished, on these nodes: `namespace/name on node`. */
async function batchPodsOn(core: CoreV1Api, nodes: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const node of nodes) {
    const pods = (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items;
    for (const p of pods) {
      const job = p.metadata?.ownerReferences?.some((o) => o.controller && o.kind === 'Job');
      if (job && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed')
        found.push(`${p.metadata?.namespace}/${p.metadata?.name} on ${node}`);
    }
  }
  return found;
}

async function readyCount(deps: MigrateDeps, group: string): Promise<number> {
  const { AutoScalingGroups } = await deps.autoScaling.send(
    new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group] }),
  );
  const names = [...(await deps.nodesOf(liveInstances(AutoScalingGroups?.[0] ?? {}))).values()];
  const nodes = await Promise.all(names.map((n) => deps.cluster.getNode(n)));
  return nodes.filter((n) => n?.ready === true).length;
}

async function planMigration(
  request: MigrateRequest,
  deps: MigrateDeps,
): Promise<{ plan: MigratePlan; oldNodes: ReadonlyMap<string, string> } | MigrateResult> {
  const groups = await describeGroups(deps.autoScaling, request);
  if (typeof groups === 'string') return { exitCode: 2, status: 'refused', reason: groups };
  const served = await servingDeployment(deps.autoScaling, request);
  if ('refused' in served) return { exitCode: 3, status: 'refused', reason: served.refused };
  const oldInstances = liveInstances(groups.from);
  const oldNodes = await deps.nodesOf(oldInstances);
  const plan: MigratePlan = {
    from: request.from,
    to: request.to,
    region: request.region,
    deployment: served.deployment,
    oldInstances,
    oldNodes: [...oldNodes.values()],
    newReady: await readyCount(deps, request.to),
    minReady: request.minReady ?? oldNodes.size,
    mark: request.cordonAll ? 'cordon' : 'taint',
    batchPods: await batchPodsOn(deps.core, [...oldNodes.values()]),
    maxUnavailable: request.maxUnavailable,
    oldMinSize: groups.from.MinSize ?? 0,
  };
  deps.showPlan(plan);
  return { plan, oldNodes };
}

export async function runMigrate(request: MigrateRequest, deps: MigrateDeps): Promise<MigrateResult> {
  const result = await migrate(request, deps);
  if (result.status === 'interrupted')
    deps.out(
      `interrupted: nothing more is changed (${result.terminated?.length ?? 0} instance(s) of ${request.from} terminated before; their drains go on through the hook)`,
    );
  return result;
}

async function migrate(request: MigrateRequest, deps: MigrateDeps): Promise<MigrateResult> {
  const planned = await planMigration(request, deps);
  if ('exitCode' in planned) {
    // Bad usage (exit 2) is said once, by the command; a refusal here.
    if (planned.exitCode !== 2) deps.out(`refusing: ${planned.reason}`);
    return planned;
  }
  const { plan, oldNodes } = planned;
  if (!request.approve && !(deps.confirm ? await deps.confirm(plan) : false)) {
    deps.out(`nothing was changed: ${deps.confirm ? 'not confirmed' : 'run again with --approve to migrate'}`);
    return { exitCode: 0, status: 'planned', plan };
  }
  const waited = await waitFor(deps, request.readyTimeoutSeconds, async () => {
    const ready = await readyCount(deps, request.to);
    return {
      done: ready >= plan.minReady,
      line: `waiting for ${plan.minReady} Ready node(s) in ${request.to}: ${ready}`,
    };
  });
  if (waited !== 'done')
    return {
      exitCode: waited === 'interrupted' ? 130 : 1,
      status: waited === 'interrupted' ? 'interrupted' : 'stopped',
      reason: `${request.to} has not ${plan.minReady} Ready node(s)`,
      plan,
    };
  return { ...(await moveOff(request, deps, plan, oldNodes)), plan };
}

/**
 * Marks the old nodes (once another migration's marks on them have no live owner), lets the
 * batch pods on them finish, shrinks the old group; its marks taken back whatever the end.
 */
async function moveOff(
  request: MigrateRequest,
  deps: MigrateDeps,
  plan: MigratePlan,
  oldNodes: ReadonlyMap<string, string>,
): Promise<MigrateResult> {
  const id = `m-${Math.floor(Date.now() / 1000)}-${randomBytes(2).toString('hex')}`;
  const earlier = await awaitEarlierMigration(id, [...oldNodes.values()], {
    ...deps,
    sleep: deps.sleep ?? sleepMs,
    pollMs: deps.pollMs ?? 5_000,
  });
  if (earlier === 'interrupted') return { exitCode: 130, status: 'interrupted', reason: 'interrupted' };
  if (typeof earlier === 'object' && 'refused' in earlier) {
    deps.out(`refusing: ${earlier.refused}`);
    return { exitCode: 3, status: 'refused', reason: earlier.refused };
  }
  const takenOver = typeof earlier === 'object' ? earlier.takenOver : [];
  const markDeps: MarkDeps = { cluster: deps.cluster, out: deps.out, owner: plan.deployment };
  const lease = await markOldNodes(request, id, [...oldNodes.values()], markDeps);
  try {
    // Two runs that looked at the same moment: the one whose marks were overwritten leaves the group to the other.
    const overwritten = [...(await othersOn(deps, id, [...oldNodes.values()])).values()].filter(
      (r) => !takenOver.includes(r.id),
    );
    if (overwritten.length > 0) {
      const by = [...new Set(overwritten.map((r) => r.id))].join(', ');
      const reason = `migration ${by} marked ${overwritten.length} old node(s) at the same time as this run: it moves the group`;
      deps.out(`refusing: ${reason}`);
      return { exitCode: 3, status: 'refused', reason, terminated: [] };
    }
    const batch = await waitFor(deps, request.batchTimeoutSeconds, async () => {
      const left = await batchPodsOn(deps.core, [...oldNodes.values()]);
      return {
        done: left.length === 0,
        line:
          left.length === 0
            ? 'no batch pod left on the old nodes'
            : `waiting for ${left.length} batch pod(s) to finish: ${left.join(', ')}`,
      };
    });
    // Timed out, the drains still wait for the batch pods (their own rule); interrupted, nothing moves.
    if (batch === 'interrupted') return { exitCode: 130, status: 'interrupted', reason: 'interrupted', terminated: [] };
    return await shrink(request, deps, oldNodes, plan.minReady);
  } finally {
    lease.stop();
    await takeBackMarks(id, [...oldNodes.values()], markDeps);
  }
}

type Waited = 'done' | 'timed-out' | 'interrupted';

/** Polls until done, printing each new line; bounded by seconds. */
async function waitFor(
  deps: MigrateDeps,
  seconds: number,
  probe: () => Promise<{ done: boolean; line: string }>,
): Promise<Waited> {
  const sleep = deps.sleep ?? sleepMs;
  const deadline = Date.now() + seconds * 1000;
  let last = '';
  for (;;) {
    if (deps.interrupted?.()) return 'interrupted';
    const { done, line } = await probe();
    if (line !== '' && line !== last) deps.out((last = line));
    if (done) return 'done';
    if (Date.now() >= deadline) {
      deps.out(`gave up waiting after ${seconds} s`);
      return 'timed-out';
    }
    await sleep(deps.pollMs ?? 5_000);
  }
}

/**
 * The new group's Ready nodes as they are now, before a batch: at least minReady, or the reason to
 * stop (waited --ready-timeout for them, or Ctrl-C) with nothing more terminated.
 */
async function newCapacity(
  request: MigrateRequest,
  deps: MigrateDeps,
  minReady: number,
): Promise<Pick<MigrateResult, 'exitCode' | 'status' | 'reason'> | undefined> {
  const waited = await waitFor(deps, request.readyTimeoutSeconds, async () => {
    const ready = await readyCount(deps, request.to);
    // Silent while the capacity holds; a line only when a batch has to wait for it.
    return {
      done: ready >= minReady,
      line:
        ready >= minReady
          ? ''
          : `waiting for ${minReady} Ready node(s) in ${request.to} before the next batch: ${ready}`,
    };
  });
  if (waited === 'done') return undefined;
  if (waited === 'interrupted') return { exitCode: 130, status: 'interrupted', reason: 'interrupted' };
  const reason = `${request.to} has fewer than ${minReady} Ready node(s): stopped before the next batch, the rest of ${request.from} stays`;
  deps.out(reason);
  return { exitCode: 1, status: 'stopped', reason };
}

/** Terminates the old instances a batch at a time, each batch drained before the next. */
async function shrink(
  request: MigrateRequest,
  deps: MigrateDeps,
  oldNodes: ReadonlyMap<string, string>,
  minReady: number,
): Promise<MigrateResult> {
  const { autoScaling, out } = deps;
  const describe = async () =>
    (await autoScaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [request.from] })))
      .AutoScalingGroups?.[0];
  const startedMs = Date.now();
  const terminated: string[] = [];
  let g = await describe();
  const total = liveInstances(g ?? {}).length;
  while (liveInstances(g ?? {}).length > 0) {
    const short = await newCapacity(request, deps, minReady);
    if (short) return { ...short, terminated };
    g = await describe();
    const live = liveInstances(g ?? {});
    if (live.length === 0) break;
    // Auto Scaling refuses to decrement below MinSize: the old group goes to zero (once, before its first batch).
    if ((g?.MinSize ?? 0) > 0) {
      await autoScaling.send(new UpdateAutoScalingGroupCommand({ AutoScalingGroupName: request.from, MinSize: 0 }));
      out(`set the min size of ${request.from} from ${g?.MinSize} to 0`);
    }
    const batch = live.slice(0, request.maxUnavailable);
    for (const instanceId of batch) {
      await autoScaling.send(
        new TerminateInstanceInAutoScalingGroupCommand({
          InstanceId: instanceId,
          ShouldDecrementDesiredCapacity: true,
        }),
      );
      terminated.push(instanceId);
      out(
        `[${terminated.length}/${total}] terminating ${instanceId} (${oldNodes.get(instanceId) ?? 'no node'}): its terminate hook drains it`,
      );
    }
    const stopped = await followBatch(
      request,
      deps,
      batch.map((i) => oldNodes.get(i) ?? i),
      startedMs,
      async () => {
        const now = await describe();
        return batch.every(
          (i) => !(now?.Instances ?? []).some((x) => x.InstanceId === i && x.LifecycleState !== 'Terminated'),
        );
      },
    );
    if (stopped)
      return {
        exitCode: stopped === 'interrupted' ? 130 : 1,
        status: stopped === 'interrupted' ? 'interrupted' : 'stopped',
        reason: stopped,
        terminated,
      };
    g = await describe();
  }
  out(
    `${request.from} is at zero (desired ${g?.DesiredCapacity ?? 0}, ${g?.Instances?.length ?? 0} instance(s)): every old node drained; delete the group in your IaC`,
  );
  return { exitCode: 0, status: 'migrated', terminated };
}

/** Waits for the batch to leave; the reason to stop instead (a drain timed out, Ctrl-C). */
async function followBatch(
  request: MigrateRequest,
  deps: MigrateDeps,
  nodes: readonly string[],
  sinceMs: number,
  gone: () => Promise<boolean>,
): Promise<string | undefined> {
  const sleep = deps.sleep ?? sleepMs;
  let last = '';
  for (;;) {
    if (deps.interrupted?.()) return 'interrupted';
    const events = (
      await deps.core.listEventForAllNamespaces({ fieldSelector: `source=${reportingComponent}` })
    ).items.filter((e) => e.involvedObject.kind === 'Node' && nodes.includes(e.involvedObject.name ?? ''));
    const timedOut = events.find(
      (e) => e.reason === 'DrainTimedOut' && new Date(e.lastTimestamp ?? e.eventTime ?? 0).getTime() >= sinceMs - 1000,
    );
    if (timedOut) {
      const reason = `the drain of ${timedOut.involvedObject.name} timed out (the DrainsTimedOut alarm): ${timedOut.message ?? ''}; stopped, the rest of ${request.from} stays`;
      deps.out(reason);
      return reason;
    }
    const line = currentDrains(events, sinceMs).join('\n    ');
    if (line !== '' && line !== last) deps.out(`    ${(last = line)}`);
    if (await gone()) return undefined;
    await sleep(deps.pollMs ?? 5_000);
  }
}
