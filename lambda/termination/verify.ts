// Phase 1, verify: before anything is written to the cluster, the trigger confirms the
// termination is real (for a lifecycle hook, a heartbeat that Auto Scaling answers). Then the
// node is found, and a hand-off is checked against the claim on the node.
import type { Step, Termination } from './termination.js';
import { parseClaim } from './hand-off.js';

export async function verify(t: Termination): Promise<Step> {
  const { action, resume, requestId } = t.options;
  const { log } = t.deps;
  const stop = await t.options.trigger.confirm(t);
  if (stop !== undefined) return { end: stop };

  const node = await t.deps.nodes.findNodeByInstanceId(action.instanceId);
  if (node === undefined) {
    log.warn('no node has this instance in spec.providerID; completing so the instance is not held');
    t.drainOutcome = 'node-not-found';
    return { next: 'complete' };
  }
  t.node = node;
  log.appendKeys?.({ node: node.name });

  // Whose claim is on the node? Ours from a crashed earlier attempt of this very invocation
  // (Lambda retried it with the same request id): carry on and publish what it could not.
  const onNodeClaim = parseClaim(node.handOff);
  const ours = onNodeClaim?.token === action.lifecycleActionToken && onNodeClaim.requestId === requestId && onNodeClaim.count > (resume?.count ?? 0);
  if (ours) {
    log.info('found our own hand-off claim from an earlier attempt of this invocation; carrying on', { claim: node.handOff });
    t.ownPendingClaim = node.handOff;
    return { next: 'mark' };
  }
  if (resume !== undefined) {
    // Duplicate deliveries of one hand-off must not fork the work: the claim names the one
    // invocation chain that carries it.
    if (node.handOff !== resume.claim) {
      log.info('this hand-off was already taken up by another delivery; nothing to do', { handOff: resume.count, current: node.handOff });
      return { end: 'superseded' };
    }
    t.claim = resume.claim;
    return { next: 'mark' };
  }
  if (onNodeClaim?.token === action.lifecycleActionToken) {
    // A chain for this very action runs already: this is a late duplicate of the notification.
    log.info('a hand-off chain already carries this termination; this delivery stands down', { current: node.handOff });
    return { end: 'superseded' };
  }
  // A claim of an earlier, finished termination of this instance (it came back) is replaced.
  t.claim = node.handOff;
  return { next: 'mark' };
}
