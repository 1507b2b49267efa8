// The repair prop: REPAIR as the handler parses it, the RepairsHeld alarm, and the least the
// handler needs from IAM: SetInstanceHealth on the served groups only, RebootInstances only
// with a Reboot rule and only on instances Auto Scaling tagged with a served group; nothing
// of either without repair.
import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../lambda/shared/config.js';
import { RepairAction } from '../../infra/graceful-node-termination.js';
import { grantsOf, resourcesOf, stackWith, synthWithNag } from './fixtures.js';

const envOf = (stack: Parameters<typeof resourcesOf>[0]) => {
  const fn = Object.values(resourcesOf(stack)).find(
    (r) => r.Type === 'AWS::Lambda::Function' && JSON.stringify(r.Properties).includes('CLUSTER_NAME'),
  )!;
  return (fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables;
};

describe('the repair prop', { timeout: 120_000 }, () => {
  it('is off by default: no REPAIR, no SetInstanceHealth, no RebootInstances, no RepairsHeld alarm', () => {
    const { stack } = stackWith({});
    const resources = resourcesOf(stack);
    expect(envOf(stack)['REPAIR']).toBeUndefined();
    expect(grantsOf(resources, 'autoscaling:SetInstanceHealth')).toEqual([]);
    expect(grantsOf(resources, 'ec2:RebootInstances')).toEqual([]);
    expect(JSON.stringify(resources)).not.toContain('RepairsHeld');
  });

  it('writes REPAIR as the handler parses it, and grants SetInstanceHealth on the served groups only', () => {
    const { stack } = stackWith({
      autoScalingGroupNames: ['nodes-a', 'nodes-b'],
      repair: { maxParallelCount: 2, repairAfter: { Ready: Duration.minutes(15) } },
    });
    const env = envOf(stack);
    const config = parseConfig({
      ...Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string')),
      AUTO_SCALING_GROUP_NAMES: 'nodes-a,nodes-b',
      HAND_OFF_TOPIC_ARN: '',
    });
    expect(config.repair).toMatchObject({
      maxParallel: { count: 2 },
      repairAfterMinutes: { Ready: 15, AcceleratedHardwareReady: 10 },
    });
    const [grant, ...more] = grantsOf(resourcesOf(stack), 'autoscaling:SetInstanceHealth');
    expect(more).toEqual([]);
    expect(JSON.stringify(grant!.Resource)).toMatch(/autoScalingGroupName\/nodes-a.*autoScalingGroupName\/nodes-b/);
    expect(JSON.stringify(grant!.Resource)).not.toContain('"*"');
    expect(grantsOf(resourcesOf(stack), 'ec2:RebootInstances')).toEqual([]);
    Template.fromStack(stack).hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp('-RepairsHeld$'),
    });
  });

  it('grants RebootInstances with a Reboot rule, only on instances tagged with a served group', () => {
    const { stack } = stackWith({
      repair: {
        overrides: [
          {
            condition: 'AcceleratedHardwareReady',
            reason: 'NvidiaXID64Error',
            action: RepairAction.REBOOT,
            minRepairWait: Duration.minutes(5),
          },
        ],
      },
    });
    const [reboot] = grantsOf(resourcesOf(stack), 'ec2:RebootInstances');
    expect(reboot?.Condition).toEqual({ StringEquals: { 'aws:ResourceTag/aws:autoscaling:groupName': ['nodes-a'] } });
  });

  it('passes cdk-nag with a Reboot rule: the instance wildcard is acknowledged with its tag condition', () => {
    const { app } = stackWith({
      repair: {
        overrides: [
          {
            condition: 'AcceleratedHardwareReady',
            reason: 'NvidiaXID64Error',
            action: RepairAction.REBOOT,
            minRepairWait: Duration.minutes(5),
          },
        ],
      },
    });
    expect(() => synthWithNag(app)).not.toThrow();
  });

  it('refuses what the handler would refuse, with the reason, and repair without the reconciler', () => {
    expect(() => stackWith({ repair: { maxParallelCount: 1, maxParallelPercentage: 10 } })).toThrow(
      /repair: .*exclude each other/,
    );
    expect(() => stackWith({ repair: { maxUnhealthyPercentage: 150 } })).toThrow(/from 1 to 100/);
    expect(() => stackWith({ repair: {}, reconcileMarks: false })).toThrow(/needs reconcileMarks/);
  });
});
