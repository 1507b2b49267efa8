// A termination as its phases: verify -> mark -> drain -> settle -> complete. Each phase is
// one file and takes what the one before found; any may stop the termination, complete it
// early, or hand it on when this invocation runs out of time. A handed-on termination runs
// the same phases again and each re-derives where it stands from the cluster: mark finds its
// record, drain finds the pods left (or, when the record says the drain ended, goes straight
// to the load-balancer wait the record dates). The model is Karpenter's termination
// controller: https://github.com/kubernetes-sigs/karpenter/blob/main/pkg/controllers/node/termination/controller.go
import { instanceRetainedMessage } from '../cluster/events/log-messages.js';
import { drainInProgress, tellConditions } from '../cluster/rules/lifecycle-conditions.js';
import { podRule } from '../cluster/rules/drain-rules.js';
import { mustLeave } from '../cluster/rules/drain-plan.js';
import { isDrainable, isTerminating, podKey } from '../cluster/rules/pods.js';
import { DeadlinePolicy } from '../shared/deadline-policy.js';
import { claimValue, parseClaim } from './claim.js';
import { complete, report } from './complete.js';
import { drain } from './drain.js';
import { mark } from './mark.js';
import { settle } from './settle.js';
import {
  deadlinePolicyOf,
  isStop,
  type Run,
  type Stop,
  type TerminateDeps,
  type TerminateReport,
  type TerminationRequest,
} from './state.js';
import { verify } from './verify.js';

export async function terminate(request: TerminationRequest, deps: TerminateDeps): Promise<TerminateReport> {
  const run: Run = { request, deps, startedMs: deps.clock.now() };
  try {
    const verified = await verify(run);
    if (isStop(verified)) return await stopped(run, verified.stop);
    const marked = await mark(run, verified);
    if (isStop(marked)) return await stopped(run, marked.stop);
    const drained = await drain(run, marked);
    if (isStop(drained)) return await stopped(run, drained.stop);
    const settled = await settle(run, drained);
    if (isStop(settled)) return await stopped(run, settled.stop);
    const { node, outcome, evictedTotal, result, settle: waited } = settled;
    if (podsStayUnderRetain(run))
      return await complete(run, {
        node,
        outcome: 'retained',
        verdict: 'ABANDON',
        evictedTotal,
        result,
        settle: waited,
      });
    return await complete(run, { node, outcome, verdict: 'CONTINUE', evictedTotal, result, settle: waited });
  } finally {
    run.pods?.watch.close();
  }
}

/**
 * Under retain nothing ends in CONTINUE with a drainable pod on the node: a pod that tolerates
 * the cordon and came back (not chased: it would only come back again) keeps the instance.
 */
function podsStayUnderRetain(run: Run): boolean {
  if (deadlinePolicyOf(run.request) !== DeadlinePolicy.RETAIN || run.pods === undefined) return false;
  // Pods a drain rule leaves (Skip) stay by design: they keep nothing.
  const nowMs = run.deps.clock.now();
  const left = run.pods.watch
    .current()
    .filter((p) => isDrainable(p) && !isTerminating(p) && mustLeave(podRule(p, run.request.settings, nowMs)));
  if (left.length === 0) return false;
  run.deps.log.error(instanceRetainedMessage, {
    reason: 'pods came back onto the node and stay (DEADLINE_POLICY=retain)',
    pods: left.map(podKey),
  });
  return true;
}

async function stopped(run: Run, stop: Stop): Promise<TerminateReport> {
  if ('end' in stop)
    return report(run, {
      outcome: stop.end,
      nodeName: undefined,
      lifecycleAction: 'pending',
      drain: undefined,
      evictedTotal: 0,
    });
  if ('complete' in stop) return complete(run, stop.complete);
  return handOff(run, stop);
}

/**
 * Claims the next hand-off on the node (compare-and-swap: of two deliveries carrying the
 * same chain, one wins) together with the record of where the drain stands, then publishes
 * the hand-off to the action. A crash between the two leaves a claim that names this
 * invocation's request id, which Lambda's retry of it recognises (verify.ts).
 */
async function handOff(run: Run, stop: Extract<Stop, { handOff: unknown }>): Promise<TerminateReport> {
  const { request, deps } = run;
  const { state } = stop;
  const count = parseClaim(state.ownPendingClaim)?.count ?? (request.handOff?.count ?? 0) + 1;
  const claim = state.ownPendingClaim ?? claimValue(request.source.actionId, count, request.requestId);
  const base = { nodeName: state.node.name, drain: stop.result, evictedTotal: stop.evictedTotal };
  if (state.ownPendingClaim === undefined) {
    const claimed = await deps.nodes.claimHandOff(state.node.name, state.claim, claim, {
      ...stop.record,
      updatedAtMs: deps.clock.now(),
    });
    if (claimed === 'node-gone') {
      deps.log.warn('node was deleted while draining; completing');
      return complete(run, {
        node: state.node,
        outcome: 'node-gone',
        verdict: 'CONTINUE',
        evictedTotal: stop.evictedTotal,
        result: stop.result,
      });
    }
    if (claimed === 'lost') {
      deps.log.info('another delivery carries this drain on; stopping here', { handOff: count });
      return report(run, { ...base, outcome: 'superseded', lifecycleAction: 'pending' });
    }
  }
  if ((await request.sendHandOff!({ count, claim })) === 'action-over') {
    deps.log.info('the lifecycle action is already over (completed or timed out); stopping');
    return report(run, { ...base, outcome: 'superseded', lifecycleAction: 'pending' });
  }
  // The drain goes on in the next invocation: what still holds it, said on the node.
  const left = stop.result?.stuck ?? [];
  if (stop.handOff === 'drain' && left.length > 0) {
    const blockers = left
      .slice(0, 10)
      .map((s) => `${s.pod} (${s.reason}${s.budgetName ? `: PodDisruptionBudget ${s.budgetName}` : ''})`);
    await tellConditions(deps.nodes, deps.log, state.node.name, [
      drainInProgress(`${left.length} pods left: ${blockers.join(', ')}`),
    ]);
  }
  deps.log.info('handed the termination on to a fresh invocation', {
    handOff: count,
    phase: stop.handOff === 'drain' ? 'drain' : 'settle (volumes, load balancers)',
    podsLeft: stop.result?.stuck.length ?? 0,
  });
  return report(run, { ...base, outcome: 'handed-off', lifecycleAction: 'pending' });
}
