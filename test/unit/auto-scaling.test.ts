import { AutoScalingClient, AutoScalingServiceException, CompleteLifecycleActionCommand } from '@aws-sdk/client-auto-scaling';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { createLifecycleActions } from '../../lambda/adapters/auto-scaling.js';

const action = { autoScalingGroupName: 'workers', lifecycleHookName: 'workers-terminate', lifecycleActionToken: 'tok', instanceId: 'i-0123456789abcdef0' };
const validationError = (message: string) =>
  new AutoScalingServiceException({ name: 'ValidationError', $fault: 'client', $metadata: { httpStatusCode: 400 }, message });

describe('lifecycle actions adapter', () => {
  const asg = mockClient(AutoScalingClient);
  beforeEach(() => asg.reset());

  it('sends CompleteLifecycleAction with the token, the instance and the result', async () => {
    asg.on(CompleteLifecycleActionCommand).resolves({});

    await expect(createLifecycleActions(new AutoScalingClient({ region: 'eu-west-1' })).complete(action, 'CONTINUE')).resolves.toBe('completed');

    expect(asg.commandCalls(CompleteLifecycleActionCommand)[0]!.args[0].input).toEqual({
      AutoScalingGroupName: 'workers',
      LifecycleHookName: 'workers-terminate',
      LifecycleActionToken: 'tok',
      InstanceId: 'i-0123456789abcdef0',
      LifecycleActionResult: 'CONTINUE',
    });
  });

  it('treats "No active Lifecycle Action found" as already completed', async () => {
    asg.on(CompleteLifecycleActionCommand).rejects(validationError('No active Lifecycle Action found with instance ID i-0123456789abcdef0'));

    await expect(createLifecycleActions(new AutoScalingClient({ region: 'eu-west-1' })).complete(action, 'CONTINUE')).resolves.toBe('already-completed');
  });

  it('rethrows other errors', async () => {
    asg.on(CompleteLifecycleActionCommand).rejects(validationError('Invalid LifecycleActionResult'));

    await expect(createLifecycleActions(new AutoScalingClient({ region: 'eu-west-1' })).complete(action, 'CONTINUE')).rejects.toThrow('Invalid LifecycleActionResult');
  });
});
