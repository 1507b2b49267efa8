// One reconcile pass: every mark of this deployment converges to what its owner says, even
// when the event that should have taken it back was lost. One label-selector list finds the
// marked nodes; Auto Scaling says which owners are alive (one DescribeAutoScalingInstances per
// 50 marked instances, one DescribeInstanceRefreshes per group with refresh marks, one
// DescribeAutoScalingGroups for the groups' tags); what no live owner holds is taken back,
// conditionally on the node as read, with an Event; a drain whose hand-off chain was lost is
// handed on again. With nothing marked, a pass costs one list and one describe.
import type { ClusterGateway } from '../cluster/ports/cluster-gateway.js';
import type { NodeInfo, DrainRecord } from '../cluster/model.js';
import { drainMarksRemoved } from '../cluster/events/mark-events.js';
import { drainResumed } from '../cluster/events/termination-events.js';
import { refreshLabel } from '../cluster/marks/mark-keys.js';

import { handOffMessage } from '../inbound/lifecycle-message.js';
import { describeRemoved } from '../launch/give-back.js';
import { activeRefreshStatuses } from '../refresh/refresh-event.js';
import { removeRefreshMarks } from '../refresh/outdated-marks.js';
import { boundRefresh, isStaleStrategyTag } from '../refresh/strategy-tag.js';
import { refreshStrategyTag } from '../shared/group-tags.js';
import type {
  AutoScalingInstances,
  HandOffs,
  InstanceRepairs,
  InstanceState,
  LifecycleActions,
} from '../shared/aws-ports.js';
import type { Clock } from '../shared/clock.js';
import type { Config } from '../shared/config.js';
import { asError, type Log } from '../shared/log.js';
import { staleAfterSeconds } from '../shared/resume-window.js';
import { parseClaim } from '../termination/claim.js';
import { takeBackDeferral } from '../termination-policy/deferral.js';
import { takeBackOutOfService } from '../termination/instance-terminated.js';
import { reconcileMigration } from './migration-marks.js';
import { drainOwner, type DrainOwner } from './owners.js';
import { actionIdOfInstance } from '../cluster/marks/action-id.js';
import { instanceIdOf } from '../cluster/rules/provider-id.js';
import { reconcileRepair } from './repair-marks.js';

export interface ReconcileDeps {
  readonly cluster: ClusterGateway;
  readonly instances: AutoScalingInstances;
  readonly lifecycle: LifecycleActions;
  readonly handOffs: HandOffs | undefined;
  /** SetInstanceHealth, to take back our Unhealthy mark with its record; absent unless REPAIR is on. */
  readonly repairs?: Pick<InstanceRepairs, 'setHealthy'> | undefined;
  readonly config: Config;
  readonly clock: Clock;
  readonly log: Log;
}

export interface ReconcileReport {
  readonly markedNodes: number;
  readonly drainMarksRemoved: readonly string[];
  readonly refreshMarksRemoved: readonly string[];
  /** Nodes whose `migrate` marks were taken back (the command's lease was over). */
  readonly migrationMarksRemoved: readonly string[];
  readonly drainsResumed: readonly string[];
  readonly tagsRemoved: readonly string[];
  readonly repairMarksRemoved: readonly string[];
}

