// `upgrade <group> --release <version|latest> [--kubernetes-version 1.N]`: managed node groups'
// setup phase (update-nodegroup-version, seed 000) for a self-managed group. It reads the
// group's launch template version and its image, knows the image's family from its name
// (ami-release.ts), asks AWS's public SSM parameter for the release's image, checks the
// version skew, and shows all of it in the plan; once approved it creates ONE launch template
// version from the group's own, with only the image changed, and rolls the group to it with
// the existing upgrade (upgrade.ts). After the refresh: every Deployment, StatefulSet and
// DaemonSet available before is available again, and every node of the group is Ready at the
// new version; otherwise it names those that are not and exits 1.
//
// Its failure paths decide from what AWS says now (upgrade-release-state.ts): a refresh of the
// group that is not over refuses the run before anything is made (Auto Scaling would refuse the
// start); a group on $Latest is set to the number $Latest is now before the version is made, so a
// refresh refused, failed or interrupted after it leaves nothing launching from the new version;
// and a re-run compares what each instance runs with the release's image, so it rolls the
// instances an earlier run left behind instead of saying "nothing to do".
import { DescribeAutoScalingGroupsCommand, UpdateAutoScalingGroupCommand } from '@aws-sdk/client-auto-scaling';
import type { AppsV1Api } from '@kubernetes/client-node';
import {
  amiReleaseOf,
  describeFamily,
  minorOf,
  parameterName,
  releaseProblem,
  type AmiRelease,
} from './ami-release.js';
import type { ImageCatalog, TemplateVersion } from './aws-images.js';
import {
  activeRefresh,
  refreshInProgress,
  runUpgrade,
  type UpgradeDeps,
  type UpgradeRequest,
  type UpgradeResult,
} from './upgrade.js';
import {
  describeBehind,
  instanceImages,
  launchesLine,
  releaseStep,
  type InstanceImage,
  type ReleaseStep,
} from './upgrade-release-state.js';
import { skewProblem } from './version-skew.js';
import {
  lostAvailability,
  nodesBehind,
  readAvailability,
  type Availability,
  type NodeVersion,
} from './workload-availability.js';

/** What the plan shows of the release, and what the approved command creates. */
export interface ReleasePlan {
  /** The group's launch template version, resolved to its number. */
  readonly template: TemplateVersion;
  /** The version as the group names it: "6", "$Latest" or "$Default". */
  readonly groupVersion: string;
  /** The group's live instances and the image each runs; those not on the release's image. */
  readonly instances: readonly InstanceImage[];
  readonly behind: readonly InstanceImage[];
  readonly step: ReleaseStep;
  readonly from: AmiRelease & { readonly imageId: string };
  readonly to: {
    readonly kubernetes: string;
    readonly release: string;
    readonly imageId: string;
    readonly parameter: string;
  };
  readonly controlPlane: string;
}

export interface ReleaseDeps extends UpgradeDeps {
  readonly catalog: ImageCatalog;
  readonly apps: AppsV1Api;
  /** The API server's version (GET /version): "1.34". */
  readonly controlPlaneVersion: () => Promise<string>;
  /** Ready and kubelet version of these nodes. */
  readonly nodeVersions: (names: readonly string[]) => Promise<NodeVersion[]>;
  /** How long the checks after the refresh wait for workloads and nodes to come back. */
  readonly availableTimeoutMs: number;
}

export interface ReleaseRequest extends UpgradeRequest {
  readonly release: string;
  readonly kubernetesVersion?: string | undefined;
}

const refused = (exitCode: number, reason: string, out: (line: string) => void): UpgradeResult => (
  out(reason),
  { exitCode, reason }
);

