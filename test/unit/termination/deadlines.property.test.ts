// Properties of a termination's deadlines (lambda/termination/deadlines.ts) for generated deployments that the
// cold-start check accepts (parseConfig, config-checks.ts): nothing past the action's cap, the settle phase keeps
// its reserve after the latest drain end, an invocation hands on in time, and a configuration the check accepts
// gets its whole DRAIN_TIMEOUT_SECONDS and BATCH_WAIT_SECONDS.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { actionCapSeconds } from '../../../lambda/shared/config-checks.js';
import { parseConfig, type Config } from '../../../lambda/shared/config.js';
import { handOffShare } from '../../../lambda/shared/resume-window.js';
import { lifecycleDeadlines, settleReserveSeconds } from '../../../lambda/termination/deadlines.js';
import { t0 } from '../../fakes/arbitraries.js';

/** The environment of a deployment whose waits fit the action's cap, as the cold-start check wants them. */
export const fittingEnvArb = fc
  .record({
    heartbeat: fc.integer({ min: 30, max: 7200 }),
    margin: fc.integer({ min: 1, max: 300 }),
    delay: fc.integer({ min: 0, max: 3600 }),
    waitForTargets: fc.boolean(),
    minWait: fc.integer({ min: 0, max: 3600 }),
    maxWait: fc.integer({ min: 0, max: 3600 }),
    drainShare: fc.double({ min: 0, max: 1, noNaN: true }),
    batchShare: fc.double({ min: 0, max: 1, noNaN: true }),
    window: fc.integer({ min: 0, max: 3600 }),
  })
  .map((g) => {
    const cap = actionCapSeconds(g.heartbeat);
    const drain = Math.max(0, Math.floor((cap - g.delay - g.margin) * g.drainShare));
    const batch = Math.max(0, Math.floor((cap - drain - g.delay - g.margin) * g.batchShare));
    return {
      CLUSTER_NAME: 'prod',
      AUTO_SCALING_GROUP_NAMES: 'workers',
      LIFECYCLE_HOOK_NAMES: 'workers-terminate',
      HEARTBEAT_TIMEOUT_SECONDS: String(g.heartbeat),
      INVOCATION_MARGIN_SECONDS: String(g.margin),
      LAUNCH_TIMEOUT_SECONDS: String(Math.max(30, Math.min(600, g.heartbeat - g.margin))),
      LOAD_BALANCER_DELAY_SECONDS: String(g.delay),
      WAIT_FOR_TARGETS: String(g.waitForTargets),
      LOAD_BALANCER_MIN_WAIT_SECONDS: String(Math.min(g.minWait, g.maxWait)),
      LOAD_BALANCER_MAX_WAIT_SECONDS: String(Math.max(g.minWait, g.maxWait)),
      DRAIN_TIMEOUT_SECONDS: String(drain),
      BATCH_WAIT_SECONDS: String(batch),
      MIN_EVICTION_WINDOW_SECONDS: String(g.window),
      RECONCILE_MARKS: 'false',
    };
  });

/** The config, or undefined when the cold-start check refuses it. */
export function accepted(env: Record<string, string>): Config | undefined {
  try {
    return parseConfig(env);
  } catch {
    return undefined;
  }
}

const inputArb = fc.record({
  notifiedAgoMs: fc.nat(48 * 3600_000),
  invocationLeftMs: fc.integer({ min: 0, max: 900_000 }),
  canHandOff: fc.boolean(),
});

