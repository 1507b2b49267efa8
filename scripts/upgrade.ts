// npm run upgrade -- <group> [--launch-template-version V] [--max-unavailable N |
//   --max-unavailable-percentage P] [--strategy default|minimal] [--force] [--auto-rollback]
//   [--deployment NAME] [--region R] [--context C]
//
// A node group upgrade with managed-group parity on Auto Scaling instance refresh: the
// drainability preflight first (refuses on a certain blocker without --force), then a
// refresh whose preferences mirror managed groups (refresh-preferences.ts), with the
// deployment's DrainsTimedOut and LaunchesAbandoned alarms in its alarm specification, so a
// drain in trouble stops it (and with --auto-rollback rolls it back), naming the blocking pod
// and budget in the Events it shows. It follows the refresh with a progress bar until it ends
// and exits non-zero with the reason when it fails. Ctrl-C leaves the refresh running.
import { lambdaArnPattern } from './maintenance-windows-note.js';
import {
  AutoScalingClient,
  CreateOrUpdateTagsCommand,
  DeleteTagsCommand,
  DescribeAutoScalingGroupsCommand,
  DescribeInstanceRefreshesCommand,
  StartInstanceRefreshCommand,
  type StartInstanceRefreshCommandInput,
} from '@aws-sdk/client-auto-scaling';
import type { CoreV1Api, CoreV1Event, PolicyV1Api } from '@kubernetes/client-node';
import { reportingComponent } from '../lambda/adapters/kubernetes/object-codecs.js';
import { boundStrategyTag, pendingStrategyTag } from '../lambda/refresh/strategy-tag.js';
import { refreshStrategyTag } from '../lambda/shared/group-tags.js';
import { checkNodes } from './check.js';
import { hasBlocker, renderFindings } from './preflight.js';
import { startRefreshInput, UpgradeOptionsError, type UpgradeStrategy } from './refresh-preferences.js';
import { findDeployment, planOf, type UpgradePlan } from './upgrade-plan.js';

export interface UpgradeRequest {
  readonly group: string;
  readonly strategy: UpgradeStrategy;
  readonly maxUnavailable?: number | undefined;
  readonly maxUnavailablePercentage?: number | undefined;
  readonly launchTemplateVersion?: string | undefined;
  readonly force: boolean;
  readonly autoRollback: boolean;
  /** The deployment's name (the stack's DeploymentName output): its alarms go in the refresh. Default: found from the group's hooks. */
  readonly deployment?: string | undefined;
  /** Start without asking (--approve); otherwise deps.confirm decides, and without it nothing starts. */
  readonly approve: boolean;
  /** For the plan and messages. */
  readonly region?: string | undefined;
  /** `--release`: the plan's lines for the launch template version made once approved (upgrade-release.ts). */
  readonly releaseLines?: readonly string[] | undefined;
  /** The version the group is on when the refresh starts, when not its own (`--release` sets a $Latest group to a number). */
  readonly groupVersionAtStart?: string | undefined;
}

export interface UpgradeDeps {
  readonly autoScaling: AutoScalingClient;
  readonly core: CoreV1Api;
  readonly policy: PolicyV1Api;
  /** The nodes of these instances (EC2 names, the providerID checked, by default). */
  readonly nodesOf: (instanceIds: readonly string[]) => Promise<string[]>;
  /** Takes back the refresh's marks if the handler did not (its ending event is best effort). */
  readonly unmarkOutdated?: (group: string, refreshId: string) => Promise<readonly { node: string }[]>;
  readonly out: (line: string) => void;
  /** Shows the plan (before the refresh starts or is refused). */
  readonly showPlan: (plan: UpgradePlan) => void;
  /** Asks the operator (a terminal); absent: no one to ask, nothing starts without --approve. */
  readonly confirm?: ((plan: UpgradePlan) => Promise<boolean>) | undefined;
  /** Redraws the progress line in place (a terminal); otherwise a line per change. */
  readonly tty: boolean;
  readonly pollMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Set by Ctrl-C: stop following, leave the refresh running. */
  readonly interrupted?: () => boolean;
  /**
   * Once approved, before the refresh starts: makes the launch template version to roll to (`--release`). Called
   * only while no refresh of the group is active, the one thing that makes Auto Scaling refuse the start.
   */
  readonly beforeStart?: () => Promise<string>;
  /** What the group's custom termination policy (a function ARN) means for the refresh: its maintenance windows. */
  readonly windowNote?: (functionArn: string) => Promise<string>;
}

