import {
  AutoScalingClient,
  AutoScalingServiceException,
  CompleteLifecycleActionCommand,
  DescribeAutoScalingGroupsCommand,
  DescribeInstanceRefreshesCommand,
  RecordLifecycleActionHeartbeatCommand,
  type LifecycleState,
} from '@aws-sdk/client-auto-scaling';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { createSnsHandOffs } from '../../../../lambda/adapters/aws/sns-hand-offs.js';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { createAutoScalingInstances, createLifecycleActions } from '../../../../lambda/adapters/aws/auto-scaling.js';
import { refreshStrategyTag } from '../../../../lambda/shared/group-tags.js';
import { AwsQuery } from '../../../../lambda/adapters/aws/aws-query.js';
import { autoScalingApi } from '../../../../lambda/adapters/aws/group-reads.js';

const action = {
  autoScalingGroupName: 'workers',
  lifecycleHookName: 'workers-terminate',
  lifecycleActionToken: 'tok',
  instanceId: 'i-0123456789abcdef0',
};
const validationError = (message: string) =>
  new AutoScalingServiceException({
    name: 'ValidationError',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    message,
  });

describe('lifecycle actions adapter', () => {
  const asg = mockClient(AutoScalingClient);
  beforeEach(() => asg.reset());

  it('sends CompleteLifecycleAction with the token, the instance and the result', async () => {
    asg.on(CompleteLifecycleActionCommand).resolves({});

    await expect(
      createLifecycleActions(new AutoScalingClient({ region: 'eu-west-1' })).complete(action, 'CONTINUE'),
    ).resolves.toBe('completed');

    expect(asg.commandCalls(CompleteLifecycleActionCommand)[0]!.args[0].input).toEqual({
      AutoScalingGroupName: 'workers',
      LifecycleHookName: 'workers-terminate',
      LifecycleActionToken: 'tok',
      InstanceId: 'i-0123456789abcdef0',
      LifecycleActionResult: 'CONTINUE',
    });
  });

  it('treats "No active Lifecycle Action found" as already completed', async () => {
    asg
      .on(CompleteLifecycleActionCommand)
      .rejects(validationError('No active Lifecycle Action found with instance ID i-0123456789abcdef0'));

    await expect(
      createLifecycleActions(new AutoScalingClient({ region: 'eu-west-1' })).complete(action, 'CONTINUE'),
    ).resolves.toBe('already-completed');
  });

  it('rethrows other errors', async () => {
    asg.on(CompleteLifecycleActionCommand).rejects(validationError('Invalid LifecycleActionResult'));

    await expect(
      createLifecycleActions(new AutoScalingClient({ region: 'eu-west-1' })).complete(action, 'CONTINUE'),
    ).rejects.toThrow('Invalid LifecycleActionResult');
  });

  it('records a heartbeat for the action, and reports an action that is over', async () => {
    const actions = createLifecycleActions(new AutoScalingClient({ region: 'eu-west-1' }));
    asg
      .on(RecordLifecycleActionHeartbeatCommand)
      .resolvesOnce({})
      .rejects(validationError('No active Lifecycle Action found with instance ID i-0123456789abcdef0'));

    await expect(actions.heartbeat(action)).resolves.toBe('recorded');
    await expect(actions.heartbeat(action)).resolves.toBe('no-active-action');
    expect(asg.commandCalls(RecordLifecycleActionHeartbeatCommand)[0]!.args[0].input).toEqual({
      AutoScalingGroupName: 'workers',
      LifecycleHookName: 'workers-terminate',
      LifecycleActionToken: 'tok',
      InstanceId: 'i-0123456789abcdef0',
    });
  });
});

