// What `upgrade` will do, shown before it does it (eksctl's convention: nothing changes without
// --approve or, on a terminal, a typed "yes"), and the deployment whose alarms guard the
// refresh, found from the group's own lifecycle hooks when not named.
import {
  DescribeLifecycleHooksCommand,
  type AutoScalingClient,
  type StartInstanceRefreshCommandInput,
} from '@aws-sdk/client-auto-scaling';
import { createInterface } from 'node:readline/promises';
import { UsageError } from './command-options.js';
import type { Finding } from './preflight.js';

export interface UpgradePlan {
  readonly group: string;
  readonly region: string | undefined;
  readonly strategy: string;
  readonly launchTemplateVersion: string | undefined;
  /** `--release`: what the new launch template version will be (upgrade-release.ts). */
  readonly releaseLines?: readonly string[] | undefined;
  /** The group's instances now; those already on the target configuration are skipped (SkipMatching). */
  readonly instances: readonly string[];
  readonly minHealthyPercentage: number | undefined;
  readonly maxHealthyPercentage: number | undefined;
  readonly autoRollback: boolean;
  readonly deployment: string | undefined;
  /** Where the deployment's name came from. */
  readonly deploymentFrom: 'option' | 'lifecycle hooks' | 'none';
  readonly alarms: readonly string[];
  readonly preflight: { readonly nodes: number; readonly blockers: number; readonly findings: readonly Finding[] };
  /** The group's custom termination policy and what its maintenance windows mean for the refresh. */
  readonly terminationPolicy?: string | undefined;
}

export function planOf(
  o: Omit<UpgradePlan, 'minHealthyPercentage' | 'maxHealthyPercentage' | 'autoRollback'>,
  input: StartInstanceRefreshCommandInput,
): UpgradePlan {
  const p = input.Preferences ?? {};
  return {
    ...o,
    minHealthyPercentage: p.MinHealthyPercentage,
    maxHealthyPercentage: p.MaxHealthyPercentage,
    autoRollback: p.AutoRollback ?? false,
  };
}

/** The plan for a person: one fact per line. */
export function renderPlan(plan: UpgradePlan): string[] {
  const batch =
    plan.strategy === 'minimal'
      ? `terminate first: at least ${plan.minHealthyPercentage}% of the group stays in service`
      : `launch first: up to ${plan.maxHealthyPercentage}% of the group during the refresh, never below 100%`;
  const { preflight } = plan;
  return [
    `plan: instance refresh of ${plan.group} in ${plan.region ?? 'the configured region'}`,
    ...(plan.releaseLines ?? [
      `  launch template version: ${plan.launchTemplateVersion ?? "the group's own configuration"}`,
    ]),
    `  instances to replace:    ${plan.instances.length} (${plan.instances.join(', ') || 'none'}; those already matching are skipped)`,
    `  strategy:                ${plan.strategy} (${batch})`,
    `  alarms:                  ${plan.alarms.length > 0 ? `${plan.alarms.join(', ')} (deployment ${plan.deployment} from ${plan.deploymentFrom})` : 'none: a drain in trouble will not stop the refresh (pass --deployment)'}`,
    `  auto rollback:           ${plan.autoRollback ? 'yes' : 'no'}`,
    `  preflight:               ${preflight.nodes} node(s), ${preflight.blockers} blocker(s), ${preflight.findings.length - preflight.blockers} other finding(s)`,
    ...(plan.terminationPolicy !== undefined ? [`  termination policy:      ${plan.terminationPolicy}`] : []),
  ];
}

/** Our hooks on a group: `<deployment>-launch` and `<deployment>-terminate` (infra/settings.ts). */
export function deploymentsOfHooks(
  hooks: readonly { LifecycleHookName?: string | undefined; LifecycleTransition?: string | undefined }[],
): string[] {
  const named = (suffix: string, transition: string) =>
    hooks
      .filter((h) => h.LifecycleTransition === transition && h.LifecycleHookName?.endsWith(suffix))
      .map((h) => h.LifecycleHookName!.slice(0, -suffix.length));
  const launch = new Set(named('-launch', 'autoscaling:EC2_INSTANCE_LAUNCHING'));
  return named('-terminate', 'autoscaling:EC2_INSTANCE_TERMINATING').filter((d) => d !== '' && launch.has(d));
}

/** The deployment that serves the group, from its hooks: one, or none (several is for the operator to choose). */
export async function findDeployment(autoScaling: AutoScalingClient, group: string): Promise<string | undefined> {
  const answer = await autoScaling.send(new DescribeLifecycleHooksCommand({ AutoScalingGroupName: group }));
  const found = deploymentsOfHooks(answer?.LifecycleHooks ?? []);
  if (found.length > 1)
    throw new UsageError(
      `the group ${group} is served by several deployments (${found.join(', ')}): name one with --deployment`,
    );
  return found[0];
}

/** On a terminal: asks, and only an explicit "yes" goes ahead. */
export async function askYes(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return (await rl.question(question)).trim().toLowerCase() === 'yes';
  } finally {
    rl.close();
  }
}
