// Auto Scaling side effects: completing lifecycle actions and keeping them alive.
import {
  AutoScalingServiceException,
  CompleteLifecycleActionCommand,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
  RecordLifecycleActionHeartbeatCommand,
  type AutoScalingClient,
} from '@aws-sdk/client-auto-scaling';
import type { AutoScalingInstances, LifecycleActionRef, LifecycleActions } from '../ports.js';

/**
 * Completing twice, after the hook timed out, or with a wrong hook name all answer
 * ValidationError "No active Lifecycle Action found ...": the work is already done.
 */
export function isNoActiveLifecycleAction(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.name === 'ValidationError' || (error as AutoScalingServiceException).$metadata?.httpStatusCode === 400) &&
    /no active lifecycle action/i.test(error.message)
  );
}

/** The lifecycle action both calls name: by token, with the instance id as well. */
function actionInput(action: LifecycleActionRef) {
  return {
    AutoScalingGroupName: action.autoScalingGroupName,
    LifecycleHookName: action.lifecycleHookName,
    LifecycleActionToken: action.lifecycleActionToken,
    InstanceId: action.instanceId,
  };
}

export function createLifecycleActions(client: AutoScalingClient): LifecycleActions {
  return {
    async complete(action, result) {
      try {
        await client.send(
          new CompleteLifecycleActionCommand({ ...actionInput(action), LifecycleActionResult: result }),
        );
        return 'completed';
      } catch (error) {
        if (isNoActiveLifecycleAction(error)) return 'already-completed';
        throw error;
      }
    },
    async heartbeat(action) {
      try {
        await client.send(
          new RecordLifecycleActionHeartbeatCommand(actionInput(action)),
        );
        return 'recorded';
      } catch (error) {
        if (isNoActiveLifecycleAction(error)) return 'no-active-action';
        throw error;
      }
    },
  };
}

/**
 * The states of an instance the group is terminating: Terminating until a terminate hook
 * fires, Terminating:Wait while the hook holds it (Terminating:Proceed is past its drain).
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-lifecycle.html
 */
export const terminatingStates: ReadonlySet<string> = new Set(['Terminating', 'Terminating:Wait']);

/**
 * The Describe calls cannot be scoped to groups in IAM (they take no resource): the handler
 * refuses instances of other groups, and asks only about groups it serves.
 */
export function createAutoScalingInstances(client: AutoScalingClient): AutoScalingInstances {
  return {
    async groupOf(instanceId) {
      const { AutoScalingInstances } = await client.send(new DescribeAutoScalingInstancesCommand({ InstanceIds: [instanceId] }));
      return AutoScalingInstances?.[0]?.AutoScalingGroupName;
    },
    async terminatingIn(group) {
      const { AutoScalingGroups } = await client.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group] }));
      return (AutoScalingGroups?.[0]?.Instances ?? []).filter((i) => terminatingStates.has(i.LifecycleState ?? '')).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
    },
  };
}
