// Properties of the cold-start check across variables (lambda/shared/config-checks.ts): it accepts exactly the
// waits that fit the action's cap with the settle reserve the deadlines keep (termination/deadlines.ts), names the
// variables it refuses, and a configuration it accepts stays accepted with shorter waits.
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { actionCapSeconds, settleReserveSeconds, timeoutProblems } from '../../../lambda/shared/config-checks.js';
import { parseConfig } from '../../../lambda/shared/config.js';

const valuesArb = fc.record({
  heartbeatTimeoutSeconds: fc.integer({ min: 30, max: 7200 }),
  invocationMarginSeconds: fc.integer({ min: 1, max: 300 }),
  launchTimeoutSeconds: fc.integer({ min: 30, max: 3600 }),
  drainTimeoutSeconds: fc.integer({ min: 0, max: 172_800 }),
  loadBalancerDelaySeconds: fc.integer({ min: 0, max: 3600 }),
  waitForTargets: fc.boolean(),
  loadBalancerMinWaitSeconds: fc.integer({ min: 0, max: 3600 }),
  batchWaitSeconds: fc.integer({ min: 0, max: 172_800 }),
  reconcileMarks: fc.constant(false),
});

describe('the cold-start timeout check (properties)', () => {
  test.prop([valuesArb])(
    "accepts exactly the waits that fit the action's cap with the settle reserve the deadlines keep",
    (v) => {
      const cap = actionCapSeconds(v.heartbeatTimeoutSeconds);
      const reserve = settleReserveSeconds(v);
      const fits =
        v.launchTimeoutSeconds + v.invocationMarginSeconds <= v.heartbeatTimeoutSeconds &&
        v.drainTimeoutSeconds + reserve + v.invocationMarginSeconds <= cap &&
        v.batchWaitSeconds + v.drainTimeoutSeconds + reserve + v.invocationMarginSeconds <= cap;
      expect(timeoutProblems(v).length === 0).toBe(fits);
    },
  );

  test.prop([valuesArb])('every refusal names the variables it is about and a value that would do', (v) => {
    for (const problem of timeoutProblems(v)) {
      expect(problem).toMatch(/^(LAUNCH_TIMEOUT_SECONDS|DRAIN_TIMEOUT_SECONDS|BATCH_WAIT_SECONDS) \(\d+\)/);
      expect(problem).toMatch(/use \w+ of at most -?\d+ or a longer HEARTBEAT_TIMEOUT_SECONDS/);
    }
  });

  test.prop([valuesArb, fc.double({ min: 0, max: 1, noNaN: true })])(
    'shorter waits, or a longer heartbeat timeout, never turn an accepted configuration into a refused one',
    (v, share) => {
      fc.pre(timeoutProblems(v).length === 0);
      const shorter = {
        ...v,
        drainTimeoutSeconds: Math.floor(v.drainTimeoutSeconds * share),
        batchWaitSeconds: Math.floor(v.batchWaitSeconds * share),
        loadBalancerMinWaitSeconds: Math.floor(v.loadBalancerMinWaitSeconds * share),
      };
      expect(timeoutProblems(shorter)).toEqual([]);
      expect(
        timeoutProblems({ ...v, heartbeatTimeoutSeconds: Math.min(7200, v.heartbeatTimeoutSeconds + 60) }),
      ).toEqual([]);
    },
  );

  it('refuses a batch wait the deadlines would cut short to keep the minimum wait (found by the deadlines property)', () => {
    const env = {
      CLUSTER_NAME: 'prod',
      AUTO_SCALING_GROUP_NAMES: 'workers',
      LIFECYCLE_HOOK_NAMES: 'workers-terminate',
      HEARTBEAT_TIMEOUT_SECONDS: '31',
      INVOCATION_MARGIN_SECONDS: '1',
      LAUNCH_TIMEOUT_SECONDS: '30',
      LOAD_BALANCER_DELAY_SECONDS: '0',
      WAIT_FOR_TARGETS: 'true',
      LOAD_BALANCER_MIN_WAIT_SECONDS: '2',
      LOAD_BALANCER_MAX_WAIT_SECONDS: '2',
      DRAIN_TIMEOUT_SECONDS: '0',
      BATCH_WAIT_SECONDS: '3098',
      RECONCILE_MARKS: 'false',
    };
    expect(() => parseConfig(env)).toThrow(
      /BATCH_WAIT_SECONDS \(3098\) plus DRAIN_TIMEOUT_SECONDS, LOAD_BALANCER_MIN_WAIT_SECONDS \(with WAIT_FOR_TARGETS\)/,
    );
    expect(() => parseConfig({ ...env, BATCH_WAIT_SECONDS: '3097' })).not.toThrow();
  });
});
