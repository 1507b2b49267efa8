// The app's context (`cdk deploy -c key=value`): every option of the one definition
// (infra/options/) under its camelCase key, each value checked with the key, the value and what
// is expected named; unknown keys refused with the nearest known ones; aws-cdk's own keys let
// through; nothing synthesized without an explicit cluster and groups.
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../infra/app.js';
import { ContextError, deployCommand, optionProps, readOptions } from '../../infra/options/context.js';
import { contextKey } from '../../infra/options/option.js';
import { allOptions } from '../../infra/options/options.js';
import { propertyCoverage } from '../../infra/release-coverage.js';
import { withOptionsTable } from '../../scripts/config-table.js';
import { exampleContext, exampleStack, root, type Resources } from './fixtures.js';

/** A value for every option that is not its default, as a deployer would pass it. */
const samples: Record<string, string> = {
  ClusterName: 'prod',
  AutoScalingGroupNames: 'workers-a,workers-b',
  DeploymentName: 'gnt-prod',
  KubernetesGroup: 'platform-drainers',
  ManageKubernetesAccess: 'false',
  Mode: 'observe',
  HeartbeatTimeoutSeconds: '3600',
  DrainTimeoutSeconds: '1200',
  DeadlinePolicy: 'leave',
  RetentionSetOutside: 'true',
  BatchWaitSeconds: '600',
  MinEvictionWindowSeconds: '90',
  DrainRules: '[{"name":"keep-agents","behavior":"Skip","pods":[{"selector":{"matchLabels":{"app":"agent"}}}]}]',
  EvictDaemonSetPods: 'true',
  CordonDoomedSiblings: 'false',
  EvictionConcurrency: '16',
  LaunchTimeoutSeconds: '420',
  WaitForTargets: 'false',
  LoadBalancerMinWaitSeconds: '10',
  LoadBalancerMaxWaitSeconds: '200',
  LoadBalancerDelaySeconds: '45',
  LoadBalancerTags: 'team=platform,shared-lb',
  WaitForVolumeDetach: 'false',
  OutOfServiceAfterRelease: 'false',
  SurgeBeforeEvict: 'true',
  SurgeNamespaces: 'web,api',
  SurgePodSelector: 'tier=frontend',
  SurgeTimeoutSeconds: '240',
  SurgeUntouchableManagers: 'argocd-controller',
  SpotInterruptions: 'true',
  MarkOutdatedOnRefresh: 'false',
  ReconcileMarks: 'true',
  ReconcileIntervalMinutes: '7',
  Repair: '{"maxParallelNodesRepairedCount":2}',
  TerminationDeferralMaxSeconds: '600',
  MaintenanceWindows: '0 22 * * MON-FRI for 6h; 0 0 * * SAT for 24h',
  MaintenanceTimeZone: 'Europe/Paris',
  TerminationPolicyServiceLinkedRoleArn:
    'arn:aws:iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling_eks',
  AlarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:oncall',
  AlarmEmail: 'oncall@example.com',
  RunbookUrl: 'https://wiki.internal/runbooks/gnt',
  Dashboard: 'true',
  SubnetIds: 'subnet-0123456789abcdef0,subnet-0123456789abcdef1',
  SecurityGroupIds: 'sg-0123456789abcdef0',
  MemorySizeMiB: '512',
  ReservedConcurrency: '20',
  LogRetentionDays: '90',
  RemovalPolicy: 'retain',
  PermissionsBoundaryArn: 'arn:aws:iam::123456789012:policy/boundary',
  RolePath: '/platform/',
};
const everything = Object.fromEntries(Object.entries(samples).map(([name, value]) => [contextKey(name), value]));

const appWith = (context: Record<string, unknown>) => new App({ context });
const errorOf = (context: Record<string, unknown>): string => {
  try {
    readOptions(appWith(context));
  } catch (error) {
    expect(error).toBeInstanceOf(ContextError);
    return (error as Error).message;
  }
  throw new Error('the context was accepted');
};
const drainerEnvironment = (context: Record<string, string>): Record<string, string> => {
  const resources = Template.fromStack(exampleStack(context).stack).toJSON()['Resources'] as Resources;
  const drainer = Object.values(resources).find((r) => r.Properties['Handler'] === 'index.handler')!;
  return (drainer.Properties['Environment'] as { Variables: Record<string, string> }).Variables;
};

