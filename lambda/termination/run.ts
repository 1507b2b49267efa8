// A termination as a visible state machine: verify -> mark -> drain -> settle -> complete.
// Each phase is one function over the shared Termination and says what comes next; a phase
// that runs out of invocation time says "hand on", and the runner publishes where it stands
// so a fresh invocation resumes in that phase. Adding a phase is one entry here and its file.
// The model is Karpenter's termination controller: every pass re-derives from the cluster.
// https://github.com/kubernetes-sigs/karpenter/blob/main/pkg/controllers/node/termination/controller.go
import type { DrainResult } from '../drain.js';
import { complete } from './complete.js';
import { drain } from './drain.js';
import { claimValue, parseClaim, type HandOffState } from './hand-off.js';
import { mark } from './mark.js';
import { settle } from './settle.js';
import type { PhaseName, Step, TerminateDeps, TerminateOptions, TerminateOutcome, Termination } from './termination.js';
import { verify } from './verify.js';

export const phases: Readonly<Record<PhaseName, (t: Termination) => Promise<Step>>> = { verify, mark, drain, settle, complete };

export interface TerminateReport {
  readonly outcome: TerminateOutcome;
  readonly nodeName: string | undefined;
  /** 'pending' when the work was handed on, belongs to another invocation, or was never ours. */
  readonly lifecycleAction: 'completed' | 'already-completed' | 'pending';
  /** This invocation's drain, if it ran one. */
  readonly drain: DrainResult | undefined;
  /** Pods evicted over the whole termination (all its invocations). */
  readonly evictedTotal: number;
  readonly durationMs: number;
}

export async function terminate(options: TerminateOptions, deps: TerminateDeps): Promise<TerminateReport> {
  const t: Termination = { options, deps, startedMs: deps.clock.now(), evictedTotal: options.resume?.evicted ?? 0 };
  let phase: PhaseName = 'verify';
  try {
    for (;;) {
      deps.log.debug('termination phase', { phase });
      const step = await phases[phase](t);
      if ('next' in step) {
        phase = step.next;
        continue;
      }
      if ('handOn' in step) return await handOn(t, step.handOn);
      return report(t, step.end);
    }
  } finally {
    t.watch?.close();
  }
}

function report(t: Termination, outcome: TerminateOutcome): TerminateReport {
  return {
    outcome,
    nodeName: t.node?.name,
    lifecycleAction: t.lifecycleAction ?? 'pending',
    // Pods that came back are noticed until the very end (the load-balancer wait included).
    drain: t.drain && t.returns ? { ...t.drain, returned: t.returns.names() } : t.drain,
    evictedTotal: t.evictedTotal,
    durationMs: t.deps.clock.now() - t.startedMs,
  };
}

/**
 * Claims the next hand-off on the node (compare-and-swap: of two deliveries carrying the
 * same chain, one wins), then publishes it. A crash between the two leaves a claim that
 * names this invocation's request id, which Lambda's retry of it recognises (verify.ts).
 */
async function handOn(t: Termination, phase: HandOffState['phase']): Promise<TerminateReport> {
  const { options, deps } = t;
  const { log, nodes } = deps;
  const node = t.node!;
  const count = parseClaim(t.ownPendingClaim)?.count ?? (options.resume?.count ?? 0) + 1;
  const claim = t.ownPendingClaim ?? claimValue(options.action.lifecycleActionToken, count, options.requestId);
  if (t.ownPendingClaim === undefined) {
    const claimed = await nodes.claimHandOff(node.name, t.claim, claim);
    if (claimed === 'node-gone') {
      log.warn('node was deleted while draining; completing');
      t.drainOutcome = 'node-gone';
      await phases.complete(t);
      return report(t, 'node-gone');
    }
    if (claimed === 'lost') {
      log.info('another delivery carries this drain on; stopping here', { handOff: count });
      return report(t, 'superseded');
    }
  }
  const state: HandOffState =
    phase === 'drain'
      ? { phase, count, claim, evicted: t.evictedTotal }
      : { phase, count, claim, evicted: t.evictedTotal, loadBalancerWaitUntilMs: t.loadBalancerWaitUntilMs!, drainOutcome: t.drainOutcome === 'timed-out' ? 'timed-out' : 'drained' };
  if ((await options.handOff!(state)) === 'action-over') {
    log.info('the lifecycle action is already over (completed or timed out); stopping');
    return report(t, 'superseded');
  }
  log.info('handed the termination on to a fresh invocation', {
    handOff: count,
    phase: phase === 'drain' ? 'drain' : 'load-balancer wait',
    podsLeft: t.drain?.stuck.length ?? 0,
  });
  return report(t, 'handed-off');
}
