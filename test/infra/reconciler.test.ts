// The reconciler's schedule, its settings in the drainer's environment, and the one write it
// needs on the groups: removing the refresh strategy tag.
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../lambda/shared/config.js';
import { refreshStrategyTag } from '../../lambda/shared/group-tags.js';
import type { GracefulNodeTerminationProps } from '../../infra/graceful-node-termination.js';
import { grantsOf, resourceNamed, resourcesOf, stackWith, type Resources } from './fixtures.js';

function schedules(resources: Resources) {
  return Object.values(resources).filter((r) => r.Type === 'AWS::Events::Rule' && r.Properties['ScheduleExpression'] !== undefined);
}

function drainerEnvironment(resources: Resources): Record<string, string> {
  const fn = Object.values(resources).find((r) => r.Type === 'AWS::Lambda::Function' && r.Properties['Handler'] === 'index.handler')!;
  return (fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables;
}

const withTopic = (env: Record<string, string>) => ({ ...env, HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:Topic' });

// The first synthesis in a worker bundles the Lambda (esbuild): give it room under load.
describe('the reconciler', { timeout: 30_000 }, () => {
  it('runs every 5 minutes by default: a schedule invoking the drainer, two retries, no event older than one interval', () => {
    const { stack, construct } = stackWith({});
    const resources = resourcesOf(stack);
    const [functionId] = resourceNamed(resources, /^GntFunction[0-9A-F]{8}$/);
    expect(schedules(resources)).toEqual([
      expect.objectContaining({
        Properties: expect.objectContaining({
          ScheduleExpression: 'rate(5 minutes)',
          State: 'ENABLED',
          Targets: [expect.objectContaining({ Arn: { 'Fn::GetAtt': [functionId, 'Arn'] }, RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 300 } })],
        }),
      }),
    ]);
    const config = parseConfig(withTopic(drainerEnvironment(resources)));
    expect(config.reconcileMarks).toBe(true);
    expect(config.deploymentName).toBe(construct.deploymentName);
    expect(drainerEnvironment(resources)).toMatchObject({ RECONCILE_MARKS: 'true', DEPLOYMENT_NAME: construct.deploymentName });
  });

  it('runs at the reconcileInterval given, from one minute to one day', () => {
    for (const [interval, expression, age] of [
      [Duration.minutes(1), 'rate(1 minute)', 60],
      [Duration.minutes(30), 'rate(30 minutes)', 1800],
      [Duration.days(1), 'rate(1 day)', 86_400],
    ] as const) {
      const [rule] = schedules(resourcesOf(stackWith({ reconcileInterval: interval }).stack));
      expect(rule!.Properties['ScheduleExpression']).toBe(expression);
      expect(rule!.Properties['Targets']).toEqual([expect.objectContaining({ RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: age } })]);
    }
  });

  it('refuses a reconcileInterval that is not whole minutes from one minute to one day', () => {
    for (const [interval, seconds] of [
      [Duration.seconds(30), 30],
      [Duration.seconds(90), 90],
      [Duration.days(2), 172_800],
    ] as const) {
      expect(() => stackWith({ reconcileInterval: interval })).toThrow(
        new RegExp(`reconcileInterval ${seconds} s is invalid: use whole minutes from Duration.minutes\\(1\\) to Duration.days\\(1\\)`),
      );
    }
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