export interface UpgradeResult {
  readonly exitCode: number;
  readonly refreshId?: string | undefined;
  readonly status?: string | undefined;
  readonly reason?: string | undefined;
  readonly plan?: UpgradePlan | undefined;
}

const ended: ReadonlySet<string> = new Set([
  'Successful',
  'Failed',
  'Cancelled',
  'RollbackSuccessful',
  'RollbackFailed',
  'Baking',
]);
/**
 * A refresh in these states is not over, and Auto Scaling refuses to start another beside it
 * (StartInstanceRefresh: InstanceRefreshInProgress, "an active instance refresh already exists"; Baking
 * still ends in a rollback or a success):
 * https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_StartInstanceRefresh.html
 * https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_InstanceRefresh.html
 */
const active: ReadonlySet<string> = new Set(['Pending', 'InProgress', 'Cancelling', 'RollbackInProgress', 'Baking']);

/** The group's refresh that is not over, as Auto Scaling says now; undefined when there is none. */
export async function activeRefresh(
  autoScaling: AutoScalingClient,
  group: string,
): Promise<{ readonly id: string; readonly status: string } | undefined> {
  const answer = await autoScaling.send(new DescribeInstanceRefreshesCommand({ AutoScalingGroupName: group }));
  const found = answer?.InstanceRefreshes?.find((r) => active.has(r.Status ?? ''));
  return found ? { id: found.InstanceRefreshId ?? '?', status: found.Status! } : undefined;
}

/** The one-line refusal for a group whose refresh is not over. */
export const refreshInProgress = (group: string, refresh: { id: string; status: string }) =>
  `refusing: instance refresh ${refresh.id} of ${group} is ${refresh.status}, and Auto Scaling starts no second one ` +
  `(InstanceRefreshInProgress); wait for it to end, or cancel it: aws autoscaling cancel-instance-refresh --auto-scaling-group-name ${group}`;

/** Reasons of our Events that say where a drain stands. */
const progressReasons: ReadonlySet<string> = new Set([
  'DrainStarted',
  'Cordoned',
  'EvictionBlocked',
  'EvictionBlockedLong',
  'WaitingForBatchPods',
  'DrainTimedOut',
  'Drained',
  'LaunchAdmitted',
  'LaunchAbandoned',
]);

