// Which instances an instance refresh replaces: those not on its desired launch template
// version, with $Latest and $Default resolved through EC2 (once each per refresh).
import type { AutoScalingGroup, InstanceRefresh, LaunchTemplateSpecification } from '@aws-sdk/client-auto-scaling';
import type { InstanceDirectory } from '../../shared/aws-ports.js';
import { leavingStates } from '../../shared/lifecycle-states.js';

function sameTemplate(a: LaunchTemplateSpecification, b: LaunchTemplateSpecification): boolean {
  if (a.LaunchTemplateId && b.LaunchTemplateId) return a.LaunchTemplateId === b.LaunchTemplateId;
  return a.LaunchTemplateName === b.LaunchTemplateName;
}

/** `$Latest` and `$Default` (or no version: the default) resolved to numbers through EC2, once each. */
function versionResolver(ec2: InstanceDirectory | undefined): (spec: LaunchTemplateSpecification) => Promise<string> {
  const cache = new Map<string, Promise<{ latest: string; default: string } | undefined>>();
  return async (spec) => {
    const version = spec.Version ?? '$Default';
    if (version !== '$Latest' && version !== '$Default') return version;
    const key = spec.LaunchTemplateId ?? spec.LaunchTemplateName ?? '';
    if (!cache.has(key))
      cache.set(
        key,
        ec2?.launchTemplateVersions?.({ id: spec.LaunchTemplateId, name: spec.LaunchTemplateName }) ??
          Promise.resolve(undefined),
      );
    const versions = await cache.get(key)!;
    if (versions === undefined)
      throw new Error(
        `cannot resolve ${version} of launch template ${key}: ec2:DescribeLaunchTemplates gave no answer`,
      );
    return version === '$Latest' ? versions.latest : versions.default;
  };
}

export async function outdatedInstances(
  g: AutoScalingGroup,
  refresh: InstanceRefresh,
  ec2: InstanceDirectory | undefined,
): Promise<{ outdated: string[]; desired: string }> {
  const desired =
    refresh.DesiredConfiguration?.LaunchTemplate ??
    refresh.DesiredConfiguration?.MixedInstancesPolicy?.LaunchTemplate?.LaunchTemplateSpecification ??
    g.LaunchTemplate ??
    g.MixedInstancesPolicy?.LaunchTemplate?.LaunchTemplateSpecification;
  const want = desired === undefined ? undefined : await versionResolver(ec2)(desired);
  const outdated = (g.Instances ?? []).filter((i) => {
    if (i.InstanceId === undefined || leavingStates.has(i.LifecycleState ?? '')) return false;
    // No launch template to compare (a launch configuration): the refresh replaces it.
    if (desired === undefined || want === undefined || i.LaunchTemplate === undefined) return true;
    return !sameTemplate(i.LaunchTemplate, desired) || i.LaunchTemplate.Version !== want;
  });
  return {
    outdated: outdated.map((i) => i.InstanceId!),
    desired:
      desired === undefined
        ? "the group's configuration"
        : `${desired.LaunchTemplateId ?? desired.LaunchTemplateName} version ${want}`,
  };
}
