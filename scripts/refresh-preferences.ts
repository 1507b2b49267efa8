// The instance refresh an `upgrade` starts, from its options: managed node groups' update
// behaviour expressed in Auto Scaling's RefreshPreferences.
// https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_RefreshPreferences.html
// https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html
import type { RefreshPreferences, StartInstanceRefreshCommandInput } from '@aws-sdk/client-auto-scaling';

export type UpgradeStrategy = 'default' | 'minimal';

export interface UpgradeOptions {
  readonly group: string;
  /** `default`: launch before terminate (managed groups' surge); `minimal`: terminate first, cordon all first. */
  readonly strategy: UpgradeStrategy;
  /** Instances replaced at a time (managed groups' maxUnavailable); default 1. */
  readonly maxUnavailable?: number | undefined;
  /** The same as a percentage of the group (maxUnavailablePercentage). */
  readonly maxUnavailablePercentage?: number | undefined;
  /** The group's desired capacity now: percentages are of it. */
  readonly desiredCapacity: number;
  /** A version of the group's launch template to move to; default: the group's own configuration. */
  readonly launchTemplateVersion?: string | undefined;
  /** The group's launch template, when a version is given. */
  readonly launchTemplate?: { readonly id?: string | undefined; readonly name?: string | undefined } | undefined;
  /** The launch template version the group itself is on when the refresh starts ("6", "$Latest", "$Default"). */
  readonly groupVersion?: string | undefined;
  readonly autoRollback: boolean;
  /** CloudWatch alarms that stop (and with autoRollback roll back) the refresh: at most 10. */
  readonly alarms: readonly string[];
}

/** Refused options, with what to change: thrown before anything is started. */
export class UpgradeOptionsError extends Error {
  override name = 'UpgradeOptionsError';
}

/**
 * How many percent of the group one batch is. Auto Scaling works in percentages of desired
 * capacity; rounding up keeps at least one instance per batch (never a refresh that cannot
 * move) and at most the asked number plus the rounding.
 */
export function batchPercentage(
  o: Pick<UpgradeOptions, 'maxUnavailable' | 'maxUnavailablePercentage' | 'desiredCapacity'>,
): number {
  if (o.maxUnavailable !== undefined && o.maxUnavailablePercentage !== undefined) {
    throw new UpgradeOptionsError('give --max-unavailable or --max-unavailable-percentage, not both');
  }
  if (o.maxUnavailablePercentage !== undefined) {
    if (
      !Number.isInteger(o.maxUnavailablePercentage) ||
      o.maxUnavailablePercentage < 1 ||
      o.maxUnavailablePercentage > 100
    ) {
      throw new UpgradeOptionsError(
        `--max-unavailable-percentage ${o.maxUnavailablePercentage} is invalid: expected an integer from 1 to 100`,
      );
    }
    return o.maxUnavailablePercentage;
  }
  const n = o.maxUnavailable ?? 1;
  if (!Number.isInteger(n) || n < 1)
    throw new UpgradeOptionsError(`--max-unavailable ${n} is invalid: expected an integer >= 1`);
  if (o.desiredCapacity < 1)
    throw new UpgradeOptionsError('the group has no instances (desired capacity 0): nothing to upgrade');
  return Math.min(100, Math.ceil((n * 100) / o.desiredCapacity));
}

/**
 * default: MinHealthyPercentage 100 and MaxHealthyPercentage 100 + batch: new instances are
 * launched (and admitted Ready by the launch hook) before old ones terminate, never below
 * capacity. minimal: MaxHealthyPercentage 100 and MinHealthyPercentage 100 - batch: old
 * instances go first. Both within the API's limits: Min 0..100, Max 100..200, Max - Min <= 100.
 */
export function refreshPreferences(o: UpgradeOptions): RefreshPreferences {
  const batch = batchPercentage(o);
  if (o.alarms.length > 10)
    throw new UpgradeOptionsError(`an instance refresh takes at most 10 alarms, got ${o.alarms.length}`);
  if (o.autoRollback && (o.launchTemplateVersion === '$Latest' || o.launchTemplateVersion === '$Default')) {
    throw new UpgradeOptionsError(
      `--auto-rollback cannot roll back to ${o.launchTemplateVersion}: Auto Scaling refuses it; name a version number`,
    );
  }
  // A rollback restores the group's own configuration, and AWS supports none when the group uses
  // $Latest or $Default (RefreshPreferences AutoRollback; RollbackInstanceRefresh):
  // https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_RollbackInstanceRefresh.html
  if (o.autoRollback && (o.groupVersion === '$Latest' || o.groupVersion === '$Default')) {
    throw new UpgradeOptionsError(
      `--auto-rollback is refused: ${o.group} uses its launch template's ${o.groupVersion}, and Auto Scaling rolls back ` +
        'to no $Latest or $Default version; set the group to a version number (in its IaC), or run without --auto-rollback',
    );
  }
  const healthy =
    o.strategy === 'default'
      ? { MinHealthyPercentage: 100, MaxHealthyPercentage: Math.min(200, 100 + batch) }
      : { MinHealthyPercentage: Math.max(0, 100 - batch), MaxHealthyPercentage: 100 };
  return {
    ...healthy,
    // Instances already on the desired configuration stay (managed groups replace only outdated nodes).
    SkipMatching: true,
    AutoRollback: o.autoRollback,
    ...(o.alarms.length > 0 ? { AlarmSpecification: { Alarms: [...o.alarms] } } : {}),
  };
}

export function startRefreshInput(o: UpgradeOptions): StartInstanceRefreshCommandInput {
  const preferences = refreshPreferences(o);
  if (o.launchTemplateVersion !== undefined && o.launchTemplate === undefined) {
    throw new UpgradeOptionsError('--launch-template-version needs a group with a launch template');
  }
  return {
    AutoScalingGroupName: o.group,
    Strategy: 'Rolling',
    Preferences: preferences,
    ...(o.launchTemplateVersion !== undefined
      ? {
          DesiredConfiguration: {
            LaunchTemplate: {
              ...(o.launchTemplate?.id
                ? { LaunchTemplateId: o.launchTemplate.id }
                : { LaunchTemplateName: o.launchTemplate?.name }),
              Version: o.launchTemplateVersion,
            },
          },
        }
      : {}),
  };
}
