// graceful-node-termination uninstall (--cluster C | --stack-name S) [--approve]
//   (npm run release:uninstall -- ...)
//
// Takes a deployment made by `install` (or any stack of the release template) away in the safe
// order: 1. the drainer out of the groups' termination policies (a group whose custom policy
// no longer answers stops scaling in: docs/termination-policy.md), 2. the stack deleted (the
// hooks go first with it, so no new drain starts on a function about to go), 3. every mark
// the deployment left on nodes and groups taken back (`cleanup`). Refused while an instance
// refresh runs on a served group or a lifecycle action waits on an instance (a drain in
// progress), unless --force. Run again after a failure: each step finds its work done.
import type { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { CloudFormationClient, DeleteStackCommand, type Stack } from '@aws-sdk/client-cloudformation';
import { createKubeHttp } from '../lambda/adapters/kubernetes/kube-http.js';
import { rbacName } from '../lambda/installer/rbac.js';
import { resolveAwsAccess } from './aws-access.js';
import { autoScalingGroupTags, removeLeftovers, renderCleanup, runCleanup, type CleanupDeps } from './cleanup.js';
import { endpointFromKubeConfig, kubeconfigGateway } from './cluster-access.js';
import { exitCodes, outputFormat, parseCommand, UsageError } from './command-options.js';
import { atAws, atKubernetes } from './failure.js';
import { defaultStackName, describeGroups, groupRefusals } from './install.js';
import { loadKubeAccess } from './kube-access.js';
import { formatOutput } from './output.js';
import { busy, describeStack, failureReasons, outputOf, waitForStack } from './release-stack.js';
import { runAsCommand } from './run-command.js';
import { applyPolicy, planPolicy, type PolicyPlan } from './termination-policy.js';
import { askYes } from './upgrade-plan.js';
import { uninstallUsage } from './usage.js';

export interface UninstallDeps {
  readonly autoScaling: AutoScalingClient;
  readonly cloudFormation: CloudFormationClient;
  readonly cleanup: CleanupDeps;
  readonly region: string;
  readonly sleep: (ms: number) => Promise<void>;
  readonly say: (line: string) => void;
}

export interface UninstallPlan {
  readonly stack: string;
  readonly region: string;
  /** undefined: there is no such stack (deleted already, or never made). */
  readonly status: string | undefined;
  /**
   * Whose marks to take back: --deployment, else the stack's output. undefined without either: a
   * stack that is not there under this name may be another name's, and guessing the default
   * deployment name could take back the marks of a deployment that is alive.
   */
  readonly deployment: string | undefined;
  readonly groups: readonly string[];
  readonly refused: readonly string[];
  /** Groups whose termination policies name the stack's function: what disabling changes. */
  readonly policies: readonly PolicyPlan[];
  /** The marks the deployment left (cleanup's dry run); undefined when no deployment is known. */
  readonly marks: Awaited<ReturnType<typeof runCleanup>> | undefined;
  readonly done: readonly string[];
}

const lifecycleWaits = ['Pending:Wait', 'Terminating:Wait', 'Warmed:Pending:Wait', 'Warmed:Terminating:Wait'];

/** Instances a lifecycle action of a hook waits on: a launch being admitted or a drain running. */
async function waitingInstances(autoScaling: AutoScalingClient, groups: readonly string[]): Promise<string[]> {
  return (await describeGroups(autoScaling, groups)).flatMap((g) =>
    (g.Instances ?? [])
      .filter((instance) => lifecycleWaits.includes(instance.LifecycleState ?? ''))
      .map(
        (instance) =>
          `group ${g.AutoScalingGroupName}: instance ${instance.InstanceId} is ${instance.LifecycleState}: a drain or ` +
          'a launch is in progress; wait for it (or pass --force to cut it short)',
      ),
  );
}

const groupsOf = (stack: Stack | undefined, extra: readonly string[]): string[] => {
  const listed = stack?.Parameters?.find((p) => p.ParameterKey === 'AutoScalingGroupNames')?.ParameterValue ?? '';
  return [...new Set([...listed.split(',').filter(Boolean), ...extra])];
};

/** What uninstall would do, read only. */
export async function planUninstall(
  o: { stack: string; deployment?: string | undefined; groups: readonly string[]; force: boolean },
  deps: UninstallDeps,
): Promise<UninstallPlan> {
  const stack = await describeStack(deps.cloudFormation, o.stack);
  const deployment = o.deployment ?? (stack && (outputOf(stack, 'DeploymentName') ?? rbacName));
  const groups = groupsOf(stack, o.groups);
  const existing = groups.length > 0 ? await liveGroups(deps.autoScaling, groups) : [];
  const refused = existing.length > 0 ? await groupRefusals(deps.autoScaling, existing) : [];
  if (!o.force && stack !== undefined) refused.push(...(await waitingInstances(deps.autoScaling, existing)));
  if (busy(stack?.StackStatus) && stack?.StackStatus !== 'DELETE_IN_PROGRESS')
    refused.push(`stack ${o.stack} is ${stack?.StackStatus}: wait until CloudFormation is done with it`);
  const arn = stack && outputOf(stack, 'TerminationPolicyFunctionArn');
  const policies: PolicyPlan[] = [];
  for (const group of arn ? existing : []) {
    const plan = await planPolicy(deps.autoScaling, 'disable', group, undefined);
    if (plan.before.includes(arn!)) policies.push(plan);
  }
  const marks =
    deployment === undefined
      ? undefined
      : await runCleanup({ deployment, dryRun: true, groups: existing }, deps.cleanup);
  return {
    stack: o.stack,
    region: deps.region,
    status: stack?.StackStatus,
    deployment,
    groups,
    refused,
    policies,
    marks,
    done: [],
  };
}

/** The groups of `groups` that still exist (a group deleted before its stack is no refusal). */
async function liveGroups(autoScaling: AutoScalingClient, groups: readonly string[]): Promise<string[]> {
  const live = new Set((await describeGroups(autoScaling, groups)).map((g) => g.AutoScalingGroupName));
  return groups.filter((g) => live.has(g));
}

/** The three steps, in order; each says what it did. */
export async function applyUninstall(plan: UninstallPlan, deps: UninstallDeps): Promise<UninstallPlan> {
  const done: string[] = [];
  for (const policy of plan.policies) {
    await applyPolicy(deps.autoScaling, policy);
    done.push(`group ${policy.group}: TerminationPolicies are ${policy.after.join(', ')}`);
    deps.say(`  ${done.at(-1)}`);
  }
  if (plan.status !== undefined) {
    const started = new Date();
    if (plan.status !== 'DELETE_IN_PROGRESS')
      await deps.cloudFormation.send(new DeleteStackCommand({ StackName: plan.stack }));
    const status = await waitForStack(deps.cloudFormation, plan.stack, { sleep: deps.sleep, say: deps.say });
    if (status !== 'DELETE_COMPLETE') {
      const reasons = await failureReasons(deps.cloudFormation, plan.stack, started);
      throw new Error(`stack ${plan.stack} ended ${status}: ${reasons.slice(0, 3).join('; ') || 'see its events'}`);
    }
    done.push(`stack ${plan.stack}: deleted`);
  }
  if (plan.deployment === undefined || plan.marks === undefined) return { ...plan, done };
  const marks = await runCleanup(
    { deployment: plan.deployment, dryRun: false, groups: plan.marks.groups },
    deps.cleanup,
  );
  done.push(renderCleanup(marks).split('\n').at(-1)!);
  return { ...plan, marks, done };
}

export function renderUninstall(plan: UninstallPlan): string {
  const lines = [
    `uninstall: stack ${plan.stack} in ${plan.region}: ${plan.status ?? 'not there (deleted already, or another name: --stack-name)'}; deployment ${plan.deployment ?? 'unknown'}`,
  ];
  for (const r of plan.refused) lines.push(`refused: ${r}`);
  if (plan.refused.length > 0) return lines.join('\n');
  lines.push('plan, in this order:');
  lines.push(
    plan.policies.length === 0
      ? '  1. termination policies: no group names the drainer; nothing to change'
      : `  1. termination policies: the drainer taken out of ${plan.policies.map((p) => `${p.group} (${p.before.join(', ')} -> ${p.after.join(', ')})`).join(', ')}`,
  );
  lines.push(
    plan.status === undefined
      ? '  2. the stack: nothing to delete'
      : `  2. delete stack ${plan.stack}: the hooks on ${plan.groups.join(', ') || 'its groups'}, the topic, the functions, their roles and alarms`,
  );
  if (plan.marks === undefined)
    lines.push(
      '  3. the marks: no stack to name the deployment; to take back the marks of one whose stack is gone, pass --deployment',
    );
  else {
    const count = plan.marks.nodes.reduce((n, x) => n + x.marks.length, 0);
    lines.push(
      `  3. take back the marks of ${plan.deployment}: ${count} on ${plan.marks.nodes.length} node(s), ${plan.marks.groups.length} group tag(s)`,
    );
  }
  for (const line of plan.done) lines.push(`done: ${line}`);
  return lines.join('\n');
}

const uninstallOptions = {
  cluster: { type: 'string' },
  'stack-name': { type: 'string' },
  deployment: { type: 'string' },
  group: { type: 'string', multiple: true },
  force: { type: 'boolean', default: false },
  approve: { type: 'boolean', default: false },
} as const;

/** The command: `graceful-node-termination uninstall`, `npm run release:uninstall`. */
export async function main(args: readonly string[] = process.argv.slice(2)): Promise<number> {
  const { values } = parseCommand('uninstall', args, uninstallOptions, []);
  if (values.help) {
    console.log(uninstallUsage);
    return exitCodes.ok;
  }
  const format = outputFormat(values);
  const say = format === 'table' ? (line: string) => console.log(line) : (line: string) => console.error(line);
  const stack = values['stack-name'] ?? (values.cluster ? defaultStackName(values.cluster) : undefined);
  if (!stack)
    throw new UsageError('name the stack with --stack-name, or the cluster with --cluster (see uninstall --help)');
  const kube = loadKubeAccess(values);
  const aws = await resolveAwsAccess(values);
  const kubeHttp = createKubeHttp(endpointFromKubeConfig(kube.kc), {
    userAgent: 'graceful-node-termination-cli',
    timeoutMs: 15_000,
  });
  const deps: UninstallDeps = {
    autoScaling: aws.autoScaling,
    cloudFormation: new CloudFormationClient({ region: aws.region, credentials: aws.autoScaling.config.credentials }),
    cleanup: {
      nodes: kubeconfigGateway(kube.kc),
      removeLeftovers: (node) => removeLeftovers(kubeHttp, node),
      groups: autoScalingGroupTags(aws.autoScaling),
    },
    region: aws.region,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    say,
  };
  const where = { server: kube.server, context: kube.context, region: aws.region, profile: aws.profile };
  const o = { stack, deployment: values.deployment, groups: values.group ?? [], force: values.force };
  const plan = await atAws(where, 'uninstall (CloudFormation DescribeStacks, Auto Scaling)', () =>
    atKubernetes(where, 'read nodes', () => planUninstall(o, deps)),
  );
  if (format === 'table') console.log(renderUninstall(plan));
  if (plan.refused.length > 0) {
    if (format !== 'table') console.log(formatOutput(format, plan, () => renderUninstall(plan)));
    return exitCodes.blocker;
  }
  const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true && format === 'table';
  const go = values.approve || (interactive && (await askYes(`uninstall ${plan.stack}? Type yes to go on: `)));
  if (!go) {
    if (format !== 'table') console.log(formatOutput(format, plan, () => renderUninstall(plan)));
    else console.log('not changed: pass --approve to uninstall');
    return exitCodes.ok;
  }
  const result = await atAws(where, 'uninstall (UpdateAutoScalingGroup, CloudFormation DeleteStack, DeleteTags)', () =>
    atKubernetes(where, 'patch nodes', () => applyUninstall(plan, deps)),
  );
  if (format !== 'table') console.log(formatOutput(format, result, () => renderUninstall(result)));
  else for (const line of result.done) console.log(`done: ${line}`);
  return exitCodes.ok;
}

runAsCommand(import.meta.url, 'uninstall', main);
