// Phase 5, complete: the trigger ends the termination (for a lifecycle hook, CONTINUE; with
// DEADLINE_POLICY=retain at the deadline, ABANDON) and the outcome is told.
import type { Step, Termination } from './termination.js';

export async function complete(t: Termination): Promise<Step> {
  const verdict = t.completeWith ?? 'CONTINUE';
  await t.options.trigger.finish(t, verdict);
  return { end: verdict === 'ABANDON' ? 'retained' : (t.drainOutcome ?? 'drained') };
}
