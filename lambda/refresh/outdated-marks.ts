// Node group upgrades on Auto Scaling instance refresh: when a refresh of a group we serve
// starts, every node whose instance is not on the refresh's desired launch template version
// gets our PreferNoSchedule taint, so pods evicted from the first old node prefer new nodes
// over the next old one (they move once) while capacity is never refused; with the `minimal`
// strategy (managed groups' MINIMAL) they are cordoned instead. When it ends (succeeded,
// failed, cancelled, rolled back), exactly the marks it set are taken back, on its group's
// nodes only. The marks name the refresh, its group and this deployment (marks/mark-keys.ts).
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { NodeGateway } from '../cluster/ports/node-gateway.js';
import type { NodeInfo } from '../cluster/model.js';
import { ourConditionReasons, planned, tellConditions } from '../cluster/rules/lifecycle-conditions.js';
import { markedOutdated, outdatedMarksRemoved } from '../cluster/events/mark-events.js';
import { outdatedTaintKey } from '../cluster/marks/mark-keys.js';
import type { AutoScalingInstances, RefreshView } from '../shared/aws-ports.js';
import type { Clock } from '../shared/clock.js';
import type { Log } from '../shared/log.js';
import { isMinimalFor } from './strategy-tag.js';

export interface RefreshDeps {
  readonly nodes: NodeGateway;
  readonly instances: Pick<AutoScalingInstances, 'refresh'>;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly log: Log;
  readonly owner: string;
}

export type RefreshMarkOutcome = 'marked' | 'refresh-over' | 'nothing-outdated';

export async function markOutdatedNodes(
  group: string,
  refreshId: string,
  deps: RefreshDeps,
): Promise<{ outcome: RefreshMarkOutcome; marked: readonly string[] }> {
  const { nodes, instances, log } = deps;
  const view = await instances.refresh(group, refreshId);
  if (view === undefined) {
    log.info('the instance refresh is already over; nothing to mark', { refreshId });
    return { outcome: 'refresh-over', marked: [] };
  }
  if (view.outdated.length === 0) return { outcome: 'nothing-outdated', marked: [] };
  const minimal = isMinimalFor(view.strategyTag, refreshId, deps.clock.now());
  const found = await nodes.findNodesOfInstances(view.outdated);
  const marked: string[] = [];
  for (const [instanceId, node] of found) {
    if (await markOne({ group, refreshId, instanceId, view, minimal }, node, deps)) marked.push(node.name);
  }
  log.info('instance refresh started: marked the outdated nodes', {
    refreshId,
    strategy: minimal ? 'minimal (cordon)' : 'default (PreferNoSchedule)',
    desired: view.desired,
    outdatedInstances: view.outdated.length,
    nodesFound: found.size,
    marked: marked.length,
  });
  return { outcome: 'marked', marked };
}

interface MarkTarget {
  readonly group: string;
  readonly refreshId: string;
  readonly instanceId: string;
  readonly view: RefreshView;
  readonly minimal: boolean;
}

/** Marks one node (re-read after a conflict, three tries); false when nothing was written. */
async function markOne(t: MarkTarget, first: NodeInfo, deps: RefreshDeps): Promise<boolean> {
  let node: NodeInfo | undefined = first;
  for (let attempt = 0; node !== undefined && attempt < 3; attempt++) {
    // A node a drain of ours already took (terminating now) needs nothing more.
    if (node.drain !== undefined) return false;
    const taint = !t.minimal && !node.taints.some((x) => x.key === outdatedTaintKey && x.value === t.refreshId);
    const cordon = t.minimal && !node.unschedulable;
    const result = await deps.nodes.markOutdated(node, {
      refreshId: t.refreshId,
      group: t.group,
      owner: deps.owner,
      taint,
      cordon,
    });
    if (result === 'patched') {
      await deps.events.record(
        markedOutdated(node, {
          refreshId: t.refreshId,
          group: t.group,
          instanceId: t.instanceId,
          desired: t.view.desired,
          cordoned: cordon,
          taintKey: outdatedTaintKey,
        }),
      );
      const why = `instance refresh ${t.refreshId} of ${t.group} replaces this node (to ${t.view.desired})`;
      await tellConditions(deps.nodes, deps.log, node.name, [planned(why, ourConditionReasons.refresh)]);
      return true;
    }
    if (result === 'node-gone') return false;
    node = (await deps.nodes.findNodesOfInstances([t.instanceId])).get(t.instanceId);
  }
  return false;
}

/**
 * Takes back what refreshes of this group set: of one refresh (`refreshId`), or of every
 * refresh but one (`keep`: a group has at most one active refresh, so when one starts the
 * marks of any other are stale), or on the given nodes (the reconciler's).
 */
export async function removeRefreshMarks(
  group: string,
  select: Parameters<NodeGateway['unmarkOutdated']>[1],
  why: string,
  deps: Pick<RefreshDeps, 'nodes' | 'events' | 'log'>,
): Promise<readonly string[]> {
  const undone = await deps.nodes.unmarkOutdated(group, select);
  for (const u of undone)
    await deps.events.record(
      outdatedMarksRemoved({ name: u.node, uid: u.uid }, { refreshId: u.refreshId, group, why, removed: u.removed }),
    );
  if (undone.length > 0 || select.refreshId !== undefined)
    deps.log.info('took back instance refresh marks', {
      group,
      why,
      nodes: undone.map((u) => `${u.node} (${u.refreshId})`),
    });
  return undone.map((u) => u.node);
}
