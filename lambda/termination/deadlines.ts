// Deadlines for a termination a lifecycle hook asked for. The drain deadline is measured from
// the notification's time as our record keeps it, so it holds across invocations, and leaves
// room for the load-balancer wait before the hook's global cap. Without a hand-off path it
// must also fit this invocation. Every invocation starts with a heartbeat (confirm), which
// restarts the hook's timer: it hands on well before that runs out again.
import { actionCapSeconds, type Config } from '../shared/config.js';
import { settleReserveSeconds } from '../shared/config-checks.js';
import { handOffShare } from '../shared/resume-window.js';
import type { Deadlines } from './state.js';

export interface DeadlinesInput {
  readonly notifiedAtMs: number;
  readonly nowMs: number;
  /** When Lambda ends this invocation. */
  readonly invocationEndMs: number;
  readonly canHandOff: boolean;
}

export function lifecycleDeadlines(config: Config, p: DeadlinesInput): Deadlines {
  const { notifiedAtMs, nowMs, invocationEndMs } = p;
  const marginMs = config.invocationMarginSeconds * 1000;
  const loadBalancerMs = settleReserveSeconds(config) * 1000;
  const capMs = notifiedAtMs + actionCapSeconds(config.heartbeatTimeoutSeconds) * 1000;
  const invocationStopMs = Math.min(
    invocationEndMs - marginMs,
    nowMs + Math.round(config.heartbeatTimeoutSeconds * 1000 * handOffShare),
  );
  const latestMs = p.canHandOff ? capMs - loadBalancerMs - marginMs : invocationEndMs - marginMs - loadBalancerMs;
  // Batch pods: waited for up to BATCH_WAIT_SECONDS, then drained within DRAIN_TIMEOUT_SECONDS.
  const batchUntilMs = Math.min(notifiedAtMs + config.batchWaitSeconds * 1000, latestMs);
  const batchDeadlineMs = Math.min(batchUntilMs + config.drainTimeoutSeconds * 1000, latestMs);
  return {
    drainDeadlineMs: Math.min(notifiedAtMs + config.drainTimeoutSeconds * 1000, latestMs),
    latestDrainEndMs: Math.max(nowMs, latestMs),
    invocationStopMs: p.canHandOff ? Math.max(nowMs, invocationStopMs) : Number.POSITIVE_INFINITY,
    minEvictionWindowMs: config.minEvictionWindowSeconds * 1000,
    batch: { untilMs: batchUntilMs, deadlineMs: Math.max(nowMs, batchDeadlineMs) },
    loadBalancerDelayMs: config.loadBalancerDelaySeconds * 1000,
    settleEndMs: Math.max(nowMs, p.canHandOff ? capMs - marginMs : invocationEndMs - marginMs),
    loadBalancerWait: config.waitForTargets
      ? { minMs: config.loadBalancerMinWaitSeconds * 1000, maxMs: config.loadBalancerMaxWaitSeconds * 1000 }
      : undefined,
  };
}

// The settle reserve is the cold-start check's own (config-checks.ts), so a configuration it accepts keeps its waits.
export { settleReserveSeconds };
