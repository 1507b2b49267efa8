// The checks across variables that parseConfig runs at cold start, the same the construct runs
// at synth (infra/settings.ts): a deployment made without the construct (the release template,
// whose parameters CloudFormation cannot compare, or by hand) fails its initialisation instead
// of letting Auto Scaling end its actions undrained.
import {
  defaultInterval,
  latestResumeSeconds,
  longestIntervalMinutes,
  passMarginSeconds,
  shortestHeartbeatSeconds,
  shortestIntervalMinutes,
  staleAfterSeconds,
} from './resume-window.js';

/** Auto Scaling's cap on how long one lifecycle action can be kept alive. */
export function actionCapSeconds(heartbeatTimeoutSeconds: number): number {
  return Math.min(48 * 3600, 100 * heartbeatTimeoutSeconds);
}

/** What the settle phase needs free after the drain: the fixed delay, or the minimum wait when it reads targets. */
export interface SettleTimes {
  readonly loadBalancerDelaySeconds: number;
  readonly waitForTargets?: boolean | undefined;
  readonly loadBalancerMinWaitSeconds?: number | undefined;
}

/**
 * The settle time the deadlines keep free after the latest drain end (termination/deadlines.ts): the fixed delay,
 * or with the load balancers read, the larger of it and the minimum wait.
 */
export function settleReserveSeconds(t: SettleTimes): number {
  return t.waitForTargets
    ? Math.max(t.loadBalancerDelaySeconds, t.loadBalancerMinWaitSeconds ?? 0)
    : t.loadBalancerDelaySeconds;
}

/** The variable the settle reserve comes from (with its value, where an error gives it), as an error names it. */
function settleReserveNamed(t: SettleTimes, withValue: boolean): string {
  return settleReserveSeconds(t) > t.loadBalancerDelaySeconds
    ? `LOAD_BALANCER_MIN_WAIT_SECONDS (${withValue ? `${t.loadBalancerMinWaitSeconds}, ` : ''}with WAIT_FOR_TARGETS)`
    : `LOAD_BALANCER_DELAY_SECONDS${withValue ? ` (${t.loadBalancerDelaySeconds})` : ''}`;
}

/**
 * The longest each wait may be, the others as they are: the launch wait within the heartbeat
 * timeout (it does not heartbeat), the drain with the settle reserve (the deadlines keep it, deadlines.ts) and the
 * margin within the action's cap, the batch wait on top of those. The construct checks its props with the same.
 */
export function longestWaits(
  t: {
    heartbeatTimeoutSeconds: number;
    invocationMarginSeconds: number;
    drainTimeoutSeconds: number;
  } & SettleTimes,
) {
  const cap = actionCapSeconds(t.heartbeatTimeoutSeconds);
  const margin = t.invocationMarginSeconds;
  const reserve = settleReserveSeconds(t);
  return {
    cap,
    launch: t.heartbeatTimeoutSeconds - margin,
    drain: cap - reserve - margin,
    batch: cap - t.drainTimeoutSeconds - reserve - margin,
  };
}

/** The values the checks read; undefined where the variable itself was invalid (already reported). */
export interface CheckedValues {
  readonly heartbeatTimeoutSeconds?: number;
  readonly invocationMarginSeconds?: number;
  readonly launchTimeoutSeconds?: number;
  readonly drainTimeoutSeconds?: number;
  readonly loadBalancerDelaySeconds?: number;
  readonly waitForTargets?: boolean;
  readonly loadBalancerMinWaitSeconds?: number;
  readonly batchWaitSeconds?: number;
  readonly reconcileMarks?: boolean;
  readonly handOffTopicArn?: string;
  readonly reconcileIntervalMinutes?: number;
}

