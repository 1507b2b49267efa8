// Part of mark: before the first eviction, label and cordon the nodes of every other
// instance the same group is terminating (Terminating, Terminating:Wait). A scale-in, an AZ
// rebalance or an instance refresh terminates many instances at once; cordoning only our own
// node lets the pods we evict land on a sibling that is cordoned a second later and evicted
// again: budgets spent twice, drains longer. Managed node groups cordon every old node
// before draining any on upgrades; NTH users ask for it
// (https://github.com/aws/aws-node-termination-handler/issues/537).
//
// Best effort: whatever fails here is logged and the own drain goes on. Each sibling's own
// invocation later finds its marks there (idempotent) and adopts them (mark.ts).
import { excludeFromLoadBalancersLabel, type DrainRecord, type NodeInfo } from '../ports.js';
import { mapWithConcurrency } from '../drain.js';
import type { Termination } from './termination.js';

/** Siblings marked per termination at most; a larger wave is marked by the siblings' own drains too. */
export const siblingLimit = 100;
const concurrency = 8;

export async function markDoomedSiblings(t: Termination): Promise<void> {
  const { action } = t.options;
  const { instances, nodes, clock, log, events } = t.deps;
  if (!t.options.cordonDoomedSiblings || instances === undefined || !action.autoScalingGroupName) return;
  let nodesOf: ReadonlyMap<string, NodeInfo>;
  let ids: string[];
  try {
    ids = (await instances.terminatingIn(action.autoScalingGroupName)).filter((id) => id !== action.instanceId);
    if (ids.length === 0) return;
    if (ids.length > siblingLimit) {
      log.warn('more terminating siblings than one drain marks; marking the first ones', { siblings: ids.length, limit: siblingLimit });
      ids = ids.slice(0, siblingLimit);
    }
    nodesOf = await nodes.findNodesOfInstances(ids);
  } catch (error) {
    log.warn('could not look up the other terminating instances of the group; draining without marking them first', { error: (error as Error).message });
    return;
  }

  const marked: string[] = [];
  const markOne = async (instanceId: string, node: NodeInfo): Promise<void> => {
    // A drain of ours (its own, or another sibling's) already marked it: leave it.
    if (node.drain !== undefined) return;
    const needLabel = node.labels[excludeFromLoadBalancersLabel] !== 'true';
    const needCordon = !node.unschedulable;
    if (!needLabel && !needCordon) return;
    const set: DrainRecord['set'][number][] = [...(needLabel ? ['exclude-from-load-balancers' as const] : []), ...(needCordon ? ['cordon' as const] : [])];
    const record: DrainRecord = { token: '', startedAtMs: clock.now(), set, markedBy: action.instanceId };
    // Conditional on what we read: if the sibling's own drain wrote its record meanwhile,
    // this write must not replace it ('changed': skip, it is marked).
    const result = await nodes.mark(node.name, { excludeFromLoadBalancers: needLabel, cordon: needCordon, drain: record }, node.resourceVersion);
    if (result !== 'patched') return;
    marked.push(node.name);
    await events.record({
      regarding: { kind: 'Node', name: node.name, uid: node.uid },
      type: 'Normal',
      reason: 'CordonedAhead',
      message: `Instance ${instanceId} is terminating in group ${action.autoScalingGroupName} together with ${action.instanceId} (node ${t.node?.name}): excluded from external load balancers and cordoned before that node's pods are evicted, so none lands here only to move again.`,
    });
  };
  await mapWithConcurrency([...nodesOf], concurrency, async ([instanceId, node]) => {
    try {
      await markOne(instanceId, node);
    } catch (error) {
      log.warn('could not mark a terminating sibling\'s node; its own drain will', { node: node.name, error: (error as Error).message });
    }
  });
  log.info('marked the nodes of the group\'s other terminating instances before evicting', {
    terminatingSiblings: ids.length,
    nodesFound: nodesOf.size,
    marked: marked.length,
    nodes: marked,
  });
}
