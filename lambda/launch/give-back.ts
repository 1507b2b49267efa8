// The instance came back (out of a warm pool, a reused or retained instance, a root-volume
// replacement) and its Node object still carries the marks of our last drain of it. They are
// taken back only once Auto Scaling says the terminate action they belong to is over (the
// instance is in no leaving or retained state), exactly as our record says (a label restored
// to its value before), and nothing anybody else set.
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { NodeGateway } from '../cluster/ports/node-gateway.js';
import type { NodeInfo, DrainRecord } from '../cluster/model.js';
import { drainMarksRemoved } from '../cluster/events/mark-events.js';
import { excludeFromLoadBalancersLabel } from '../cluster/marks/mark-keys.js';

import type { AutoScalingInstances } from '../shared/aws-ports.js';
import { keepsDrainMarks } from '../shared/lifecycle-states.js';
import type { Log } from '../shared/log.js';

export interface GiveBackDeps {
  readonly nodes: Pick<NodeGateway, 'unmark'>;
  readonly instances: Pick<AutoScalingInstances, 'describe'>;
  readonly events: EventRecorder;
  readonly log: Log;
}

/** The node as it is after: without our marks, or as it was when they must stay. */
export async function giveNodeBack(
  instanceId: string,
  node: NodeInfo,
  deps: GiveBackDeps,
): Promise<NodeInfo | undefined> {
  const record = node.drain;
  if (record === undefined) return node;
  const state = (await deps.instances.describe([instanceId])).get(instanceId)?.lifecycleState;
  if (state !== undefined && keepsDrainMarks(state)) {
    deps.log.warn(
      'the node carries our drain marks and Auto Scaling still holds the instance on its way out; leaving them',
      { node: node.name, lifecycleState: state },
    );
    return node;
  }
  const result = await deps.nodes.unmark(node, record);
  if (result === 'node-gone') return undefined;
  if (result === 'changed') {
    deps.log.info('the node changed while we took our marks back; looking again', { node: node.name });
    return node;
  }
  const removed = describeRemoved(record);
  deps.log.info('the instance came back: removed the marks of our last drain of its node', {
    node: node.name,
    removed,
  });
  await deps.events.record(drainMarksRemoved(node, removed, 'The instance came back'));
  return withoutMarks(node, record);
}

export function describeRemoved(record: DrainRecord): string[] {
  return [
    ...(record.set.includes('exclude-from-load-balancers')
      ? [
          record.priorLabel !== undefined
            ? `label ${excludeFromLoadBalancersLabel} (restored to "${record.priorLabel}")`
            : `label ${excludeFromLoadBalancersLabel}`,
        ]
      : []),
    ...(record.set.includes('cordon') ? ['cordon'] : []),
  ];
}

function withoutMarks(node: NodeInfo, record: DrainRecord): NodeInfo {
  const labels = { ...node.labels };
  if (record.set.includes('exclude-from-load-balancers')) {
    if (record.priorLabel !== undefined) labels[excludeFromLoadBalancersLabel] = record.priorLabel;
    else delete labels[excludeFromLoadBalancersLabel];
  }
  return {
    ...node,
    labels,
    unschedulable: record.set.includes('cordon') ? false : node.unschedulable,
    drain: undefined,
    handOffClaim: undefined,
  };
}
