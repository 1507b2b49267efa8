// What asks for a termination, each in one place: how it is confirmed before anything is
// written to the cluster, what the DrainStarted Event says, and how the termination ends.
// A new trigger is one more object here; the phases only call it.
import { onNode, secondsSince, type TerminateOutcome, type Termination } from './termination.js';

export interface Trigger {
  /** Who asks for the drain, for the DrainStarted Event. */
  startedMessage(t: Termination): string;
  /** Before any write to the cluster: undefined to go on, or the outcome that ends it here. */
  confirm(t: Termination): Promise<TerminateOutcome | undefined>;
  /** Ends the termination: completes what asked for it (if anything waits) and says so on the node. */
  finish(t: Termination, verdict: 'CONTINUE' | 'ABANDON'): Promise<void>;
}

/** Whether the drain got as far as the node: only then is there something to tell on it. */
const drainedOrTimedOut = (t: Termination) => t.node !== undefined && (t.drainOutcome ?? 'drained') !== 'node-not-found' && t.drainOutcome !== 'node-gone';

/**
 * An Auto Scaling lifecycle hook. A heartbeat confirms the action is live (and restarts the
 * hook's timer): a forged or stale notification (group and hook names are no secret) gets "No
 * active Lifecycle Action" and ends before any write, with no completion. It ends by
 * completing the action; "No active Lifecycle Action" then means another delivery completed
 * it or the hook timed out: done either way.
 */
export function lifecycleHook(options: { readonly intoWarmPool?: boolean } = {}): Trigger {
  return {
    startedMessage: ({ options: { action } }) =>
      options.intoWarmPool
        ? `Auto Scaling group ${action.autoScalingGroupName} is returning instance ${action.instanceId} to its warm pool; draining before it stops. Our marks are removed when it comes back.`
        : `Auto Scaling group ${action.autoScalingGroupName} is terminating instance ${action.instanceId}; draining before it goes.`,

    async confirm(t) {
      const { action, resume } = t.options;
      const { lifecycle, log } = t.deps;
      if ((await lifecycle.heartbeat(action)) === 'no-active-action') {
        if (resume !== undefined) {
          log.info('the lifecycle action is already over (completed or timed out); nothing left to do', { handOff: resume.count });
          return 'superseded';
        }
        log.warn('Auto Scaling has no active lifecycle action for this notification; not touching the cluster', {
          instanceId: action.instanceId,
          lifecycleActionToken: action.lifecycleActionToken,
        });
        return 'no-active-action';
      }
      log.info('lifecycle action verified (heartbeat recorded)', resume ? { handOff: resume.count } : {});
      return undefined;
    },

    async finish(t, verdict) {
      const { lifecycle, log } = t.deps;
      const result = await lifecycle.complete(t.options.action, verdict);
      t.lifecycleAction = result;
      if (result === 'already-completed') {
        log.info('lifecycle action was already completed (duplicate delivery or timed out); nothing left to do');
      } else {
        log.info('lifecycle action completed', { result: verdict });
      }
      if (!drainedOrTimedOut(t)) return;
      await onNode(
        t,
        verdict === 'ABANDON' ? 'Warning' : 'Normal',
        'LifecycleActionCompleted',
        `Lifecycle action ${result === 'completed' ? 'completed' : 'was already completed'} with ${verdict} ${secondsSince(t, t.options.notifiedAtMs)} s after the notification (${t.drainOutcome ?? 'drained'}).`,
      );
    },
  };
}

/**
 * An EC2 Spot interruption warning: no lifecycle action waits for us, so there is nothing to
 * confirm with Auto Scaling beyond the instance's group (the handler asked) and nothing to
 * complete: EC2 reclaims the instance two minutes after the warning.
 */
export const spotInterruption: Trigger = {
  startedMessage: ({ options: { action } }) =>
    `EC2 reclaims Spot instance ${action.instanceId} of group ${action.autoScalingGroupName} in two minutes; draining before it goes.`,

  confirm: async () => undefined,

  async finish(t) {
    const outcome = t.drainOutcome ?? 'drained';
    t.deps.log.info('drained ahead of the Spot interruption; EC2 reclaims the instance', { outcome });
    if (!drainedOrTimedOut(t)) return;
    await onNode(
      t,
      'Normal',
      'SpotInterruptionDrained',
      `Drained ${secondsSince(t, t.options.notifiedAtMs)} s after the Spot interruption warning (${outcome}); EC2 reclaims the instance at the two-minute mark.`,
    );
  },
};
