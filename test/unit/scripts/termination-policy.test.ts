import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeLifecycleHooksCommand,
  UpdateAutoScalingGroupCommand,
} from '@aws-sdk/client-auto-scaling';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { applyPolicy, planPolicy, plannedPolicies, renderPolicyPlan } from '../../../scripts/termination-policy.js';

const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:gnt-drainer';
const other = 'arn:aws:lambda:eu-west-1:123456789012:function:someone-else';

describe('termination-policy enable and disable', () => {
  const asg = mockClient(AutoScalingClient);
  afterEach(() => asg.reset());

  it('enable puts the function first and keeps the group policies after it; disable takes only it out', () => {
    expect(plannedPolicies('enable', ['OldestLaunchTemplate', 'Default'], arn)).toEqual([
      arn,
      'OldestLaunchTemplate',
      'Default',
    ]);
    expect(plannedPolicies('enable', [arn, 'Default'], arn)).toEqual([arn, 'Default']);
    expect(plannedPolicies('enable', [], arn)).toEqual([arn, 'Default']);
    expect(plannedPolicies('disable', [arn, 'OldestLaunchTemplate'], undefined)).toEqual(['OldestLaunchTemplate']);
    expect(plannedPolicies('disable', [arn], undefined)).toEqual(['Default']);
    expect(() => plannedPolicies('enable', [other, 'Default'], arn)).toThrow(/another custom termination policy/);
  });

  it('plans, then changes the group with UpdateAutoScalingGroup only when approved', async () => {
    asg.on(DescribeAutoScalingGroupsCommand).resolves({
      AutoScalingGroups: [{ AutoScalingGroupName: 'workers', TerminationPolicies: ['Default'] } as never],
    });
    asg.on(DescribeLifecycleHooksCommand).resolves({ LifecycleHooks: [] });
    asg.on(UpdateAutoScalingGroupCommand).resolves({});
    const client = new AutoScalingClient({ region: 'eu-west-1' });
    const plan = await planPolicy(client, 'enable', 'workers', arn);
    expect(plan).toMatchObject({ before: ['Default'], after: [arn, 'Default'], changes: true, applied: false });
    expect(renderPolicyPlan(plan)).toContain('warning: no deployment of ours has lifecycle hooks on this group');
    expect(asg.commandCalls(UpdateAutoScalingGroupCommand)).toHaveLength(0);
    expect((await applyPolicy(client, plan)).applied).toBe(true);
    expect(asg.commandCalls(UpdateAutoScalingGroupCommand)[0]!.args[0].input).toEqual({
      AutoScalingGroupName: 'workers',
      TerminationPolicies: [arn, 'Default'],
    });
  });
});