/** Resolves the release into a plan, or the one-line reason it cannot be. */
async function resolveRelease(request: ReleaseRequest, deps: ReleaseDeps): Promise<ReleasePlan | UpgradeResult> {
  const { out } = deps;
  const { AutoScalingGroups } = await deps.autoScaling.send(
    new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [request.group] }),
  );
  const group = AutoScalingGroups?.[0];
  if (group === undefined)
    return {
      exitCode: 2,
      reason: `no Auto Scaling group named ${request.group}${request.region ? ` in ${request.region}` : ''}`,
    };
  const active = await activeRefresh(deps.autoScaling, request.group);
  if (active) return refused(3, refreshInProgress(request.group, active), out);
  const spec = group.LaunchTemplate;
  if (spec === undefined)
    return {
      exitCode: 2,
      reason: `--release needs a group with a launch template; ${request.group} has ${group.MixedInstancesPolicy ? 'a mixed instances policy' : 'none'}`,
    };
  const template = await deps.catalog.templateVersion(
    { id: spec.LaunchTemplateId, name: spec.LaunchTemplateName },
    spec.Version ?? '$Default',
  );
  if (template?.imageId === undefined)
    return {
      exitCode: 2,
      reason: `the group's launch template ${spec.LaunchTemplateId ?? spec.LaunchTemplateName} version ${spec.Version ?? '$Default'} names no image`,
    };
  const image = (await deps.catalog.image(template.imageId)) ?? { imageId: template.imageId };
  const from = amiReleaseOf(image);
  if ('refused' in from) return { exitCode: 2, reason: from.refused };
  const target = request.kubernetesVersion === undefined ? from.kubernetes : minorOf(request.kubernetesVersion);
  if (target === undefined)
    return {
      exitCode: 2,
      reason: `--kubernetes-version ${JSON.stringify(request.kubernetesVersion)} is not valid: expected a minor version such as 1.34`,
    };
  const problem = releaseProblem(from.os, request.release);
  if (problem) return { exitCode: 2, reason: problem };
  const controlPlane = await deps.controlPlaneVersion();
  const instances = (group.Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
  const nodes = await deps.nodeVersions(await deps.nodesOf(instances));
  const kubelets = nodes.flatMap((n) => minorOf(n.kubeletVersion) ?? []);
  const skew = skewProblem({ target, controlPlane, nodes: kubelets.length > 0 ? kubelets : [from.kubernetes] });
  if (skew) return refused(3, skew, out);
  const parameter = parameterName(from, target, request.release);
  const imageId = await deps.catalog.parameter(parameter);
  if (imageId === undefined)
    return {
      exitCode: 2,
      reason: `no ${describeFamily(from)} release ${request.release} for Kubernetes ${target}: SSM has no parameter ${parameter}`,
    };
  const instancesNow = await instanceImages(group, deps.catalog);
  const behind = instancesNow.filter((i) => i.imageId !== imageId);
  return {
    template,
    groupVersion: spec.Version ?? '$Default',
    instances: instancesNow,
    behind,
    step: releaseStep({ groupImage: template.imageId, targetImage: imageId, behind }),
    from: { ...from, imageId: template.imageId },
    to: { kubernetes: target, release: request.release, imageId, parameter },
    controlPlane,
  };
}

export function renderRelease(plan: ReleasePlan): string[] {
  const { from, to, template, instances, behind } = plan;
  const create = plan.step === 'create';
  return [
    create
      ? `  release:                 ${describeFamily(from)}: Kubernetes ${from.kubernetes} ${from.release} -> ${to.kubernetes} ${to.release} (control plane ${plan.controlPlane})`
      : `  release:                 ${describeFamily(from)}: Kubernetes ${to.kubernetes} ${to.release} (control plane ${plan.controlPlane})`,
    `  image:                   ${create ? `${from.imageId} -> ` : ''}${to.imageId} (${to.parameter})`,
    create
      ? `  new template version:    ${template.templateId} from version ${template.version}, only the image changed (created once approved)`
      : `  template version:        ${template.templateId} version ${template.version} has the image already`,
    `  launches:                ${launchesLine(plan.step, plan.groupVersion, template.version)}`,
    `  instances on the image:  ${instances.length - behind.length} of ${instances.length}${behind.length > 0 ? `; not: ${describeBehind(behind)}` : ''}`,
  ];
}

export async function runReleaseUpgrade(
  request: ReleaseRequest,
  deps: ReleaseDeps,
): Promise<UpgradeResult & { readonly release?: ReleasePlan; readonly unavailable?: readonly string[] }> {
  const { out } = deps;
  const plan = await resolveRelease(request, deps);
  if ('exitCode' in plan) return plan;
  if (plan.step === 'up-to-date') {
    out(
      `nothing to do: ${request.group} uses version ${plan.template.version} with ${plan.to.imageId}, the image of ${describeFamily(plan.from)} ${plan.to.kubernetes} ${plan.to.release}, and every instance (${plan.instances.length}) runs it`,
    );
    return { exitCode: 0, status: 'up-to-date', release: plan };
  }
  const before = await readAvailability(deps.apps);
  const made: { version?: string } = {};
  const pinned = plan.step === 'create' && plan.groupVersion === '$Latest';
  let result: UpgradeResult | undefined;
  try {
    result = await runUpgrade(
      {
        ...request,
        // The refresh step rolls to the group's own version, as a number (a rollback needs one).
        launchTemplateVersion: plan.step === 'create' ? 'new' : plan.template.version,
        releaseLines: renderRelease(plan),
        groupVersionAtStart: pinned ? plan.template.version : undefined,
      },
      plan.step === 'create' ? { ...deps, beforeStart: () => createVersion(request, deps, plan, pinned, made) } : deps,
    );
  } finally {
    if (made.version !== undefined && result?.refreshId === undefined)
      out(
        `launch template version ${made.version} of ${plan.template.templateId} stays, and nothing launches from it: ` +
          `${pinned ? `the group was set from $Latest to version ${plan.template.version}` : `the group uses ${plan.groupVersion}`}` +
          '; run the command again to roll the group to it',
      );
  }
  if (result.exitCode !== 0 || result.status === 'planned') return { ...result, release: plan };
  return afterUpgrade(request, deps, plan, before, result);
}

