// Auto Scaling: completing lifecycle actions and keeping them alive, and the reads that
// confirm a trigger before anything is written (instances, refreshes, groups).
import {
  AutoScalingServiceException,
  CompleteLifecycleActionCommand,
  DeleteTagsCommand,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
  DescribeInstanceRefreshesCommand,
  RecordLifecycleActionHeartbeatCommand,
  type AutoScalingClient,
  type AutoScalingGroup,
} from '@aws-sdk/client-auto-scaling';
import type {
  AutoScalingInstances,
  InstanceDirectory,
  InstanceState,
  LifecycleActionRef,
  LifecycleActions,
} from '../../shared/aws-ports.js';
import { chunks } from '../../shared/concurrency.js';
import { refreshStrategyTag } from '../../shared/group-tags.js';
import { leavingStates } from '../../shared/lifecycle-states.js';
import { readGroups, type QueryCaller } from './group-reads.js';
import { outdatedInstances } from './launch-templates.js';

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

/** The action both calls name: by token when we have it, always with the instance id. */
function actionInput(action: LifecycleActionRef) {
  return {
    AutoScalingGroupName: action.autoScalingGroupName,
    LifecycleHookName: action.lifecycleHookName,
    ...(action.lifecycleActionToken ? { LifecycleActionToken: action.lifecycleActionToken } : {}),
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
        await client.send(new RecordLifecycleActionHeartbeatCommand(actionInput(action)));
        return 'recorded';
      } catch (error) {
        if (isNoActiveLifecycleAction(error)) return 'no-active-action';
        throw error;
      }
    },
  };
}

/** DescribeAutoScalingInstances takes at most 50 ids; DescribeAutoScalingGroups 100 names. */
const instancesPerCall = 50;

/**
 * The Describe calls cannot be scoped to groups in IAM (they take no resource): the handler
 * refuses instances of other groups, and asks only about groups it serves.
 */
export function createAutoScalingInstances(
  client: AutoScalingClient,
  groups: QueryCaller,
  ec2?: InstanceDirectory,
): AutoScalingInstances {
  const describeGroup = async (group: string): Promise<AutoScalingGroup | undefined> =>
    (await client.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group] })))
      .AutoScalingGroups?.[0];
  return {
    describe: (instanceIds) => describeInstances(client, instanceIds),

    async leavingGroup(group) {
      return (await readGroups(groups, [group], { instances: true }))
        .flatMap((g) => g.instances)
        .filter((i) => leavingStates.has(i.lifecycleState) && i.instanceId !== '')
        .map((i) => i.instanceId);
    },

    async refreshStatuses(group, refreshIds) {
      const statuses = new Map<string, string>();
      for (const ids of chunks(refreshIds, 50)) {
        const { InstanceRefreshes } = await client.send(
          new DescribeInstanceRefreshesCommand({ AutoScalingGroupName: group, InstanceRefreshIds: ids }),
        );
        for (const r of InstanceRefreshes ?? [])
          if (r.InstanceRefreshId && r.Status) statuses.set(r.InstanceRefreshId, r.Status);
      }
      return statuses;
    },

    async refresh(group, refreshId) {
      const { InstanceRefreshes } = await client.send(
        new DescribeInstanceRefreshesCommand({ AutoScalingGroupName: group, InstanceRefreshIds: [refreshId] }),
      );
      const refresh = InstanceRefreshes?.[0];
      if (refresh === undefined || !['Pending', 'InProgress'].includes(refresh.Status ?? '')) return undefined;
      const g = await describeGroup(group);
      if (g === undefined) return undefined;
      const { outdated, desired } = await outdatedInstances(g, refresh, ec2);
      return { outdated, desired, strategyTag: g.Tags?.find((t) => t.Key === refreshStrategyTag)?.Value };
    },

    async describeGroups(names) {
      return (await readGroups(groups, names, { instances: false })).map((g) => ({ name: g.name, tags: g.tags }));
    },

    async removeTag(group, key) {
      await client.send(
        new DeleteTagsCommand({ Tags: [{ ResourceId: group, ResourceType: 'auto-scaling-group', Key: key }] }),
      );
    },
  };
}

/** Which group each instance is in and its lifecycle state, 50 instances a call. */
async function describeInstances(
  client: AutoScalingClient,
  instanceIds: readonly string[],
): Promise<Map<string, InstanceState>> {
  const states = new Map<string, InstanceState>();
  for (const ids of chunks([...new Set(instanceIds)], instancesPerCall)) {
    let token: string | undefined;
    do {
      const answer = await client.send(new DescribeAutoScalingInstancesCommand({ InstanceIds: ids, NextToken: token }));
      for (const i of answer.AutoScalingInstances ?? []) {
        if (i.InstanceId && i.AutoScalingGroupName)
          states.set(i.InstanceId, {
            instanceId: i.InstanceId,
            group: i.AutoScalingGroupName,
            lifecycleState: i.LifecycleState ?? '',
            healthStatus: i.HealthStatus,
          });
      }
      token = answer.NextToken;
    } while (token);
  }
  return states;
}
