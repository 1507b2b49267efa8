// Auto Scaling side effects: completing lifecycle actions.
import { AutoScalingServiceException, CompleteLifecycleActionCommand, type AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import type { LifecycleActions } from '../ports.js';

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

export function createLifecycleActions(client: AutoScalingClient): LifecycleActions {
  return {
    async complete(action, result) {
      try {
        await client.send(
          new CompleteLifecycleActionCommand({
            AutoScalingGroupName: action.autoScalingGroupName,
            LifecycleHookName: action.lifecycleHookName,
            LifecycleActionToken: action.lifecycleActionToken,
            InstanceId: action.instanceId,
            LifecycleActionResult: result,
          }),
        );
        return 'completed';
      } catch (error) {
        if (isNoActiveLifecycleAction(error)) return 'already-completed';
        throw error;
      }
    },
  };
}