describe('termination deadlines (properties)', () => {
  test.prop([fittingEnvArb, inputArb])(
    "nothing runs past the action's cap (or this invocation, without a hand-off path)",
    (env, input) => {
      const config = accepted(env);
      fc.pre(config !== undefined);
      const nowMs = t0;
      const notifiedAtMs = nowMs - input.notifiedAgoMs;
      const invocationEndMs = nowMs + input.invocationLeftMs;
      const d = lifecycleDeadlines(config, { notifiedAtMs, nowMs, invocationEndMs, canHandOff: input.canHandOff });
      const marginMs = config.invocationMarginSeconds * 1000;
      const reserveMs = settleReserveSeconds(config) * 1000;
      const endMs = input.canHandOff
        ? notifiedAtMs + actionCapSeconds(config.heartbeatTimeoutSeconds) * 1000
        : invocationEndMs;
      // The latest drain end leaves the settle reserve and the margin before the end, unless already past.
      expect(d.latestDrainEndMs).toBeLessThanOrEqual(Math.max(nowMs, endMs - reserveMs - marginMs));
      expect(d.settleEndMs).toBeLessThanOrEqual(Math.max(nowMs, endMs - marginMs));
      expect(d.settleEndMs! - d.latestDrainEndMs).toBeGreaterThanOrEqual(
        Math.min(reserveMs, Math.max(0, endMs - marginMs - nowMs)),
      );
      expect(d.drainDeadlineMs).toBeLessThanOrEqual(d.latestDrainEndMs);
      expect(d.batch!.untilMs).toBeLessThanOrEqual(d.batch!.deadlineMs);
      expect(d.batch!.deadlineMs).toBeLessThanOrEqual(d.latestDrainEndMs);
    },
  );

  test.prop([fittingEnvArb, inputArb])(
    "an invocation stops in time to hand on: before Lambda ends it and before the hook's timer runs out",
    (env, input) => {
      const config = accepted(env);
      fc.pre(config !== undefined);
      const nowMs = t0;
      const invocationEndMs = nowMs + input.invocationLeftMs;
      const d = lifecycleDeadlines(config, {
        notifiedAtMs: nowMs - input.notifiedAgoMs,
        nowMs,
        invocationEndMs,
        canHandOff: input.canHandOff,
      });
      if (!input.canHandOff) {
        expect(d.invocationStopMs).toBe(Number.POSITIVE_INFINITY);
        return;
      }
      expect(d.invocationStopMs).toBeGreaterThanOrEqual(nowMs);
      const latest = Math.min(
        invocationEndMs - config.invocationMarginSeconds * 1000,
        nowMs + config.heartbeatTimeoutSeconds * 1000 * handOffShare + 1,
      );
      expect(d.invocationStopMs).toBeLessThanOrEqual(Math.max(nowMs, latest));
    },
  );

  test.prop([fittingEnvArb, fc.nat(60_000)])(
    'a configuration the cold-start check accepts gets its whole DRAIN_TIMEOUT_SECONDS and BATCH_WAIT_SECONDS',
    (env, sinceNotifiedMs) => {
      const config = accepted(env);
      fc.pre(config !== undefined);
      const nowMs = t0;
      const notifiedAtMs = nowMs - sinceNotifiedMs;
      const d = lifecycleDeadlines(config, { notifiedAtMs, nowMs, invocationEndMs: nowMs + 900_000, canHandOff: true });
      expect(d.drainDeadlineMs).toBe(notifiedAtMs + config.drainTimeoutSeconds * 1000);
      expect(d.batch!.untilMs).toBe(notifiedAtMs + config.batchWaitSeconds * 1000);
    },
  );

  test.prop([fittingEnvArb, inputArb, fc.nat(3600_000)])(
    'deadlines read later never come earlier: a hand-off resumes the same drain deadline',
    (env, input, laterMs) => {
      const config = accepted(env);
      fc.pre(config !== undefined && input.canHandOff);
      const notifiedAtMs = t0 - input.notifiedAgoMs;
      const at = (nowMs: number) =>
        lifecycleDeadlines(config, { notifiedAtMs, nowMs, invocationEndMs: nowMs + 900_000, canHandOff: true });
      const [now, later] = [at(t0), at(t0 + laterMs)];
      expect(later.drainDeadlineMs).toBe(now.drainDeadlineMs);
      expect(later.latestDrainEndMs).toBeGreaterThanOrEqual(now.latestDrainEndMs);
      expect(later.settleEndMs!).toBeGreaterThanOrEqual(now.settleEndMs!);
    },
  );
});
