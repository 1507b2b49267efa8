// Phase 1, verify. The trigger confirmed the action with Auto Scaling before this runs (the
// router's confirm step); here the node is found, and a hand-off is checked against the claim
// on the node: duplicate deliveries of one hand-off never fork the work.
import type { DrainSource, NodeInfo } from '../cluster/model.js';
import { actionIdOfInstance } from '../cluster/marks/action-id.js';
import { actionOf, sameSource } from '../cluster/rules/drain-source.js';
import { carriedByAnother, parseClaim, standsDownMessage, type Carrier } from './claim.js';
import type { Run, Step, Verified } from './state.js';

export async function verify(run: Run): Promise<Step<Verified>> {
  const { instance, source, handOff, requestId } = run.request;
  const { log } = run.deps;
  const node = await run.deps.nodes.findNodeByInstanceId(instance.instanceId);
  if (node === undefined) {
    log.warn('no node has this instance in spec.providerID; completing so the instance is not held');
    return {
      stop: {
        complete: {
          node: undefined,
          outcome: 'node-not-found',
          verdict: 'CONTINUE',
          evictedTotal: 0,
          result: undefined,
        },
      },
    };
  }
  log.appendKeys?.({ node: node.name });
  const { actionId } = source;
  const base = { node };
  // The reconciler resumed this termination after its chain went quiet: its drain (by instance) carries the action
  // now. A late delivery of the old chain (its hand-off, Lambda's retry of one of its invocations, the notification
  // again) stands down: taking the node back would start the record over, its surges forgotten.
  if (source.kind !== 'resumed' && resumesThisAction(run, node)) {
    log.info('the reconciler resumed this termination; this delivery of the chain it replaced stands down', {
      current: node.handOffClaim,
    });
    return { stop: { end: 'superseded' } };
  }

  // Ours from a crashed earlier attempt of this very invocation (Lambda retried it with the
  // same request id): carry on and publish what it could not.
  const onNode = parseClaim(node.handOffClaim);
  if (onNode?.actionId === actionId && onNode.requestId === requestId && onNode.count > (handOff?.count ?? 0)) {
    log.info('found our own hand-off claim from an earlier attempt of this invocation; carrying on', {
      claim: node.handOffClaim,
    });
    return { ...base, claim: undefined, ownPendingClaim: node.handOffClaim };
  }
  // A first delivery: Lambda's retry of the first invocation (its claim written with the marks) carries on, any other
  // claim on this action means another invocation carries it. A hand-off: the claim it was published under, or the
  // one this very invocation took it up with before Lambda retried it. The rule mark applies again (claim.ts).
  const carrier: Carrier = { actionId, requestId, handOff, ownPendingClaim: undefined };
  if (carriedByAnother(carrier, node.handOffClaim)) {
    log.info(standsDownMessage, { current: node.handOffClaim, handOff: handOff?.count ?? null });
    return { stop: { end: 'superseded' } };
  }
  if (handOff !== undefined) return carriesHandOff(run, node);
  // A claim of an earlier, finished termination of this instance (it came back) is replaced.
  return { ...base, claim: node.handOffClaim, ownPendingClaim: undefined };
}

/** A hand-off the node's claim lets this delivery carry on: only for the drain on the node. */
function carriesHandOff(run: Run, node: NodeInfo): Step<Verified> {
  const { source } = run.request;
  const { log } = run.deps;
  // A hand-off that names its action by instance (the reconciler's) carries on the record the
  // reconciler wrote for it (on a timeline of its own), never another one.
  if (source.kind === 'resumed' && (node.drain === undefined || !sameSource(node.drain.source, source))) {
    log.info('a hand-off by instance, but no drain the reconciler resumed is on the node; nothing to do', {
      current: (node.drain && actionOf(node.drain.source)) ?? null,
    });
    return { stop: { end: 'superseded' } };
  }
  return { node, claim: node.handOffClaim, ownPendingClaim: undefined };
}

/**
 * The reconciler resumes only an action that was already waiting, so a by-instance drain that
 * started after this notification's action began carries it; one that started before is an
 * earlier termination's (the instance came back since) and is replaced.
 */
function resumesThisAction(run: Run, node: NodeInfo): boolean {
  const { drain } = node;
  const byInstance: DrainSource = {
    kind: 'resumed',
    actionId: actionIdOfInstance(run.request.instance.instanceId),
    hook: undefined,
  };
  return drain !== undefined && sameSource(drain.source, byInstance) && drain.startedAtMs >= run.request.notifiedAtMs;
}
