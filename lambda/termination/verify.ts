// Phase 1, verify: before anything is written to the cluster, Auto Scaling must confirm the
// lifecycle action is live. A heartbeat does that (and restarts the hook's timer): a forged
// or stale notification (group and hook names are no secret) gets "No active Lifecycle
// Action" and the termination ends here, with no write of any kind and no completion.
// Then the node is found, and a hand-off is checked against the claim on the node.
import type { Step, Termination } from './termination.js';
import { parseClaim } from './hand-off.js';

export async function verify(t: Termination): Promise<Step> {
  const { action, resume, requestId } = t.options;
  const { lifecycle, log } = t.deps;
  if (t.options.trigger === 'spot-interruption') {
    // No lifecycle action exists; the handler checked the instance's group with Auto Scaling.
    return (await findNode(t, 'nothing to drain')) ?? { next: 'mark' };
  }
  if ((await lifecycle.heartbeat(action)) === 'no-active-action') {
    if (resume !== undefined) {
      log.info('the lifecycle action is already over (completed or timed out); nothing left to do', { handOff: resume.count });
      return { end: 'superseded' };
    }
    log.warn('Auto Scaling has no active lifecycle action for this notification; not touching the cluster', {
      instanceId: action.instanceId,
      lifecycleActionToken: action.lifecycleActionToken,
    });
    return { end: 'no-active-action' };
  }
  log.info('lifecycle action verified (heartbeat recorded)', resume ? { handOff: resume.count } : {});

  const missing = await findNode(t, 'completing so the instance is not held');
  if (missing) return missing;
  const node = t.node!;

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

/** Finds the node by providerID (never by name); a step to take when there is none. */
async function findNode(t: Termination, whenMissing: string): Promise<Step | undefined> {
  const node = await t.deps.nodes.findNodeByInstanceId(t.options.action.instanceId);
  if (node === undefined) {
    t.deps.log.warn(`no node has this instance in spec.providerID; ${whenMissing}`);
    t.drainOutcome = 'node-not-found';
    return { next: 'complete' };
  }
  t.node = node;
  t.deps.log.appendKeys?.({ node: node.name });
  return undefined;
}
