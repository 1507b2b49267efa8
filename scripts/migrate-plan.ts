// What `migrate` will do, shown before it does anything (as `upgrade`: nothing changes without
// --approve or a typed "yes"), and the check that both groups are served by the deployment:
// the old group's instances leave through its terminate hook (drained), the new group's
// nodes join through its launch hook (admitted). A group without the deployment's hooks would
// lose its instances undrained.
import {
  DescribeAutoScalingGroupsCommand,
  DescribeLifecycleHooksCommand,
  type AutoScalingClient,
  type AutoScalingGroup,
} from '@aws-sdk/client-auto-scaling';
import { leavingStates } from '../lambda/shared/lifecycle-states.js';
import { deploymentsOfHooks } from './upgrade-plan.js';

export interface MigrateRequest {
  readonly from: string;
  readonly to: string;
  readonly deployment?: string | undefined;
  /** Ready nodes the new group must have before anything moves; default: the old group's node count. */
  readonly minReady?: number | undefined;
  /** Old instances terminated at a time. */
  readonly maxUnavailable: number;
  /** Cordon every old node at once (otherwise our PreferNoSchedule taint). */
  readonly cordonAll: boolean;
  /** How long the marks outlive a command that died (its lease); it renews them meanwhile. */
  readonly leaseSeconds: number;
  /** How long to wait for the new group's Ready nodes, and for batch pods to finish. */
  readonly readyTimeoutSeconds: number;
  readonly batchTimeoutSeconds: number;
  readonly approve: boolean;
  readonly region?: string | undefined;
}

export interface MigratePlan {
  readonly from: string;
  readonly to: string;
  readonly region: string | undefined;
  readonly deployment: string;
  readonly oldInstances: readonly string[];
  readonly oldNodes: readonly string[];
  readonly newReady: number;
  readonly minReady: number;
  readonly mark: 'taint' | 'cordon';
  readonly batchPods: readonly string[];
  readonly maxUnavailable: number;
  /** The old group's MinSize, set to 0 first when above it (Auto Scaling refuses to go below it). */
  readonly oldMinSize: number;
}

export function renderMigratePlan(plan: MigratePlan): string[] {
  return [
    `plan: migrate ${plan.from} -> ${plan.to} in ${plan.region ?? 'the configured region'} (deployment ${plan.deployment}: both groups served)`,
    `  wait for:                ${plan.minReady} Ready node(s) in ${plan.to} (now ${plan.newReady})`,
    `  mark old nodes:          ${plan.oldNodes.length} (${plan.mark === 'cordon' ? 'cordon, --cordon-all' : 'PreferNoSchedule taint graceful-node-termination/migrating: evicted pods prefer the new group'})`,
    `  batch pods to finish:    ${plan.batchPods.length}${plan.batchPods.length > 0 ? ` (${plan.batchPods.slice(0, 5).join(', ')}${plan.batchPods.length > 5 ? ', ...' : ''})` : ''}`,
    `  then shrink ${plan.from}:  ${plan.oldInstances.length} instance(s), ${plan.maxUnavailable} at a time, each drained by the terminate hook; stop on the first drain that times out`,
    ...(plan.oldMinSize > 0
      ? [
          `  min size of ${plan.from}:   ${plan.oldMinSize} -> 0 first (the group is left at zero; delete it in your IaC)`,
        ]
      : []),
  ];
}

export interface Groups {
  readonly from: AutoScalingGroup;
  readonly to: AutoScalingGroup;
}

/** Both groups, or the one-line reason why not. */
export async function describeGroups(
  autoScaling: AutoScalingClient,
  request: MigrateRequest,
): Promise<Groups | string> {
  if (request.from === request.to) return `--from and --to name the same group (${request.from})`;
  const { AutoScalingGroups } = await autoScaling.send(
    new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [request.from, request.to] }),
  );
  const named = (name: string) => AutoScalingGroups?.find((g) => g.AutoScalingGroupName === name);
  const from = named(request.from);
  const to = named(request.to);
  const where = request.region ? ` in ${request.region}` : '';
  if (from === undefined) return `no Auto Scaling group named ${request.from}${where}`;
  if (to === undefined) return `no Auto Scaling group named ${request.to}${where}`;
  return { from, to };
}

/** The deployment serving both groups (from their hooks), or the one-line reason there is none. */
export async function servingDeployment(
  autoScaling: AutoScalingClient,
  request: MigrateRequest,
): Promise<{ deployment: string } | { refused: string }> {
  const served = async (group: string) =>
    deploymentsOfHooks(
      (await autoScaling.send(new DescribeLifecycleHooksCommand({ AutoScalingGroupName: group })))?.LifecycleHooks ??
        [],
    );
  const [from, to] = [await served(request.from), await served(request.to)];
  const both = from.filter((d) => to.includes(d));
  const deployment = request.deployment ?? (both.length === 1 ? both[0] : undefined);
  if (deployment === undefined) {
    if (both.length > 1)
      return {
        refused: `both groups are served by several deployments (${both.join(', ')}): name one with --deployment`,
      };
    const missing = from.length === 0 ? request.from : request.to;
    return {
      refused: `no deployment serves both groups: ${missing} has no launch and terminate hooks of one (its instances would leave undrained); deploy it for both groups first`,
    };
  }
  for (const [group, list] of [
    [request.from, from],
    [request.to, to],
  ] as const) {
    if (!list.includes(deployment))
      return {
        refused: `${group} is not served by the deployment ${deployment} (no ${deployment}-launch and ${deployment}-terminate hooks): add the group to it first`,
      };
  }
  return { deployment };
}

/** The group's instances that are not leaving already. */
export const liveInstances = (g: Pick<AutoScalingGroup, 'Instances'>): string[] =>
  (g.Instances ?? []).flatMap((i) =>
    i.InstanceId && !leavingStates.has(i.LifecycleState ?? '') ? [i.InstanceId] : [],
  );