export async function reconcile(deps: ReconcileDeps): Promise<ReconcileReport> {
  const { cluster, instances, config } = deps;
  const marked = await cluster.listMarked(config.deploymentName);
  const ids = marked.flatMap((n) => instanceIdOf(n.providerId) ?? []);
  const states = ids.length > 0 ? await instances.describe(ids) : new Map<string, InstanceState>();
  const groups = await instances.describeGroups([...config.autoScalingGroupNames]);
  const statuses = await refreshStatuses(deps, marked, states, groups);
  const report = {
    markedNodes: marked.length,
    drainMarksRemoved: [] as string[],
    refreshMarksRemoved: [] as string[],
    drainsResumed: [] as string[],
    tagsRemoved: [] as string[],
    repairMarksRemoved: [] as string[],
    migrationMarksRemoved: [] as string[],
  };
  for (const node of marked) {
    const state = states.get(instanceIdOf(node.providerId) ?? '');
    try {
      if (node.drain !== undefined) await reconcileDrain(deps, node, node.drain, state, report);
      await reconcileRefresh(deps, node, state, statuses, report);
      if (await takeBackDeferral(deps.cluster, node, deps.clock.now(), config.terminationDeferralMaxSeconds))
        report.drainMarksRemoved.push(node.name);
      if (await takeBackOutOfService(deps, node)) report.drainMarksRemoved.push(node.name);
      if (node.repair !== undefined) await reconcileRepair(deps, node, node.repair, state, report);
      if (await reconcileMigration(deps, node)) report.migrationMarksRemoved.push(node.name);
    } catch (error) {
      deps.log.warn('could not reconcile the marks of a node; the next pass tries again', {
        node: node.name,
        error: asError(error),
      });
    }
  }
  for (const g of groups) {
    const tag = g.tags[refreshStrategyTag];
    // A group whose refreshes Auto Scaling would not describe keeps its tag: nothing on a guess.
    if (
      tag === undefined ||
      statuses.unasked.has(g.name) ||
      !isStaleStrategyTag(tag, activeOf(statuses.get(g.name)), deps.clock.now())
    )
      continue;
    await instances.removeTag(g.name, refreshStrategyTag);
    report.tagsRemoved.push(g.name);
  }
  return report;
}

/** Refresh statuses per group, for the refreshes our marks and tags name: one call per group. */
async function refreshStatuses(
  deps: ReconcileDeps,
  marked: readonly NodeInfo[],
  states: ReadonlyMap<string, InstanceState>,
  groups: readonly { name: string; tags: Readonly<Record<string, string>> }[],
) {
  const wanted = new Map<string, Set<string>>();
  const want = (group: string | undefined, id: string | undefined) => {
    if (group !== undefined && id !== undefined) wanted.set(group, (wanted.get(group) ?? new Set()).add(id));
  };
  for (const node of marked)
    want(node.refreshGroup ?? states.get(instanceIdOf(node.providerId) ?? '')?.group, node.labels[refreshLabel]);
  for (const g of groups) want(g.name, boundRefresh(g.tags[refreshStrategyTag] ?? ''));
  const statuses = Object.assign(new Map<string, ReadonlyMap<string, string>>(), { unasked: new Set<string>() });
  for (const [group, refreshIds] of wanted) {
    try {
      statuses.set(group, await deps.instances.refreshStatuses(group, [...refreshIds]));
    } catch (error) {
      statuses.unasked.add(group);
      // A group Auto Scaling refuses to describe (a name no group has, say) decides nothing:
      // its nodes' refresh marks stay until it can be asked, every other node is reconciled.
      deps.log.warn('could not ask Auto Scaling about the refreshes of a group; their marks stay for now', {
        group: group.slice(0, 255),
        error: asError(error),
      });
    }
  }
  return statuses;
}

const activeOf = (statuses: ReadonlyMap<string, string> | undefined) =>
  new Set([...(statuses ?? [])].filter(([, s]) => activeRefreshStatuses.has(s)).map(([id]) => id));

async function reconcileDrain(
  deps: ReconcileDeps,
  node: NodeInfo,
  record: DrainRecord,
  state: InstanceState | undefined,
  report: { drainMarksRemoved: string[]; drainsResumed: string[] },
) {
  // Lost once nothing was written for longer than a live chain ever goes without (resume-window.ts).
  const owner = drainOwner(record, state, deps.clock.now(), staleAfterSeconds(deps.config) * 1000);
  if (owner.kind === 'alive') return;
  if (owner.kind === 'stalled') {
    if (await resumeDrain(deps, node, record, owner)) report.drainsResumed.push(node.name);
    return;
  }
  if ((await deps.cluster.unmark(node, record)) !== 'patched') return;
  const removed = describeRemoved(record);
  deps.log.info('took back the marks of a drain whose owner is gone', { node: node.name, why: owner.why, removed });
  await deps.cluster.record(
    drainMarksRemoved(node, removed, `The reconciler found no owner for our drain's marks (${owner.why})`),
  );
  report.drainMarksRemoved.push(node.name);
}

