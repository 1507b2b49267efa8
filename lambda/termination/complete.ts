// Phase 5, complete: the trigger ends the termination (for a lifecycle hook, CONTINUE; ABANDON
// to retain) and the outcome is told.
import type { Completion, Run, TerminateReport } from './state.js';

export async function complete(run: Run, c: Completion): Promise<TerminateReport> {
  const completed = await run.request.ending.finish(c);
  return report(run, {
    outcome: c.outcome,
    nodeName: c.node?.name,
    lifecycleAction: completed === 'nothing-to-complete' ? 'pending' : completed,
    drain: c.result,
    evictedTotal: c.evictedTotal,
    settle: c.settle,
  });
}

export function report(run: Run, r: Omit<TerminateReport, 'durationMs'>): TerminateReport {
  // Pods that came back are noticed until the very end (the load-balancer wait included).
  const drain = r.drain && run.pods ? { ...r.drain, returned: run.pods.returns.names() } : r.drain;
  return { ...r, drain, durationMs: run.deps.clock.now() - run.startedMs };
}
