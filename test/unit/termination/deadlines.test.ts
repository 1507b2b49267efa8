// A termination's deadlines for one configuration, each named field in its unit (milliseconds): the examples beside
// the properties (deadlines.property.test.ts) pin what those leave free, the batch deadline counted from the batch
// wait's end, the settle phase's waits in milliseconds. Found by the mutation score (each line a surviving mutant).
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../lambda/shared/config.js';
import { lifecycleDeadlines } from '../../../lambda/termination/deadlines.js';

const config = (env: Record<string, string> = {}) =>
  parseConfig({
    CLUSTER_NAME: 'prod',
    AUTO_SCALING_GROUP_NAMES: 'workers',
    LIFECYCLE_HOOK_NAMES: 'workers-terminate',
    HEARTBEAT_TIMEOUT_SECONDS: '3600',
    DRAIN_TIMEOUT_SECONDS: '300',
    BATCH_WAIT_SECONDS: '600',
    MIN_EVICTION_WINDOW_SECONDS: '45',
    LOAD_BALANCER_DELAY_SECONDS: '20',
    WAIT_FOR_TARGETS: 'true',
    LOAD_BALANCER_MIN_WAIT_SECONDS: '10',
    LOAD_BALANCER_MAX_WAIT_SECONDS: '400',
    ...env,
  });
const t0 = Date.parse('2026-11-22T10:00:00Z');
const input = { notifiedAtMs: t0, nowMs: t0, invocationEndMs: t0 + 900_000, canHandOff: true };

describe("a termination's deadlines", () => {
  it('drains batch pods within DRAIN_TIMEOUT_SECONDS after BATCH_WAIT_SECONDS', () => {
    const d = lifecycleDeadlines(config(), input);
    expect(d.drainDeadlineMs).toBe(t0 + 300_000);
    expect(d.batch).toEqual({ untilMs: t0 + 600_000, deadlineMs: t0 + 900_000 });
  });

  it("gives the settle phase's waits and the fair window in milliseconds", () => {
    const d = lifecycleDeadlines(config(), input);
    expect(d.minEvictionWindowMs).toBe(45_000);
    expect(d.loadBalancerDelayMs).toBe(20_000);
    expect(d.loadBalancerWait).toEqual({ minMs: 10_000, maxMs: 400_000 });
    expect(lifecycleDeadlines(config({ WAIT_FOR_TARGETS: 'false' }), input).loadBalancerWait).toBeUndefined();
  });
});
