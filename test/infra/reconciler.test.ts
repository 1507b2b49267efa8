// The reconciler's schedule, its settings in the drainer's environment, and the one write it
// needs on the groups: removing the refresh strategy tag.
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../lambda/shared/config.js';
import { refreshStrategyTag } from '../../lambda/shared/group-tags.js';
import type { GracefulNodeTerminationProps } from '../../infra/graceful-node-termination.js';
import { grantsOf, resourceNamed, resourcesOf, stackWith, type Resources } from './fixtures.js';

function schedules(resources: Resources) {
  return Object.values(resources).filter(
    (r) => r.Type === 'AWS::Events::Rule' && r.Properties['ScheduleExpression'] !== undefined,
  );
}

function drainerEnvironment(resources: Resources): Record<string, string> {
  const fn = Object.values(resources).find(
    (r) => r.Type === 'AWS::Lambda::Function' && r.Properties['Handler'] === 'index.handler',
  )!;
  return (fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables;
}

const withTopic = (env: Record<string, string>) => ({
  ...env,
  HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:Topic',
});

// The first synthesis in a worker bundles the Lambda (esbuild): give it room under load.
describe('the reconciler', { timeout: 120_000 }, () => {
  it('runs every 5 minutes by default: a schedule invoking the drainer, two retries, no event older than one interval', () => {
    const { stack, construct } = stackWith({});
    const resources = resourcesOf(stack);
    const [functionId] = resourceNamed(resources, /^GntFunction[0-9A-F]{8}$/);
    expect(schedules(resources)).toEqual([
      expect.objectContaining({
        Properties: expect.objectContaining({
          ScheduleExpression: 'rate(5 minutes)',
          State: 'ENABLED',
          Targets: [
            expect.objectContaining({
              Arn: { 'Fn::GetAtt': [functionId, 'Arn'] },
              RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 300 },
            }),
          ],
        }),
      }),
    ]);
    const config = parseConfig(withTopic(drainerEnvironment(resources)));
    expect(config.reconcileMarks).toBe(true);
    expect(config.deploymentName).toBe(construct.deploymentName);
    expect(drainerEnvironment(resources)).toMatchObject({
      RECONCILE_MARKS: 'true',
      DEPLOYMENT_NAME: construct.deploymentName,
    });
  });

  it('runs at the reconcileInterval given, from one minute to the longest the heartbeat timeout allows', () => {
    for (const [interval, heartbeat, expression, age] of [
      [Duration.minutes(1), Duration.minutes(30), 'rate(1 minute)', 60],
      [Duration.minutes(13), Duration.minutes(30), 'rate(13 minutes)', 780],
      [Duration.minutes(103), Duration.hours(2), 'rate(103 minutes)', 6180],
    ] as const) {
      const [rule] = schedules(
        resourcesOf(stackWith({ reconcileInterval: interval, heartbeatTimeout: heartbeat }).stack),
      );
      expect(rule!.Properties['ScheduleExpression']).toBe(expression);
      expect(rule!.Properties['Targets']).toEqual([
        expect.objectContaining({ RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: age } }),
      ]);
    }
  });

  it('refuses a reconcileInterval that is not whole minutes from one minute to one day', () => {
    for (const [interval, seconds] of [
      [Duration.seconds(30), 30],
      [Duration.seconds(90), 90],
      [Duration.days(2), 172_800],
    ] as const) {
      expect(() => stackWith({ reconcileInterval: interval })).toThrow(
        new RegExp(
          `reconcileInterval ${seconds} s is invalid: use whole minutes from Duration.minutes\\(1\\) to Duration.days\\(1\\)`,
        ),
      );
    }
  });

  // A drain whose hand-off chain was lost is resumed before the hooks' heartbeat timeout runs
  // out (lambda/shared/resume-window.ts; docs/limits.md): the schedule fits it, or synth fails.
  it('derives the schedule from a shorter heartbeat timeout, and tells the drainer', () => {
    for (const [heartbeat, expression, minutes] of [
      [Duration.minutes(15), 'rate(1 minute)', '1'],
      [Duration.minutes(20), 'rate(3 minutes)', '3'],
      [Duration.seconds(1270), 'rate(5 minutes)', '5'],
      [Duration.hours(2), 'rate(5 minutes)', '5'],
    ] as const) {
      const resources = resourcesOf(stackWith({ heartbeatTimeout: heartbeat }).stack);
      expect(schedules(resources)[0]!.Properties['ScheduleExpression']).toBe(expression);
      expect(drainerEnvironment(resources)['RECONCILE_INTERVAL_MINUTES']).toBe(minutes);
      // The cold start accepts what the synth made.
      expect(parseConfig(withTopic(drainerEnvironment(resources))).reconcileIntervalMinutes).toBe(Number(minutes));
    }
  });

  it('refuses a heartbeat timeout no schedule can resume in, and a schedule too long for the heartbeat timeout, naming the way out', () => {
    expect(() => stackWith({ heartbeatTimeout: Duration.minutes(5) })).toThrow(
      /heartbeatTimeout 300 s is too short for any reconcile schedule: .*Use a heartbeatTimeout of at least Duration.seconds\(750\), or reconcileMarks: false/,
    );
    expect(() => stackWith({ heartbeatTimeout: Duration.seconds(749) })).toThrow(/heartbeatTimeout 749 s is too short/);
    expect(() => stackWith({ reconcileInterval: Duration.minutes(14) })).toThrow(
      /reconcileInterval 14 min is too long for heartbeatTimeout 1800 s: .*Use a reconcileInterval of at most Duration.minutes\(13\), a heartbeatTimeout of at least Duration.seconds\(1810\), or reconcileMarks: false/,
    );
    expect(() => stackWith({ reconcileInterval: Duration.days(1), heartbeatTimeout: Duration.hours(2) })).toThrow(
      /at most Duration.minutes\(103\)/,
    );
    // The escape: without the reconciler nothing is promised, and a short heartbeat timeout is the deployer's to choose.
    expect(
      schedules(resourcesOf(stackWith({ heartbeatTimeout: Duration.minutes(5), reconcileMarks: false }).stack)),
    ).toEqual([]);
  });

  it('with reconcileMarks false: no schedule, RECONCILE_MARKS=false, and no DeleteTags', () => {
    const resources = resourcesOf(stackWith({ reconcileMarks: false }).stack);
    expect(schedules(resources)).toEqual([]);
    expect(drainerEnvironment(resources)['RECONCILE_MARKS']).toBe('false');
    expect(parseConfig(withTopic(drainerEnvironment(resources))).reconcileMarks).toBe(false);
    expect(grantsOf(resources, 'autoscaling:DeleteTags')).toEqual([]);
  });

  it('may delete only the refresh strategy tag, only on the served groups', () => {
    const props: Partial<GracefulNodeTerminationProps> = { autoScalingGroupNames: ['nodes-a', 'nodes-b'] };
    const resources = resourcesOf(stackWith(props).stack);
    const [lifecycle] = grantsOf(resources, 'autoscaling:CompleteLifecycleAction');
    expect(grantsOf(resources, 'autoscaling:DeleteTags')).toEqual([
      {
        Action: 'autoscaling:DeleteTags',
        Effect: 'Allow',
        // The same ARNs as the lifecycle grant: the served groups by exact name.
        Resource: lifecycle!.Resource,
        Condition: { 'ForAllValues:StringEquals': { 'aws:TagKeys': [refreshStrategyTag] } },
      },
    ]);
    expect(lifecycle!.Resource).toHaveLength(2);
  });

  it("can resume a lost drain: the drainer may still publish to the hooks' topic", () => {
    const resources = resourcesOf(stackWith({}).stack);
    const [topicId] = resourceNamed(resources, /^GntTopic[0-9A-F]{8}$/);
    const [, drainerPolicy] = resourceNamed(resources, 'GntRoleDefaultPolicy');
    expect((drainerPolicy.Properties['PolicyDocument'] as { Statement: unknown[] }).Statement).toContainEqual({
      Action: 'sns:Publish',
      Effect: 'Allow',
      Resource: { Ref: topicId },
    });
  });
});
