// Phase 2, mark: exclude the node from external load balancers and cordon it, in one merge
// patch with our drain record (which action, when we first saw the node, which marks we set
// ourselves). Label first in spirit: deregistration takes minutes, pods can be gone in seconds.
// https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-exclude-from-external-load-balancers
import { excludeFromLoadBalancersLabel, type DrainRecord } from '../ports.js';
import { markDoomedSiblings } from './siblings.js';
import { onNode, type Step, type Termination } from './termination.js';

export async function mark(t: Termination): Promise<Step> {
  const node = t.node!;
  const { action, resume } = t.options;
  const { nodes, clock, log } = t.deps;
  const ours = node.drain?.token === action.lifecycleActionToken ? node.drain : undefined;
  const needLabel = node.labels[excludeFromLoadBalancersLabel] !== 'true';
  const needCordon = !node.unschedulable;
  t.firstSeenMs = ours?.startedAtMs ?? clock.now();
  if (resume === undefined && ours === undefined) {
    await onNode(t, 'Normal', 'DrainStarted', t.options.trigger.startedMessage(t));
  }
  if (needLabel || needCordon || ours === undefined) {
    // Marks a drain of ours set earlier stay ours to take back: a sibling's drain that marked
    // this node ahead (siblings.ts), or an earlier termination of an instance that came back.
    const set = new Set<DrainRecord['set'][number]>(node.drain?.set ?? []);
    if (needLabel) set.add('exclude-from-load-balancers');
    if (needCordon) set.add('cordon');
    const record: DrainRecord = { token: action.lifecycleActionToken, startedAtMs: t.firstSeenMs, set: [...set] };
    if ((await nodes.mark(node.name, { excludeFromLoadBalancers: needLabel, cordon: needCordon, drain: record })) === 'node-gone') {
      log.warn('node was deleted while draining; completing');
      t.drainOutcome = 'node-gone';
      return { next: 'complete' };
    }
    t.node = { ...node, unschedulable: true, labels: { ...node.labels, [excludeFromLoadBalancersLabel]: 'true' }, drain: record };
  }
  if (resume === undefined && (needCordon || ours === undefined)) {
    log.info('node labelled for exclusion from external load balancers and cordoned');
    const ahead = node.drain?.markedBy !== undefined && node.drain.token === '' ? ` (already cordoned ahead by the drain of ${node.drain.markedBy})` : '';
    await onNode(t, 'Normal', 'Cordoned', `Node excluded from external load balancers and marked unschedulable${ahead}.`);
  }
  if (resume === undefined) await markDoomedSiblings(t);
  return { next: resume?.phase === 'settle' ? 'settle' : 'drain' };
}