export function progressBar(percent: number, width = 24): string {
  const filled = Math.round((Math.max(0, Math.min(100, percent)) / 100) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round(percent)).padStart(3)}%`;
}

/** The last word of our Events per node since the refresh began: what each drain is doing now. */
export function currentDrains(events: readonly CoreV1Event[], sinceMs: number): string[] {
  const latest = new Map<string, CoreV1Event>();
  // In the order they were written (the etcd revision; timestamps have second resolution).
  const ordered = [...events].sort(
    (x, y) => Number(x.metadata?.resourceVersion ?? 0) - Number(y.metadata?.resourceVersion ?? 0),
  );
  for (const e of ordered) {
    const at = new Date(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? 0).getTime();
    if (at < sinceMs - 1000 || !progressReasons.has(e.reason ?? '')) continue;
    const node =
      e.involvedObject.kind === 'Node'
        ? e.involvedObject.name
        : `${e.involvedObject.namespace}/${e.involvedObject.name}`;
    if (node) latest.set(node ?? '', e);
  }
  return [...latest.entries()]
    .filter(([, e]) => e.reason !== 'Drained' && e.reason !== 'LaunchAdmitted')
    .map(([what, e]) => `${what}: ${e.reason} ${(e.message ?? '').slice(0, 160)}`);
}

/** The preflight, the refresh's input and the plan; a reason to stop instead when there is one. */
async function prepare(
  request: UpgradeRequest,
  deps: UpgradeDeps,
): Promise<{ plan: UpgradePlan; input: StartInstanceRefreshCommandInput } | UpgradeResult> {
  const { autoScaling, out } = deps;
  const { AutoScalingGroups } = await autoScaling.send(
    new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [request.group] }),
  );
  const group = AutoScalingGroups?.[0];
  if (group === undefined)
    return {
      exitCode: 2,
      reason: `no Auto Scaling group named ${request.group}${request.region ? ` in ${request.region}` : ''}`,
    };
  const instances = (group.Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
  const nodes = await deps.nodesOf(instances);
  out(`preflight: ${nodes.length} node(s) of ${request.group}`);
  const check = await checkNodes(deps.core, deps.policy, nodes, { terminateFirst: request.strategy === 'minimal' });
  for (const line of renderFindings(check.nodes, check.findings).split('\n')) out(`  ${line}`);
  const deployment = request.deployment ?? (await findDeployment(autoScaling, request.group));
  const alarms = deployment ? [`${deployment}-DrainsTimedOut`, `${deployment}-LaunchesAbandoned`] : [];
  let input: StartInstanceRefreshCommandInput;
  try {
    input = startRefreshInput({
      group: request.group,
      strategy: request.strategy,
      maxUnavailable: request.maxUnavailable,
      maxUnavailablePercentage: request.maxUnavailablePercentage,
      desiredCapacity: group.DesiredCapacity ?? 0,
      launchTemplateVersion: request.launchTemplateVersion,
      launchTemplate: group.LaunchTemplate
        ? { id: group.LaunchTemplate.LaunchTemplateId, name: group.LaunchTemplate.LaunchTemplateName }
        : undefined,
      groupVersion:
        request.groupVersionAtStart ??
        (group.LaunchTemplate ?? group.MixedInstancesPolicy?.LaunchTemplate?.LaunchTemplateSpecification)?.Version,
      autoRollback: request.autoRollback,
      alarms,
    });
  } catch (error) {
    if (error instanceof UpgradeOptionsError) return { exitCode: 2, reason: error.message };
    throw error;
  }
  const blockers = check.findings.filter((f) => f.severity === 'blocker').length;
  const plan = planOf(
    {
      group: request.group,
      region: request.region,
      strategy: request.strategy,
      launchTemplateVersion: request.launchTemplateVersion,
      releaseLines: request.releaseLines,
      instances,
      deployment,
      deploymentFrom: request.deployment ? 'option' : deployment ? 'lifecycle hooks' : 'none',
      alarms,
      preflight: { nodes: nodes.length, blockers, findings: check.findings },
      terminationPolicy: await terminationPolicyNote(group.TerminationPolicies?.[0], deps),
    },
    input,
  );
  deps.showPlan(plan);
  if (hasBlocker(check.findings) && !request.force) {
    out('refusing to start: the preflight found a certain blocker (fix it, or pass --force to start anyway)');
    return { exitCode: 3, reason: 'preflight blocker', plan };
  }
  return { plan, input };
}

export async function runUpgrade(request: UpgradeRequest, deps: UpgradeDeps): Promise<UpgradeResult> {
  const { autoScaling, out } = deps;
  const prepared = await prepare(request, deps);
  if ('exitCode' in prepared) return prepared;
  const { plan } = prepared;
  let { input } = prepared;
  if (!request.approve) {
    const approved = deps.confirm ? await deps.confirm(plan) : false;
    if (!approved) {
      out(`nothing was changed: ${deps.confirm ? 'not confirmed' : 'run again with --approve to start the refresh'}`);
      return { exitCode: 0, status: 'planned', plan };
    }
  }
  if (deps.beforeStart) {
    const made = await makeTarget(request, deps, deps.beforeStart, input);
    if ('exitCode' in made) return { ...made, plan };
    input = made;
  }
  const alarms = plan.alarms;
  const tag = {
    ResourceId: request.group,
    ResourceType: 'auto-scaling-group',
    Key: refreshStrategyTag,
    PropagateAtLaunch: false,
  };
  const setTag = (value: string) =>
    autoScaling.send(new CreateOrUpdateTagsCommand({ Tags: [{ ...tag, Value: value }] }));
  const tagged = request.strategy === 'minimal';
  let started: { refreshId: string; startedMs: number } | undefined;
  let followed: Followed | undefined;
  try {
    // The drainer cordons all outdated nodes at the start only when this tag names the refresh;
    // until StartInstanceRefresh answers, it names the next few minutes (strategy-tag.ts).
    if (tagged) await setTag(pendingStrategyTag(Date.now()));
    if (deps.interrupted?.()) return { exitCode: 130, reason: 'interrupted before the refresh started' };
    const startedMs = Date.now();
    const refreshId = await startRefresh(autoScaling, input);
    if (refreshId === undefined) {
      out(`refused by Auto Scaling: another instance refresh of ${request.group} started meanwhile`);
      return { exitCode: 3, status: 'refused', reason: 'instance refresh in progress', plan };
    }
    started = { refreshId, startedMs };
    if (tagged) await setTag(boundStrategyTag(refreshId));
    const p = input.Preferences!;
    out(
      `instance refresh ${refreshId} started: strategy ${request.strategy} (MinHealthyPercentage ${p.MinHealthyPercentage}, MaxHealthyPercentage ${p.MaxHealthyPercentage}), ` +
        `skip matching, alarms: ${alarms.length > 0 ? alarms.join(', ') : 'none'}${p.AutoRollback ? ', auto rollback' : ''}`,
    );
    followed = await follow(request, deps, started);
  } finally {
    // Not left on the group: removed whether the start failed, the refresh ended or the
    // command was interrupted (a tag that names a refresh only ever applies to it anyway).
    if (tagged) {
      try {
        await autoScaling.send(new DeleteTagsCommand({ Tags: [tag] }));
      } catch (error) {
        out(
          `warning: could not remove the tag ${refreshStrategyTag} from ${request.group} (the reconciler removes it once its refresh is over): ${(error as Error).message}`,
        );
      }
    }
  }
  if (started === undefined || followed === undefined)
    throw new Error('unreachable: the refresh neither started nor failed');
  const { refreshId, startedMs } = started;
  if (followed.interrupted) return { exitCode: 130, refreshId, status: 'following-stopped', plan };
  const { status, reason } = followed;
  const undone = (await deps.unmarkOutdated?.(request.group, refreshId)) ?? [];
  if (undone.length > 0)
    out(`took back the refresh's marks on ${undone.length} node(s) its ending event had not reached`);
  const seconds = Math.round((Date.now() - startedMs) / 1000);
  if (status === 'Successful' || status === 'Baking') {
    out(
      `instance refresh ${refreshId} ${status === 'Baking' ? 'replaced every instance (baking)' : 'succeeded'} after ${seconds} s`,
    );
    return { exitCode: 0, refreshId, status, plan };
  }
  out(`instance refresh ${refreshId} ended ${status} after ${seconds} s${reason ? `: ${reason}` : ''}`);
  return { exitCode: 1, refreshId, status, reason, plan };
}

