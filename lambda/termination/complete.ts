// Phase 5, complete: let Auto Scaling go on with CONTINUE. "No active Lifecycle Action" here
// means another delivery completed it or the hook timed out: the work is done either way.
import { onNode, secondsSince, type Step, type Termination } from './termination.js';

export async function complete(t: Termination): Promise<Step> {
  const { lifecycle, log } = t.deps;
  if (t.options.trigger === 'spot-interruption') {
    // No action to complete: EC2 reclaims the instance on its own schedule.
    const outcome = t.drainOutcome ?? 'drained';
    log.info('drained ahead of the Spot interruption; EC2 reclaims the instance', { outcome });
    if (t.node !== undefined && (outcome === 'drained' || outcome === 'timed-out')) {
      await onNode(t, 'Normal', 'SpotInterruptionDrained', `Drained ${secondsSince(t, t.options.notifiedAtMs)} s after the Spot interruption warning (${outcome}); EC2 reclaims the instance at the two-minute mark.`);
    }
    return { end: outcome };
  }
  const verdict = t.completeWith ?? 'CONTINUE';
  const result = await lifecycle.complete(t.options.action, verdict);
  t.lifecycleAction = result;
  if (result === 'already-completed') {
    log.info('lifecycle action was already completed (duplicate delivery or timed out); nothing left to do');
  } else {
    log.info('lifecycle action completed', { result: verdict });
  }
  const drainOutcome = t.drainOutcome ?? 'drained';
  if (t.node !== undefined && (drainOutcome === 'drained' || drainOutcome === 'timed-out')) {
    await onNode(
      t,
      verdict === 'ABANDON' ? 'Warning' : 'Normal',
      'LifecycleActionCompleted',
      `Lifecycle action ${result === 'completed' ? 'completed' : 'was already completed'} with ${verdict} ${secondsSince(t, t.options.notifiedAtMs)} s after the notification (${drainOutcome}).`,
    );
  }
  return { end: verdict === 'ABANDON' ? 'retained' : drainOutcome };
}
