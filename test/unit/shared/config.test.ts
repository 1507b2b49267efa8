import { describe, expect, it } from 'vitest';
import { configVariables, parseConfig, toEnvironment } from '../../../lambda/shared/config.js';
import { ConfigError } from '../../../lambda/shared/errors.js';

const minimal = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers-a, workers-b',
  LIFECYCLE_HOOK_NAMES: 'workers-a-terminate,workers-a-launch',
};

describe('parseConfig', () => {
  it('applies the documented defaults', () => {
    const config = parseConfig(minimal);
    expect(config).toEqual({
      clusterName: 'prod',
      autoScalingGroupNames: new Set(['workers-a', 'workers-b']),
      lifecycleHookNames: new Set(['workers-a-terminate', 'workers-a-launch']),
      drainTimeoutSeconds: 900,
      loadBalancerDelaySeconds: 60,
      waitForTargets: true,
      loadBalancerMinWaitSeconds: 5,
      loadBalancerMaxWaitSeconds: 300,
      loadBalancerTags: undefined,
      waitForVolumeDetach: true,
      invocationMarginSeconds: 20,
      evictionConcurrency: 32,
      launchTimeoutSeconds: 600,
      batchWaitSeconds: 3600,
      deadlinePolicy: 'force',
      minEvictionWindowSeconds: 60,
      mode: 'enforce',
      cordonDoomedSiblings: true,
      markOutdatedOnRefresh: true,
      blockedReportSeconds: 120,
      heartbeatTimeoutSeconds: 1800,
      handOffTopicArn: undefined,
      deploymentName: 'graceful-node-termination',
      reconcileMarks: true,
      reconcileIntervalMinutes: 5,
      spotInterruptions: true,
      surgeBeforeEvict: false,
      surgeTimeoutSeconds: 300,
      kubeconfigPath: undefined,
      kubeconfigContext: undefined,
      terminationDeferralMaxSeconds: 300,
      maintenanceWindows: undefined,
      maintenanceTimeZone: 'UTC',
      outOfServiceAfterRelease: true,
      drainRules: [],
      evictDaemonSetPods: false,
    });
  });

  it('reads more load-balancer tags, a key alone matching any value, and refuses a minimum above the maximum', () => {
    const config = parseConfig({ ...minimal, LOAD_BALANCER_TAGS: 'team=web, owned-by-ops ,env=' });
    expect(config.loadBalancerTags).toEqual(
      new Map<string, string | undefined>([
        ['team', 'web'],
        ['owned-by-ops', undefined],
        ['env', ''],
      ]),
    );
    expect(() => parseConfig({ ...minimal, LOAD_BALANCER_TAGS: '=x' })).toThrow(/LOAD_BALANCER_TAGS="=x" is invalid/);
    expect(() =>
      parseConfig({ ...minimal, LOAD_BALANCER_MIN_WAIT_SECONDS: '60', LOAD_BALANCER_MAX_WAIT_SECONDS: '30' }),
    ).toThrow(/LOAD_BALANCER_MIN_WAIT_SECONDS \(60\) must not exceed LOAD_BALANCER_MAX_WAIT_SECONDS \(30\)/);
  });

  it('accepts a load-balancer delay of 0', () => {
    expect(parseConfig({ ...minimal, LOAD_BALANCER_DELAY_SECONDS: '0' }).loadBalancerDelaySeconds).toBe(0);
  });

  it('fails with one error naming every bad variable and what it accepts', () => {
    let error: unknown;
    try {
      parseConfig({
        AUTO_SCALING_GROUP_NAMES: ' , ',
        DRAIN_TIMEOUT_SECONDS: '15m',
        LOAD_BALANCER_DELAY_SECONDS: '-1',
        EVICTION_CONCURRENCY: '0',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toEqual([
      'CLUSTER_NAME is required (a non-empty cluster name)',
      'AUTO_SCALING_GROUP_NAMES=" , " is invalid: expected a comma-separated list of group names',
      'LIFECYCLE_HOOK_NAMES is required (a comma-separated list of hook names)',
      'DRAIN_TIMEOUT_SECONDS="15m" is invalid: expected an integer from 0 to 172800',
      'LOAD_BALANCER_DELAY_SECONDS="-1" is invalid: expected an integer from 0 to 3600',
      'EVICTION_CONCURRENCY="0" is invalid: expected an integer from 1 to 256',
    ]);
    expect((error as Error).message).toContain('DRAIN_TIMEOUT_SECONDS');
  });

  it('round-trips through toEnvironment, the function the CDK construct uses', () => {
    const env = toEnvironment({
      clusterName: 'prod',
      autoScalingGroupNames: ['a', 'b'],
      lifecycleHookNames: ['a-terminate'],
      drainTimeoutSeconds: 600,
      loadBalancerDelaySeconds: 0,
    });
    expect(env).toEqual({
      CLUSTER_NAME: 'prod',
      AUTO_SCALING_GROUP_NAMES: 'a,b',
      LIFECYCLE_HOOK_NAMES: 'a-terminate',
      DRAIN_TIMEOUT_SECONDS: '600',
      LOAD_BALANCER_DELAY_SECONDS: '0',
    });
    expect(parseConfig(env)).toMatchObject({ drainTimeoutSeconds: 600, loadBalancerDelaySeconds: 0 });
  });

  it('documents every variable', () => {
    for (const v of Object.values(configVariables)) {
      expect(v.name).toMatch(/^[A-Z_]+$/);
      expect(v.description.length).toBeGreaterThan(10);
    }
  });
});

// docs/cloudformation.md: CloudFormation cannot compare parameters, so the handler refuses at
// cold start what the construct refuses at synth.
describe('parseConfig: the timeouts checked against each other', () => {
  const withHandOffs = { ...minimal, HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:lifecycle' };

  it('accepts the defaults, with or without hand-offs and the reconciler', () => {
    for (const env of [minimal, withHandOffs, { ...withHandOffs, RECONCILE_MARKS: 'false' }])
      expect(parseConfig(env).heartbeatTimeoutSeconds).toBe(1800);
  });

  it('refuses a launch wait that does not fit the heartbeat timeout with the margin (it does not heartbeat)', () => {
    expect(() => parseConfig({ ...minimal, HEARTBEAT_TIMEOUT_SECONDS: '60', LAUNCH_TIMEOUT_SECONDS: '600' })).toThrow(
      /LAUNCH_TIMEOUT_SECONDS \(600\) plus INVOCATION_MARGIN_SECONDS \(20\) exceeds HEARTBEAT_TIMEOUT_SECONDS \(60\): the launch wait does not heartbeat; use LAUNCH_TIMEOUT_SECONDS of at most 40 or a longer HEARTBEAT_TIMEOUT_SECONDS/,
    );
    expect(
      parseConfig({ ...minimal, HEARTBEAT_TIMEOUT_SECONDS: '600', LAUNCH_TIMEOUT_SECONDS: '580' }).launchTimeoutSeconds,
    ).toBe(580);
    expect(() => parseConfig({ ...minimal, HEARTBEAT_TIMEOUT_SECONDS: '600', LAUNCH_TIMEOUT_SECONDS: '581' })).toThrow(
      /LAUNCH_TIMEOUT_SECONDS \(581\)/,
    );
    // The margin is the one configured.
    expect(
      parseConfig({
        ...minimal,
        HEARTBEAT_TIMEOUT_SECONDS: '60',
        LAUNCH_TIMEOUT_SECONDS: '55',
        INVOCATION_MARGIN_SECONDS: '5',
      }).launchTimeoutSeconds,
    ).toBe(55);
  });

  it("refuses a drain, with the delay and the margin, longer than the action's cap min(48 h, 100 x heartbeat)", () => {
    const short = {
      ...minimal,
      HEARTBEAT_TIMEOUT_SECONDS: '60',
      LAUNCH_TIMEOUT_SECONDS: '30',
      BATCH_WAIT_SECONDS: '0',
    };
    expect(() => parseConfig({ ...short, DRAIN_TIMEOUT_SECONDS: '5921' })).toThrow(
      /DRAIN_TIMEOUT_SECONDS \(5921\) plus LOAD_BALANCER_DELAY_SECONDS \(60\) and INVOCATION_MARGIN_SECONDS \(20\) exceeds .*\(min\(48 h, 100 x HEARTBEAT_TIMEOUT_SECONDS\) = 6000 s\): use DRAIN_TIMEOUT_SECONDS of at most 5920/,
    );
    expect(parseConfig({ ...short, DRAIN_TIMEOUT_SECONDS: '5920' }).drainTimeoutSeconds).toBe(5920);
    expect(() =>
      parseConfig({
        ...minimal,
        HEARTBEAT_TIMEOUT_SECONDS: '7200',
        DRAIN_TIMEOUT_SECONDS: '172800',
        BATCH_WAIT_SECONDS: '0',
      }),
    ).toThrow(/= 172800 s\)/);
  });

  it('refuses a batch wait that, with the drain, the delay and the margin, outlasts the cap', () => {
    const short = { ...minimal, HEARTBEAT_TIMEOUT_SECONDS: '60', LAUNCH_TIMEOUT_SECONDS: '30' };
    expect(() => parseConfig({ ...short, BATCH_WAIT_SECONDS: '5021' })).toThrow(
      /BATCH_WAIT_SECONDS \(5021\) plus DRAIN_TIMEOUT_SECONDS, LOAD_BALANCER_DELAY_SECONDS and INVOCATION_MARGIN_SECONDS exceeds .*\(6000 s\): use BATCH_WAIT_SECONDS of at most 5020/,
    );
    expect(parseConfig({ ...short, BATCH_WAIT_SECONDS: '5020' }).batchWaitSeconds).toBe(5020);
  });

  it('names every mismatch in one error, and skips a check whose variable is itself invalid', () => {
    const error = (() => {
      try {
        parseConfig({ ...withHandOffs, HEARTBEAT_TIMEOUT_SECONDS: '60', DRAIN_TIMEOUT_SECONDS: '7200' });
      } catch (e) {
        return e as Error;
      }
      throw new Error('accepted');
    })();
    expect(error.message).toMatch(
      /LAUNCH_TIMEOUT_SECONDS \(600\).*DRAIN_TIMEOUT_SECONDS \(7200\).*HEARTBEAT_TIMEOUT_SECONDS \(60\) lets Auto Scaling end an action/,
    );
    expect(() => parseConfig({ ...minimal, HEARTBEAT_TIMEOUT_SECONDS: 'soon' })).toThrow(
      /^(?!.*exceeds).*HEARTBEAT_TIMEOUT_SECONDS="soon" is invalid/,
    );
  });
});

describe('the configuration page', () => {
  it('shows every variable the handler reads, generated from their one definition (npm run docs)', async () => {
    const { readFileSync } = await import('node:fs');
    const { withTable } = await import('../../../scripts/config-table.js');
    const page = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
    expect(page).toBe(withTable(page));
    for (const v of Object.values(configVariables)) expect(page).toContain(`| \`${v.name}\` |`);
  });
});