/**
 * `--release`'s version made, and the refresh's input pointed at it: only when no Ctrl-C came and
 * no refresh of the group is active, asked again now that it was approved (a prompt can wait
 * long), so nothing is made for a refresh Auto Scaling would refuse.
 */
async function makeTarget(
  request: UpgradeRequest,
  deps: UpgradeDeps,
  make: () => Promise<string>,
  input: StartInstanceRefreshCommandInput,
): Promise<StartInstanceRefreshCommandInput | UpgradeResult> {
  if (deps.interrupted?.()) return { exitCode: 130, reason: 'interrupted before the refresh started' };
  const running = await activeRefresh(deps.autoScaling, request.group);
  if (running) {
    deps.out(refreshInProgress(request.group, running));
    return { exitCode: 3, status: 'refused', reason: 'instance refresh in progress' };
  }
  const version = await make();
  return {
    ...input,
    DesiredConfiguration: {
      ...input.DesiredConfiguration,
      LaunchTemplate: { ...input.DesiredConfiguration?.LaunchTemplate, Version: version },
    },
  };
}

/** The refresh's id; undefined when Auto Scaling refused it for one that began since the plan (an overlapping run). */
async function startRefresh(
  autoScaling: AutoScalingClient,
  input: StartInstanceRefreshCommandInput,
): Promise<string | undefined> {
  try {
    return (await autoScaling.send(new StartInstanceRefreshCommand(input))).InstanceRefreshId!;
  } catch (error) {
    if ((error as Error).name === 'InstanceRefreshInProgressFault') return undefined;
    throw error;
  }
}

