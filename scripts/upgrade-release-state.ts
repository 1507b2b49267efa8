// What `upgrade --release` decides from, as AWS says it now: the image each live instance of the
// group runs (from the launch template version it was launched with, which is also what the
// refresh's SkipMatching compares), and what the group's own version means for its launches.
// A re-run decides from these, never from what an earlier run wrote: "nothing to do" only when the
// group's version has the release's image AND every instance runs it.
import type { AutoScalingGroup, LaunchTemplateSpecification } from '@aws-sdk/client-auto-scaling';
import { leavingStates } from '../lambda/shared/lifecycle-states.js';
import type { ImageCatalog } from './aws-images.js';

/** A live instance and what it runs; imageId undefined when its version cannot say (see instanceImages). */
export interface InstanceImage {
  readonly instanceId: string;
  readonly version: string | undefined;
  readonly imageId: string | undefined;
}

/**
 * The live instances of the group and the image of the launch template version each was launched
 * with (one DescribeLaunchTemplateVersions per version). An instance with no launch template
 * (launched from a launch configuration) or with one named $Latest or $Default, which says no
 * version, runs an image not known here: counted as not on the release, so a refresh (with
 * SkipMatching, which skips what already matches) is started rather than nothing done.
 */
export async function instanceImages(
  group: Pick<AutoScalingGroup, 'Instances'>,
  catalog: Pick<ImageCatalog, 'templateVersion'>,
): Promise<InstanceImage[]> {
  const images = new Map<string, Promise<string | undefined>>();
  const imageOf = (spec: LaunchTemplateSpecification | undefined): Promise<string | undefined> => {
    const version = spec?.Version;
    if (spec === undefined || version === undefined || !/^\d+$/.test(version)) return Promise.resolve(undefined);
    const key = `${spec.LaunchTemplateId ?? spec.LaunchTemplateName}/${version}`;
    if (!images.has(key))
      images.set(
        key,
        catalog
          .templateVersion({ id: spec.LaunchTemplateId, name: spec.LaunchTemplateName }, version)
          .then((t) => t?.imageId),
      );
    return images.get(key)!;
  };
  const live = (group.Instances ?? []).filter((i) => i.InstanceId && !leavingStates.has(i.LifecycleState ?? ''));
  return Promise.all(
    live.map(async (i) => ({
      instanceId: i.InstanceId!,
      version: i.LaunchTemplate?.Version,
      imageId: await imageOf(i.LaunchTemplate),
    })),
  );
}

/**
 * What a run does: `create` a version with the release's image (the group's has another),
 * `refresh` to the group's own version (it has the image, some instances do not run it: an
 * earlier run's refresh refused, failed or cancelled, or the version made by IaC), or nothing.
 */
export type ReleaseStep = 'create' | 'refresh' | 'up-to-date';

export function releaseStep(o: {
  readonly groupImage: string;
  readonly targetImage: string;
  readonly behind: readonly InstanceImage[];
}): ReleaseStep {
  if (o.groupImage !== o.targetImage) return 'create';
  return o.behind.length === 0 ? 'up-to-date' : 'refresh';
}

/** The instances not on the image, for the plan: `i-1 (ami-0old, version 6)`, `i-2 (version $Latest: not known)`. */
export function describeBehind(behind: readonly InstanceImage[]): string {
  const one = (i: InstanceImage) =>
    i.imageId !== undefined
      ? `${i.instanceId} (${i.imageId}, version ${i.version})`
      : `${i.instanceId} (${i.version === undefined ? 'no launch template' : `version ${i.version}`}: image not known)`;
  return `${behind.slice(0, 5).map(one).join(', ')}${behind.length > 5 ? ', ...' : ''}`;
}

/**
 * What creating the version does to the group's launches, said in the plan. On $Latest a new
 * version is what every launch uses at once (scale-out, health replacement, rebalancing: unpaced,
 * undrained by any refresh), so `--release` first sets the group to the number $Latest is now
 * (UpdateAutoScalingGroup): whatever happens to the refresh later, nothing launches from the new
 * version before a refresh moves the group to it. A refresh that succeeds leaves the group on
 * the version it rolled to, a number, either way (StartInstanceRefresh, DesiredConfiguration:
 * https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_StartInstanceRefresh.html).
 */
export function launchesLine(step: ReleaseStep, groupVersion: string, resolved: string): string {
  if (step === 'refresh')
    return `the group uses ${groupVersion === resolved ? `version ${resolved}` : `${groupVersion} (version ${resolved})`}, which launches the image already; nothing is created`;
  if (groupVersion === '$Latest')
    return (
      `the group uses $Latest (version ${resolved} now): a new version would be what every launch uses at once, ` +
      `so the group is set to version ${resolved} first; the refresh moves it to the new version`
    );
  return `the group uses ${groupVersion === resolved ? `version ${resolved}` : `${groupVersion} (version ${resolved})`}: creating a version changes no launch; the refresh moves the group to it`;
}
