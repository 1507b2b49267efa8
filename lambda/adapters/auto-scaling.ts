// Auto Scaling side effects: completing lifecycle actions and keeping them alive.
import {
  AutoScalingServiceException,
  CompleteLifecycleActionCommand,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
  DescribeInstanceRefreshesCommand,
  type LaunchTemplateSpecification,
  RecordLifecycleActionHeartbeatCommand,
  type AutoScalingClient,
} from '@aws-sdk/client-auto-scaling';
import type { AutoScalingInstances, InstanceDirectory, LifecycleActionRef, LifecycleActions, RefreshView } from '../ports.js';

/**
 * The group tag `upgrade --strategy minimal` sets while its refresh runs: cordon the outdated
 * nodes at the start (managed groups' MINIMAL) instead of only tainting them PreferNoSchedule.
 * A refresh somebody else started is never taken as leave to cordon a whole group.
 */
export const refreshStrategyTag = 'graceful-node-termination/refresh-strategy';

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

function sameTemplate(a: LaunchTemplateSpecification, b: LaunchTemplateSpecification): boolean {
  if (a.LaunchTemplateId && b.LaunchTemplateId) return a.LaunchTemplateId === b.LaunchTemplateId;
  return a.LaunchTemplateName === b.LaunchTemplateName;
}

/** `$Latest` and `$Default` (or no version: the default) resolved to numbers through EC2, once each. */
async function versionResolver(ec2: InstanceDirectory | undefined): Promise<(spec: LaunchTemplateSpecification) => Promise<string>> {
  const cache = new Map<string, Promise<{ latest: string; default: string } | undefined>>();
  return async (spec) => {
    const version = spec.Version ?? '$Default';
    if (version !== '$Latest' && version !== '$Default') return version;
    const key = spec.LaunchTemplateId ?? spec.LaunchTemplateName ?? '';
    if (!cache.has(key)) cache.set(key, ec2?.launchTemplateVersions?.({ id: spec.LaunchTemplateId, name: spec.LaunchTemplateName }) ?? Promise.resolve(undefined));
    const versions = await cache.get(key)!;
    if (versions === undefined) throw new Error(`cannot resolve ${version} of launch template ${key}: ec2:DescribeLaunchTemplates gave no answer`);
    return version === '$Latest' ? versions.latest : versions.default;
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
export function createAutoScalingInstances(client: AutoScalingClient, ec2?: InstanceDirectory): AutoScalingInstances {
  return {
    async refresh(group, refreshId) {
      const { InstanceRefreshes } = await client.send(new DescribeInstanceRefreshesCommand({ AutoScalingGroupName: group, InstanceRefreshIds: [refreshId] }));
      const refresh = InstanceRefreshes?.[0];
      if (refresh === undefined || !['Pending', 'InProgress'].includes(refresh.Status ?? '')) return undefined;
      const { AutoScalingGroups } = await client.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group] }));
      const g = AutoScalingGroups?.[0];
      if (g === undefined) return undefined;
      const desired =
        refresh.DesiredConfiguration?.LaunchTemplate ??
        refresh.DesiredConfiguration?.MixedInstancesPolicy?.LaunchTemplate?.LaunchTemplateSpecification ??
        g.LaunchTemplate ??
        g.MixedInstancesPolicy?.LaunchTemplate?.LaunchTemplateSpecification;
      const resolve = await versionResolver(ec2);
      const want = desired === undefined ? undefined : await resolve(desired);
      const outdated = (g.Instances ?? []).filter((i) => {
        if (i.InstanceId === undefined || terminatingStates.has(i.LifecycleState ?? '')) return false;
        // No launch template to compare (a launch configuration): the refresh replaces it.
        if (want === undefined || i.LaunchTemplate === undefined) return true;
        return !sameTemplate(i.LaunchTemplate, desired!) || i.LaunchTemplate.Version !== want;
      });
      const strategy = g.Tags?.find((t) => t.Key === refreshStrategyTag)?.Value;
      return {
        minimal: strategy === 'minimal',
        outdated: outdated.map((i) => i.InstanceId!),
        desired: desired === undefined ? 'the group\'s configuration' : `${desired.LaunchTemplateId ?? desired.LaunchTemplateName} version ${want}`,
      } satisfies RefreshView;
    },
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