describe('the app context', () => {
  it('has a sample for every option, each accepted', () => {
    expect(Object.keys(samples).sort()).toEqual(allOptions.map((o) => o.name).sort());
    expect(readOptions(appWith(everything)).size).toBe(allOptions.length);
  });

  it('makes of each option the props its parameter stands for in the template (release-coverage.ts)', () => {
    const values = readOptions(appWith(everything));
    const stack = exampleStack().stack;
    for (const [o, value] of values) {
      const covering = Object.entries(propertyCoverage)
        .filter(([, c]) => 'parameters' in c && (c.parameters as readonly string[]).includes(o.name))
        .map(([prop]) => prop);
      const keys = Object.keys(optionProps(new Map([[o, value]]), stack));
      expect(keys.length, o.name).toBeGreaterThan(0);
      for (const key of keys) expect(covering, `${o.name} sets ${key}`).toContain(key);
    }
  });

  it('synthesizes with every option set at once', () => {
    const env = drainerEnvironment({ ...everything, deadlinePolicy: 'retain' });
    expect(env).toMatchObject({
      CLUSTER_NAME: 'prod',
      AUTO_SCALING_GROUP_NAMES: 'workers-a,workers-b',
      MODE: 'observe',
      DRAIN_TIMEOUT_SECONDS: '1200',
      DEADLINE_POLICY: 'retain',
      LOAD_BALANCER_TAGS: 'team=platform,shared-lb',
      SURGE_NAMESPACES: 'web,api',
      SURGE_POD_SELECTOR: 'tier=frontend',
      EVICT_DAEMONSET_PODS: 'true',
      RECONCILE_INTERVAL_MINUTES: '7',
      MAINTENANCE_TIME_ZONE: 'Europe/Paris',
    });
  });

  it('gives MODE=observe for -c mode=observe', () => {
    expect(drainerEnvironment({ ...exampleContext, mode: 'observe' })['MODE']).toBe('observe');
    expect(drainerEnvironment(exampleContext)['MODE']).toBe('enforce');
  });

  it('refuses to synthesize without the cluster and its groups, and says the command', () => {
    const message = errorOf({});
    expect(message).toContain('clusterName is required');
    expect(message).toContain('autoScalingGroupNames is required');
    expect(message).toContain(deployCommand);
    expect(errorOf({ autoScalingGroupNames: 'a' })).toMatch(/^ {2}clusterName is required/m);
    expect(errorOf({ clusterName: 'prod' })).toMatch(/^ {2}autoScalingGroupNames is required/m);
  });

  it('refuses an unknown key, naming the nearest known ones', () => {
    expect(errorOf({ ...exampleContext, frobnicate: '1' })).toMatch(
      /frobnicate is not an option \(nearest: \w+, \w+, \w+\)/,
    );
    expect(errorOf({ ...exampleContext, alarmEmal: 'a@b.c' })).toMatch(
      /alarmEmal is not an option \(nearest: alarmEmail,/,
    );
    expect(errorOf({ ...exampleContext, DrainTimeoutSeconds: '60' })).toMatch(/nearest: drainTimeoutSeconds,/);
  });

  it("lets aws-cdk's own keys through: its settings, feature flags, cached lookups and notices", () => {
    const cdkOwn = {
      'aws:cdk:enable-path-metadata': true,
      'aws:cdk:bundling-stacks': ['**'],
      '@aws-cdk/core:enableStackNameDuplicates': true,
      '@aws-cdk-containers/ecs-service-extensions:enableDefaultLogDriver': true,
      'availability-zones:account=123456789012:region=eu-west-1': ['eu-west-1a'],
      'acknowledged-issue-numbers': [32775],
      'cdk-migrate': true,
    };
    expect(() => readOptions(appWith({ ...exampleContext, ...cdkOwn, stackName: 'Gnt' }))).not.toThrow();
  });

  it.each([
    ['drainTimeoutSeconds', 'abc', 'a whole number of seconds from 0 to 172800'],
    ['drainTimeoutSeconds', '172801', 'a whole number of seconds from 0 to 172800'],
    ['reconcileMarks', 'yes', 'true or false'],
    ['mode', 'Observe', 'enforce, observe'],
    ['reconcileIntervalMinutes', '1441', 'a whole number of minutes from 1 to 1440'],
    ['reconcileIntervalMinutes', '1.5', 'a whole number of minutes from 1 to 1440'],
    ['alarmEmail', 'oncall', 'an e-mail address'],
    ['subnetIds', 'subnet-1,,subnet-2', 'subnet ids, comma-separated'],
    ['drainRules', '[{"name":"x","behavior":"Evict"}]', 'a JSON list of'],
    ['kubernetesGroup', 'system:masters', 'a Kubernetes group that does not start with "system:"'],
    ['logRetentionDays', '31', 'one of 1, 3, 5'],
  ])('refuses -c %s=%s, saying what it expects', (key, value, expected) => {
    expect(errorOf({ ...exampleContext, [key]: value })).toContain(`${key}=${value} is invalid: expected ${expected}`);
  });

  it('refuses an option without the one it needs', () => {
    expect(errorOf({ ...exampleContext, surgeNamespaces: 'web' })).toContain(
      'surgeNamespaces needs surgeBeforeEvict=true',
    );
    expect(errorOf({ ...exampleContext, subnetIds: 'subnet-0a' })).toContain('subnetIds needs securityGroupIds');
    expect(() =>
      readOptions(appWith({ ...exampleContext, surgeBeforeEvict: 'true', surgeNamespaces: 'web' })),
    ).not.toThrow();
  });

  it('passes reconcileMarks and reconcileIntervalMinutes on, as before', () => {
    const ruleOf = (context: Record<string, string>) =>
      Object.values(
        Template.fromStack(exampleStack({ ...exampleContext, ...context }).stack).findResources('AWS::Events::Rule'),
      )
        .map((r) => (r as { Properties: Record<string, unknown> }).Properties['ScheduleExpression'])
        .filter((e) => e !== undefined);
    expect(ruleOf({})).toEqual(['rate(5 minutes)']);
    expect(ruleOf({ reconcileIntervalMinutes: '10' })).toEqual(['rate(10 minutes)']);
    expect(ruleOf({ reconcileMarks: 'false' })).toEqual([]);
    expect(drainerEnvironment({ ...exampleContext, reconcileMarks: 'false' })['RECONCILE_MARKS']).toBe('false');
  });

  it('reads cdk.json values as -c values: lists, numbers and booleans', () => {
    const env = drainerEnvironment({
      ...exampleContext,
      autoScalingGroupNames: ['a', 'b'] as unknown as string,
      drainTimeoutSeconds: 600 as unknown as string,
      spotInterruptions: true as unknown as string,
    });
    expect(env).toMatchObject({
      AUTO_SCALING_GROUP_NAMES: 'a,b',
      DRAIN_TIMEOUT_SECONDS: '600',
      SPOT_INTERRUPTIONS: 'true',
    });
  });

  it('are listed in docs/deploy.md as npm run docs generates them', () => {
    const page = readFileSync(join(root, 'docs', 'deploy.md'), 'utf8');
    expect(page).toBe(withOptionsTable(page));
    for (const o of allOptions) expect(page).toContain(`| \`${contextKey(o.name)}\` |`);
  });

  it('is given the example cluster and groups by npm run synth, and cdk.json gives no default', () => {
    const synth = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts['synth']!;
    for (const [key, value] of Object.entries(exampleContext)) expect(synth).toContain(`-c ${key}=${value}`);
    expect(JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8'))).not.toHaveProperty('context');
    expect(() => buildApp(new App())).toThrow(ContextError);
  });
});