/**
 * The lifecycle action still waits but no invocation carried the drain on: a record of the
 * resumed drain's own is written (dated now, so the next pass does not resume it twice) and a
 * hand-off that names the action by its instance is published. The resumed invocation
 * verifies it like any other.
 */
async function resumeDrain(
  deps: ReconcileDeps,
  node: NodeInfo,
  record: DrainRecord,
  { group, hook, idleMs }: Extract<DrainOwner, { kind: 'stalled' }>,
): Promise<boolean> {
  const instanceId = instanceIdOf(node.providerId)!;
  if (deps.handOffs === undefined) {
    deps.log.warn('a drain lost its hand-off chain, and there is no hand-off topic to resume it through', {
      node: node.name,
    });
    return false;
  }
  // The action must still be waiting on our hook: a heartbeat by instance id says so (and
  // gives the resumed chain the hook's whole timeout). Another hook's wait is not ours.
  const action = { autoScalingGroupName: group, lifecycleHookName: hook, instanceId };
  if ((await deps.lifecycle.heartbeat(action)) === 'no-active-action') {
    deps.log.info(
      'a drain record without progress, but no action of our hook waits for the instance; nothing to resume',
      { node: node.name },
    );
    return false;
  }
  // The record may be an earlier action's (nothing here can tell): the resumed drain gets a
  // record of its own, by instance, on a timeline from now, keeping only which marks are ours.
  const now = deps.clock.now();
  const { drained: _drained, ...marks } = record;
  const resumed: DrainRecord = {
    ...marks,
    source: { kind: 'resumed', actionId: actionIdOfInstance(instanceId), hook },
    notifiedAtMs: now,
    startedAtMs: now,
    updatedAtMs: now,
  };
  if (
    (await deps.cluster.mark(
      node.name,
      { excludeFromLoadBalancers: false, cordon: false, drain: resumed, owner: deps.config.deploymentName },
      node.resourceVersion,
    )) !== 'patched'
  )
    return false;
  await publishResume(deps.handOffs, node, { group, hook, instanceId, nowMs: now }, deps.config);
  const minutes = Math.round(idleMs / 6_000) / 10;
  deps.log.warn('resumed a drain whose hand-off chain was lost', { node: node.name, idleMinutes: minutes });
  await deps.cluster.record(drainResumed(node, minutes));
  return true;
}

/** The hand-off that names the action by its instance: the resumed invocation verifies it like any other. */
async function publishResume(
  handOffs: HandOffs,
  node: NodeInfo,
  action: { readonly group: string; readonly hook: string; readonly instanceId: string; readonly nowMs: number },
  config: Pick<ReconcileDeps['config'], 'clusterName'>,
): Promise<void> {
  const claim = parseClaim(node.handOffClaim);
  const notification = {
    transition: 'terminating' as const,
    autoScalingGroupName: action.group,
    lifecycleHookName: action.hook,
    instanceId: action.instanceId,
    lifecycleActionToken: undefined,
    time: new Date(action.nowMs),
    notificationMetadata: JSON.stringify({ clusterName: config.clusterName }),
  };
  await handOffs.send(
    handOffMessage(notification, {
      count: Math.max(1, claim?.count ?? 1),
      claim: node.handOffClaim,
      byReconciler: true,
    }),
  );
}

async function reconcileRefresh(
  deps: ReconcileDeps,
  node: NodeInfo,
  state: InstanceState | undefined,
  statuses: ReadonlyMap<string, ReadonlyMap<string, string>>,
  report: { refreshMarksRemoved: string[] },
) {
  const refreshId = node.labels[refreshLabel];
  const group = node.refreshGroup ?? state?.group;
  if (refreshId === undefined || group === undefined) return;
  const known = statuses.get(group);
  // Not asked (the describe failed): nothing is taken back on a guess.
  if (known === undefined) return;
  const status = known.get(refreshId);
  if (status !== undefined && activeRefreshStatuses.has(status)) return;
  const why = `is over (${status ?? 'unknown to Auto Scaling'}); its ending event never took this back`;
  const undone = await removeRefreshMarks(group, { nodes: [node] }, why, {
    nodes: deps.cluster,
    events: deps.cluster,
    log: deps.log,
  });
  report.refreshMarksRemoved.push(...undone);
}