interface Followed {
  readonly interrupted: boolean;
  readonly status: string;
  readonly reason: string | undefined;
}

/** Follows the refresh with a progress block until it ends or the command is interrupted. */
async function follow(
  request: UpgradeRequest,
  deps: UpgradeDeps,
  started: { refreshId: string; startedMs: number },
): Promise<Followed> {
  const { autoScaling, out } = deps;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const { refreshId } = started;
  let last = '';
  for (;;) {
    if (deps.interrupted?.()) {
      out('');
      out(
        `stopped following; the instance refresh ${refreshId} keeps running. Follow it with: aws autoscaling describe-instance-refreshes --auto-scaling-group-name ${request.group}`,
      );
      out(`cancel it with: aws autoscaling cancel-instance-refresh --auto-scaling-group-name ${request.group}`);
      return { interrupted: true, status: 'following-stopped', reason: undefined };
    }
    const { InstanceRefreshes } = await autoScaling.send(
      new DescribeInstanceRefreshesCommand({ AutoScalingGroupName: request.group, InstanceRefreshIds: [refreshId] }),
    );
    const refresh = InstanceRefreshes?.[0];
    const status = refresh?.Status ?? 'unknown';
    const events = (await deps.core.listEventForAllNamespaces({ fieldSelector: `source=${reportingComponent}` })).items;
    const drains = currentDrains(events, started.startedMs);
    const line = `${progressBar(refresh?.PercentageComplete ?? 0)}  ${status}  ${refresh?.InstancesToUpdate ?? '?'} instance(s) still to replace`;
    const text = [line, ...drains.map((d) => `    ${d}`)].join('\n');
    if (text !== last) {
      // On a terminal the block is redrawn in place (cursor up over the last one, erase below).
      out(deps.tty && last !== '' ? `\x1b[${last.split('\n').length}F\x1b[J${text}` : text);
      last = text;
    }
    if (ended.has(status)) return { interrupted: false, status, reason: refresh?.StatusReason };
    await sleep(deps.pollMs ?? 5_000);
  }
}

/** A refresh's terminations go through the group's custom termination policy: when it may let them happen. */
async function terminationPolicyNote(first: string | undefined, deps: UpgradeDeps): Promise<string | undefined> {
  if (first === undefined || !lambdaArnPattern.test(first) || deps.windowNote === undefined) return undefined;
  return `${first}: ${await deps.windowNote(first).catch((error: unknown) => `its maintenance windows could not be read (${(error as Error).message})`)}`;
}
