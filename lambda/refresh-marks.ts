// Node group upgrades on Auto Scaling instance refresh (issue 14): when a refresh of a group
// we serve starts, every node whose instance is not on the refresh's desired launch template
// version gets our PreferNoSchedule taint, so pods evicted from the first old node prefer new
// nodes over the next old one (they move once) while capacity is never refused; with the
// `minimal` strategy (managed groups' MINIMAL) they are cordoned instead. When it ends
// (succeeded, failed, cancelled, rolled back), exactly the marks we set are taken back.
//
// Why EventBridge's refresh events and not "the first terminate of a refresh": a terminate
// notification does not say why the instance goes, so each one would have to ask Auto
// Scaling whether a refresh runs (a call per termination, forever), and nothing would ever
// say that it ended. The Started event names the refresh, the ending events name its end;
// both are best effort, so the `upgrade` command takes the marks back too when it sees the
// refresh end, and a lost Started event costs only the hint: each drain still cordons its
// own node and its doomed siblings first.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/instance-refresh-eventbridge-events.html
import type { AutoScalingInstances, EventRecorder, Log, NodeGateway, NodeInfo } from './ports.js';
import { outdatedTaintKey } from './ports.js';

export interface RefreshDeps {
  readonly nodes: NodeGateway;
  readonly instances: Pick<AutoScalingInstances, 'refresh'>;
  readonly events: EventRecorder;
  readonly log: Log;
}

export type RefreshMarkOutcome = 'marked' | 'refresh-over' | 'nothing-outdated';

export async function markOutdatedNodes(group: string, refreshId: string, deps: RefreshDeps): Promise<{ outcome: RefreshMarkOutcome; marked: readonly string[] }> {
  const { nodes, instances, events, log } = deps;
  const view = await instances.refresh(group, refreshId);
  if (view === undefined) {
    log.info('the instance refresh is already over; nothing to mark', { refreshId });
    return { outcome: 'refresh-over', marked: [] };
  }
  if (view.outdated.length === 0) return { outcome: 'nothing-outdated', marked: [] };
  const found = await nodes.findNodesOfInstances(view.outdated);
  const marked: string[] = [];
  for (const [instanceId, first] of found) {
    let node: NodeInfo | undefined = first;
    for (let attempt = 0; node !== undefined && attempt < 3; attempt++) {
      // A node a drain of ours already took (terminating now) needs nothing more.
      if (node.drain !== undefined) break;
      const taint = !view.minimal && !node.taints.some((t) => t.key === outdatedTaintKey);
      const cordon = view.minimal && !node.unschedulable;
      const result = await nodes.markOutdated(node, { refreshId, taint, cordon });
      if (result === 'patched') {
        marked.push(node.name);
        await events.record({
          regarding: { kind: 'Node', name: node.name, uid: node.uid },
          type: 'Normal',
          reason: 'MarkedOutdated',
          message: `Instance refresh ${refreshId} of group ${group} replaces instance ${instanceId} (desired: ${view.desired}): ${cordon ? 'cordoned (strategy minimal)' : `tainted ${outdatedTaintKey}:PreferNoSchedule, so evicted pods prefer new nodes`}.`,
        });
        break;
      }
      if (result === 'node-gone') break;
      // 'changed': read it again and retry.
      node = (await nodes.findNodesOfInstances([instanceId])).get(instanceId);
    }
  }
  log.info('instance refresh started: marked the outdated nodes', {
    refreshId,
    strategy: view.minimal ? 'minimal (cordon)' : 'default (PreferNoSchedule)',
    desired: view.desired,
    outdatedInstances: view.outdated.length,
    nodesFound: found.size,
    marked: marked.length,
  });
  return { outcome: 'marked', marked };
}

export async function removeRefreshMarks(group: string, refreshId: string, outcome: string, deps: Pick<RefreshDeps, 'nodes' | 'events' | 'log'>): Promise<readonly string[]> {
  const undone = await deps.nodes.unmarkOutdated(refreshId);
  for (const u of undone) {
    await deps.events.record({
      regarding: { kind: 'Node', name: u.node, uid: u.uid },
      type: 'Normal',
      reason: 'OutdatedMarksRemoved',
      message: `Instance refresh ${refreshId} of group ${group} ${outcome}: removed what it set (${u.removed.length > 0 ? u.removed.join(', ') : 'only its label'}).`,
    });
  }
  deps.log.info('instance refresh ended: removed its marks', { refreshId, outcome, nodes: undone.map((u) => u.node) });
  return undone.map((u) => u.node);
}