describe('hand-offs adapter', () => {
  it('publishes the hand-off message as JSON to the configured topic', async () => {
    const sns = mockClient(SNSClient);
    sns.on(PublishCommand).resolves({ MessageId: 'm-1' });
    const topic = 'arn:aws:sns:eu-west-1:123456789012:gnt';

    await createSnsHandOffs({ region: 'eu-west-1' }, topic).send({
      EC2InstanceId: 'i-0123456789abcdef0',
      GracefulNodeTerminationHandOff: { count: 1 },
    });

    const input = sns.commandCalls(PublishCommand)[0]!.args[0].input;
    expect(input.TopicArn).toBe(topic);
    expect(JSON.parse(String(input.Message))).toEqual({
      EC2InstanceId: 'i-0123456789abcdef0',
      GracefulNodeTerminationHandOff: { count: 1 },
    });
    sns.restore();
  });
});

/** The refresh view reads groups through the SDK client: the lean reader is never called (nothing listens there). */
const unusedGroups = new AwsQuery(autoScalingApi, {
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
  endpoint: 'http://127.0.0.1:9',
  maxAttempts: 1,
});

describe('instance refresh view', () => {
  const asg = mockClient(AutoScalingClient);
  beforeEach(() => asg.reset());
  const instance = (id: string, version: string, state: LifecycleState = 'InService') => ({
    InstanceId: id,
    LifecycleState: state,
    LaunchTemplate: { LaunchTemplateId: 'lt-0abc', LaunchTemplateName: 'workers', Version: version },
    AvailabilityZone: 'eu-west-1a',
    HealthStatus: 'Healthy',
    ProtectedFromScaleIn: false,
  });

  it('finds the instances not on the desired version, resolving $Latest through EC2, and reads the strategy tag', async () => {
    asg.on(DescribeInstanceRefreshesCommand).resolves({
      InstanceRefreshes: [
        {
          InstanceRefreshId: 'r-1',
          Status: 'InProgress',
          DesiredConfiguration: { LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '$Latest' } },
        },
      ],
    });
    asg.on(DescribeAutoScalingGroupsCommand).resolves({
      AutoScalingGroups: [
        {
          AutoScalingGroupName: 'workers',
          MinSize: 0,
          MaxSize: 9,
          DesiredCapacity: 4,
          DefaultCooldown: 300,
          AvailabilityZones: ['eu-west-1a'],
          HealthCheckType: 'EC2',
          CreatedTime: new Date(),
          LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '6' },
          Instances: [
            instance('i-01', '6'),
            instance('i-02', '7'),
            instance('i-03', '6', 'Terminating:Wait'),
            { ...instance('i-04', '7'), LaunchTemplate: { LaunchTemplateId: 'lt-0other', Version: '7' } },
          ],
          Tags: [
            {
              Key: refreshStrategyTag,
              Value: 'minimal:r-1',
              ResourceId: 'workers',
              ResourceType: 'auto-scaling-group',
              PropagateAtLaunch: false,
            },
          ],
        },
      ],
    });
    const asked: unknown[] = [];
    const ec2 = {
      privateDnsNames: async () => new Map(),
      purchase: async () => undefined,
      spotRequestStatus: async () => undefined,
      launchTemplateVersions: async (t: unknown) => (asked.push(t), { latest: '7', default: '6' }),
    };
    const view = await createAutoScalingInstances(
      new AutoScalingClient({ region: 'eu-west-1' }),
      unusedGroups,
      ec2,
    ).refresh('workers', 'r-1');
    expect(view).toEqual({ strategyTag: 'minimal:r-1', outdated: ['i-01', 'i-04'], desired: 'lt-0abc version 7' });
    expect(asked).toEqual([{ id: 'lt-0abc', name: undefined }]);
  });

  it('says nothing once the refresh is over', async () => {
    asg
      .on(DescribeInstanceRefreshesCommand)
      .resolves({ InstanceRefreshes: [{ InstanceRefreshId: 'r-1', Status: 'Successful' }] });
    await expect(
      createAutoScalingInstances(new AutoScalingClient({ region: 'eu-west-1' }), unusedGroups).refresh(
        'workers',
        'r-1',
      ),
    ).resolves.toBeUndefined();
    expect(asg.commandCalls(DescribeAutoScalingGroupsCommand)).toHaveLength(0);
  });
});