/** One sentence per mismatch, naming the variables and the range that would do. */
export function timeoutProblems(v: CheckedValues): string[] {
  const { heartbeatTimeoutSeconds: heartbeat, invocationMarginSeconds: margin } = v;
  if (heartbeat === undefined || margin === undefined) return [];
  const problems: string[] = [];
  const {
    drainTimeoutSeconds: drain,
    loadBalancerDelaySeconds: delay,
    batchWaitSeconds: batch,
    launchTimeoutSeconds: launch,
  } = v;
  const settle = {
    loadBalancerDelaySeconds: delay ?? 0,
    waitForTargets: v.waitForTargets,
    loadBalancerMinWaitSeconds: v.loadBalancerMinWaitSeconds,
  };
  const longest = longestWaits({
    heartbeatTimeoutSeconds: heartbeat,
    invocationMarginSeconds: margin,
    drainTimeoutSeconds: drain ?? 0,
    ...settle,
  });
  if (launch !== undefined && launch > longest.launch) {
    problems.push(
      `LAUNCH_TIMEOUT_SECONDS (${launch}) plus INVOCATION_MARGIN_SECONDS (${margin}) exceeds ` +
        `HEARTBEAT_TIMEOUT_SECONDS (${heartbeat}): ` +
        `the launch wait does not heartbeat; use LAUNCH_TIMEOUT_SECONDS of at most ${longest.launch} or a longer ` +
        `HEARTBEAT_TIMEOUT_SECONDS`,
    );
  }
  if (drain === undefined || delay === undefined) return [...problems, ...resumeProblems(v, heartbeat, margin)];
  if (drain > longest.drain) {
    problems.push(
      `DRAIN_TIMEOUT_SECONDS (${drain}) plus ${settleReserveNamed(settle, true)} and INVOCATION_MARGIN_SECONDS ` +
        `(${margin}) exceeds what Auto Scaling lets a lifecycle action live ` +
        `(min(48 h, 100 x HEARTBEAT_TIMEOUT_SECONDS) = ${longest.cap} s): use DRAIN_TIMEOUT_SECONDS of at most ` +
        `${Math.max(0, longest.drain)} or a longer HEARTBEAT_TIMEOUT_SECONDS`,
    );
  } else if (batch !== undefined && batch > longest.batch) {
    problems.push(
      `BATCH_WAIT_SECONDS (${batch}) plus DRAIN_TIMEOUT_SECONDS, ${settleReserveNamed(settle, false)} and ` +
        `INVOCATION_MARGIN_SECONDS exceeds what Auto Scaling lets a lifecycle action live ` +
        `(${longest.cap} s): use BATCH_WAIT_SECONDS of at most ${longest.batch} or a longer HEARTBEAT_TIMEOUT_SECONDS`,
    );
  }
  return [...problems, ...resumeProblems(v, heartbeat, margin)];
}

/** Without the reconciler or a hand-off topic nothing resumes a lost chain, so nothing is promised. */
function resumeProblems(v: CheckedValues, heartbeat: number, margin: number): string[] {
  if (v.reconcileMarks !== true || v.handOffTopicArn === undefined) return [];
  const times = { heartbeatTimeoutSeconds: heartbeat, invocationMarginSeconds: margin };
  const interval = v.reconcileIntervalMinutes ?? defaultInterval(times);
  if (interval >= shortestIntervalMinutes && latestResumeSeconds(times, interval) <= heartbeat) return [];
  const why =
    `lets Auto Scaling end an action before the reconciler can resume its lost hand-off chain (taken for lost ` +
    `after ${staleAfterSeconds(times)} s without a write, ` +
    `then up to one interval and ${passMarginSeconds} s to the pass's heartbeat)`;
  const longest = longestIntervalMinutes(times);
  if (longest < shortestIntervalMinutes) {
    return [
      `HEARTBEAT_TIMEOUT_SECONDS (${heartbeat}) ${why} under any schedule: use HEARTBEAT_TIMEOUT_SECONDS of at least ` +
        `${shortestHeartbeatSeconds(shortestIntervalMinutes, margin)} (with RECONCILE_INTERVAL_MINUTES=1), or ` +
        `RECONCILE_MARKS=false`,
    ];
  }
  return [
    `HEARTBEAT_TIMEOUT_SECONDS (${heartbeat}) with RECONCILE_INTERVAL_MINUTES (${interval}) ${why}: use ` +
      `RECONCILE_INTERVAL_MINUTES from 1 to ${longest}, ` +
      `HEARTBEAT_TIMEOUT_SECONDS of at least ${shortestHeartbeatSeconds(interval, margin) ?? 'more than 7200'}, ` +
      `or RECONCILE_MARKS=false`,
  ];
}
