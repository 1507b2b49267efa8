// The construct checks its props at synth with the rule the handler checks at cold start (infra/settings.ts,
// lambda/shared/config-checks.ts): for generated timeouts both accept or both refuse, so nothing the construct
// deploys fails its initialisation, and nothing it refuses would have run.
import { fc, test } from '@fast-check/vitest';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { describe, expect } from 'vitest';
import { parseConfig } from '../../lambda/shared/config.js';
import { invocationMarginSeconds } from '../../infra/prop-checks.js';
import { resolveSettings } from '../../infra/settings.js';

const timesArb = fc.record({
  heartbeat: fc.integer({ min: 30, max: 7200 }),
  drain: fc.integer({ min: 0, max: 20_000 }),
  batch: fc.integer({ min: 0, max: 20_000 }),
  delay: fc.integer({ min: 0, max: 3600 }),
  waitForTargets: fc.boolean(),
  minWait: fc.integer({ min: 0, max: 3600 }),
});

describe('the construct and the cold start agree on the timeouts (property)', () => {
  test.prop([timesArb])('both accept or both refuse', (t) => {
    const stack = new Stack(new App(), 'Test');
    const launch = Math.max(30, Math.min(600, t.heartbeat - invocationMarginSeconds));
    const construct = () =>
      resolveSettings(stack, {
        clusterName: 'prod',
        autoScalingGroupNames: ['workers'],
        heartbeatTimeout: Duration.seconds(t.heartbeat),
        launchTimeout: Duration.seconds(launch),
        drainTimeout: Duration.seconds(t.drain),
        batchWait: Duration.seconds(t.batch),
        loadBalancerDelay: Duration.seconds(t.delay),
        waitForTargets: t.waitForTargets,
        loadBalancerMinWait: Duration.seconds(t.minWait),
        loadBalancerMaxWait: Duration.seconds(3600),
        reconcileMarks: false,
      });
    const coldStart = () =>
      parseConfig({
        CLUSTER_NAME: 'prod',
        AUTO_SCALING_GROUP_NAMES: 'workers',
        LIFECYCLE_HOOK_NAMES: 'workers-terminate',
        HEARTBEAT_TIMEOUT_SECONDS: String(t.heartbeat),
        LAUNCH_TIMEOUT_SECONDS: String(launch),
        DRAIN_TIMEOUT_SECONDS: String(t.drain),
        BATCH_WAIT_SECONDS: String(t.batch),
        LOAD_BALANCER_DELAY_SECONDS: String(t.delay),
        WAIT_FOR_TARGETS: String(t.waitForTargets),
        LOAD_BALANCER_MIN_WAIT_SECONDS: String(t.minWait),
        LOAD_BALANCER_MAX_WAIT_SECONDS: '3600',
        RECONCILE_MARKS: 'false',
      });
    const refused = (f: () => unknown) => {
      try {
        f();
        return false;
      } catch {
        return true;
      }
    };
    expect(refused(construct)).toBe(refused(coldStart));
  });
});