/**
 * Once approved: a $Latest group set to the number it launches now (so the new version is never
 * live before a refresh moves the group to it), then the version made. Its ClientToken makes a
 * retry or a re-run get the same version back (aws-images.ts).
 */
async function createVersion(
  request: ReleaseRequest,
  deps: ReleaseDeps,
  plan: ReleasePlan,
  pin: boolean,
  made: { version?: string },
): Promise<string> {
  const { out } = deps;
  if (pin) {
    await deps.autoScaling.send(
      new UpdateAutoScalingGroupCommand({
        AutoScalingGroupName: request.group,
        LaunchTemplate: { LaunchTemplateId: plan.template.templateId, Version: plan.template.version },
      }),
    );
    out(
      `set ${request.group} from $Latest to version ${plan.template.version}: the new version launches nothing before the refresh moves the group to it`,
    );
  }
  const description = `${describeFamily(plan.from)} ${plan.to.kubernetes} ${plan.to.release} (${plan.to.imageId}) by graceful-node-termination upgrade --release`;
  made.version = await deps.catalog.createVersion(plan.template, plan.to.imageId, description);
  out(
    `created launch template version ${made.version} of ${plan.template.templateId}: version ${plan.template.version} with image ${plan.to.imageId}`,
  );
  return made.version;
}

/** The checks after a refresh that ended well: every workload back, every node Ready at the version. */
async function afterUpgrade(
  request: ReleaseRequest,
  deps: ReleaseDeps,
  plan: ReleasePlan,
  before: Availability,
  result: UpgradeResult,
): Promise<UpgradeResult & { readonly release: ReleasePlan; readonly unavailable: readonly string[] }> {
  const { out } = deps;
  const unavailable = await afterChecks(request, deps, plan, before);
  if (unavailable.length === 0) {
    out(
      `after the upgrade: every workload available before is available, every node of ${request.group} is Ready at ${plan.to.kubernetes}`,
    );
    return { ...result, release: plan, unavailable };
  }
  out(`after the upgrade, ${unavailable.length} not as before:`);
  for (const line of unavailable) out(`  ${line}`);
  return {
    ...result,
    exitCode: 1,
    reason: `${unavailable.length} workload(s) or node(s) not available after the upgrade`,
    release: plan,
    unavailable,
  };
}

/** Waits (bounded) for every workload available before, and every node of the group at the new version. */
async function afterChecks(
  request: ReleaseRequest,
  deps: ReleaseDeps,
  plan: ReleasePlan,
  before: Availability,
): Promise<string[]> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const deadline = Date.now() + deps.availableTimeoutMs;
  deps.out(`checking workloads and the group's nodes (up to ${Math.round(deps.availableTimeoutMs / 1000)} s)`);
  for (;;) {
    const lost = lostAvailability(before, await readAvailability(deps.apps)).map(
      (k) => `${k}: not available (it was before the upgrade)`,
    );
    const { AutoScalingGroups } = await deps.autoScaling.send(
      new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [request.group] }),
    );
    const instances = (AutoScalingGroups?.[0]?.Instances ?? []).flatMap((i) =>
      i.InstanceId && i.LifecycleState === 'InService' ? [i.InstanceId] : [],
    );
    const names = await deps.nodesOf(instances);
    const behind = nodesBehind(await deps.nodeVersions(names), plan.to.kubernetes).map((n) => `node ${n}`);
    const missing =
      instances.length > names.length
        ? [`${instances.length - names.length} instance(s) of ${request.group} without a node`]
        : [];
    const all = [...lost, ...behind, ...missing];
    if (all.length === 0 || Date.now() >= deadline) return all;
    await sleep(Math.min(5_000, Math.max(0, deadline - Date.now())));
  }
}
