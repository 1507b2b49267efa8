// graceful-node-termination install --bucket B (--group G ... | --eksctl-cluster C) [--approve]
//   (npm run release:install -- ...; npm's own `install` script name is taken)
//
// For eksctl and console users: the release (the template and Lambda zip shipped inside the CLI
// package, or --release-dir) deployed as a CloudFormation stack. The zip and the template go to
// a bucket the user names; a change set is the plan; only --approve (or "yes" on a terminal)
// executes it. Refused while an instance refresh runs on a group (its nodes would leave partly
// undrained). A second run of the same release finds nothing to change: idempotent.
import {
  DescribeAutoScalingGroupsCommand,
  DescribeInstanceRefreshesCommand,
  type AutoScalingClient,
  type AutoScalingGroup,
} from '@aws-sdk/client-auto-scaling';
import {
  CloudFormationClient,
  DeleteChangeSetCommand,
  DeleteStackCommand,
  ExecuteChangeSetCommand,
  type Parameter,
} from '@aws-sdk/client-cloudformation';
import { S3Client } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { resolveAwsAccess } from './aws-access.js';
import { exitCodes, outputFormat, parseCommand, UsageError } from './command-options.js';
import { eksctlGroups } from './eksctl-groups.js';
import { atAws } from './failure.js';
import { formatOutput } from './output.js';
import {
  busy,
  describeStack,
  failureReasons,
  objectKey,
  planChangeSet,
  releaseFiles,
  renderChanges,
  templateUrl,
  uploadOnce,
  waitForStack,
  type PlannedChange,
  type ReleaseFiles,
} from './release-stack.js';
import { runAsCommand } from './run-command.js';
import { askYes } from './upgrade-plan.js';
import { installUsage } from './usage.js';

/** Set by the bundle (esbuild define): the CLI's version; the release files ship beside the bin. */
declare const GNT_CLI_VERSION: string | undefined;

/** The parameters install sets itself, from its options. */
const ownParameters = ['ClusterName', 'AutoScalingGroupNames', 'LambdaCodeS3Bucket', 'LambdaCodeS3Key'];

/** Refresh states during which a group's nodes are being replaced (DescribeInstanceRefreshes). */
export const activeRefreshStates = ['Pending', 'InProgress', 'Cancelling', 'RollbackInProgress', 'Baking'];

export interface InstallRequest {
  readonly cluster: string;
  readonly groups: readonly string[];
  readonly bucket: string;
  readonly prefix: string;
  readonly stack: string;
  readonly release: ReleaseFiles;
  /** --parameter Key=Value: template parameters beyond the ones install sets. */
  readonly settings: Readonly<Record<string, string>>;
}

export interface InstallDeps {
  readonly autoScaling: AutoScalingClient;
  readonly cloudFormation: CloudFormationClient;
  readonly s3: S3Client;
  readonly region: string;
  readonly s3Endpoint?: string | undefined;
  readonly sleep: (ms: number) => Promise<void>;
  readonly say: (line: string) => void;
}

export interface InstallPlan {
  readonly stack: string;
  readonly region: string;
  readonly version: string;
  readonly groups: readonly string[];
  /** Why nothing may be done now (a refresh running, the stack busy or failed): exit 3. */
  readonly refused: readonly string[];
  readonly type?: 'CREATE' | 'UPDATE' | undefined;
  readonly changeSet?: string | undefined;
  /** Keys uploaded now (a key the bucket already had with the same bytes is not). */
  readonly uploaded: readonly string[];
  /** undefined: nothing to change (or refused). */
  readonly changes?: readonly PlannedChange[] | undefined;
  readonly applied: boolean;
  readonly status?: string | undefined;
  readonly outputs: Readonly<Record<string, string>>;
}

/** The groups of `names` that exist, described (50 names a call, DescribeAutoScalingGroups' limit). */
export async function describeGroups(
  autoScaling: AutoScalingClient,
  names: readonly string[],
): Promise<AutoScalingGroup[]> {
  const groups: AutoScalingGroup[] = [];
  for (let i = 0; i < names.length; i += 50) {
    const page = await autoScaling.send(
      new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: names.slice(i, i + 50) }),
    );
    groups.push(...(page.AutoScalingGroups ?? []));
  }
  return groups;
}

/** Groups that do not exist, and groups whose nodes an instance refresh is replacing now. */
export async function groupRefusals(autoScaling: AutoScalingClient, groups: readonly string[]): Promise<string[]> {
  const found = new Set((await describeGroups(autoScaling, groups)).map((g) => g.AutoScalingGroupName));
  const missing = groups.filter((g) => !found.has(g));
  if (missing.length > 0) throw new UsageError(`no Auto Scaling group ${missing.join(', ')} in this region`);
  const refused: string[] = [];
  for (const group of groups) {
    const { InstanceRefreshes } = await autoScaling.send(
      new DescribeInstanceRefreshesCommand({ AutoScalingGroupName: group, MaxRecords: 10 }),
    );
    for (const r of InstanceRefreshes ?? [])
      if (activeRefreshStates.includes(r.Status ?? ''))
        refused.push(
          `group ${group}: instance refresh ${r.InstanceRefreshId} is ${r.Status}: the nodes it replaces would leave ` +
            `without a drain or with half the hooks; wait for it to end, or cancel it (aws autoscaling cancel-instance-refresh --auto-scaling-group-name ${group})`,
        );
  }
  return refused;
}

/** The change set's parameters: install's own, the --parameter settings, the rest kept on an update. */
export function stackParameters(
  r: InstallRequest,
  codeKey: string,
  previous: readonly string[] | undefined,
): Parameter[] {
  const given: Record<string, string> = {
    ClusterName: r.cluster,
    AutoScalingGroupNames: r.groups.join(','),
    LambdaCodeS3Bucket: r.bucket,
    LambdaCodeS3Key: codeKey,
    ...r.settings,
  };
  const kept = (previous ?? []).filter((name) => !(name in given) && name in r.release.parameters);
  return [
    ...Object.entries(given).map(([ParameterKey, ParameterValue]) => ({ ParameterKey, ParameterValue })),
    // An update keeps what an earlier install (or the console) set: a re-run never resets a setting.
    ...kept.map((ParameterKey) => ({ ParameterKey, UsePreviousValue: true })),
  ];
}

/** Checks, uploads and the change set: nothing is deployed. */
export async function planInstall(r: InstallRequest, deps: InstallDeps): Promise<InstallPlan> {
  const base = { stack: r.stack, region: deps.region, version: r.release.version, groups: r.groups };
  const empty = { uploaded: [], applied: false, outputs: {} };
  const refused = await groupRefusals(deps.autoScaling, r.groups);
  const stack = await describeStack(deps.cloudFormation, r.stack);
  const status = stack?.StackStatus;
  if (busy(status)) refused.push(`stack ${r.stack} is ${status}: wait until CloudFormation is done with it`);
  if (status === 'ROLLBACK_COMPLETE' || status?.endsWith('_FAILED'))
    refused.push(`stack ${r.stack} is ${status}: see its events in the console, then uninstall it and install again`);
  if (refused.length > 0) return { ...base, ...empty, refused, status };
  const type = stack === undefined || status === 'REVIEW_IN_PROGRESS' ? 'CREATE' : 'UPDATE';
  const codeKey = objectKey(r.prefix, r.release.code);
  const templateKey = objectKey(r.prefix, r.release.template);
  const uploaded: string[] = [];
  for (const [key, name] of [
    [codeKey, r.release.code],
    [templateKey, r.release.template],
  ] as const) {
    if (await uploadOnce(deps.s3, r.bucket, key, join(r.release.directory, name))) uploaded.push(key);
    deps.say(`  s3://${r.bucket}/${key}: ${uploaded.includes(key) ? 'uploaded' : 'already there'}`);
  }
  const changeSet = `install-${Date.now()}`;
  const previous = type === 'UPDATE' ? (stack?.Parameters ?? []).map((p) => p.ParameterKey!) : undefined;
  const planned = await planChangeSet(
    deps.cloudFormation,
    {
      stack: r.stack,
      name: changeSet,
      templateUrl: templateUrl(r.bucket, deps.region, templateKey, deps.s3Endpoint),
      parameters: stackParameters(r, codeKey, previous),
      type,
      tags: { 'graceful-node-termination:version': r.release.version },
    },
    deps.sleep,
  );
  const changes = planned.changes;
  return { ...base, ...empty, refused, type, changeSet: changes ? changeSet : undefined, uploaded, changes, status };
}

/** Executes the planned change set and follows the stack to its end. */
export async function applyInstall(plan: InstallPlan, deps: InstallDeps): Promise<InstallPlan> {
  const started = new Date();
  await deps.cloudFormation.send(new ExecuteChangeSetCommand({ StackName: plan.stack, ChangeSetName: plan.changeSet }));
  const status = await waitForStack(deps.cloudFormation, plan.stack, { sleep: deps.sleep, say: deps.say });
  if (status !== 'CREATE_COMPLETE' && status !== 'UPDATE_COMPLETE') {
    const reasons = await failureReasons(deps.cloudFormation, plan.stack, started);
    throw new Error(`stack ${plan.stack} ended ${status}: ${reasons.slice(0, 3).join('; ') || 'see its events'}`);
  }
  const stack = await describeStack(deps.cloudFormation, plan.stack);
  const outputs = Object.fromEntries((stack?.Outputs ?? []).map((o) => [o.OutputKey!, o.OutputValue ?? '']));
  return { ...plan, applied: true, status, outputs };
}

/** Not approved: the change set goes, and a stack this plan created only to hold it. */
export async function discardPlan(plan: InstallPlan, cfn: CloudFormationClient): Promise<void> {
  if (plan.changeSet === undefined) return;
  await cfn.send(new DeleteChangeSetCommand({ StackName: plan.stack, ChangeSetName: plan.changeSet }));
  if (plan.type === 'CREATE') await cfn.send(new DeleteStackCommand({ StackName: plan.stack }));
}

export function renderInstall(plan: InstallPlan): string {
  const lines = [
    `install: graceful-node-termination ${plan.version}, stack ${plan.stack} in ${plan.region}, groups ${plan.groups.join(', ')}`,
  ];
  for (const r of plan.refused) lines.push(`refused: ${r}`);
  if (plan.refused.length > 0) return lines.join('\n');
  if (plan.changes === undefined)
    lines.push(`nothing to change: the stack already runs this release with these settings`);
  else {
    lines.push(`plan (${plan.type === 'CREATE' ? 'a new stack' : 'an update'}, ${plan.changes.length} change(s)):`);
    lines.push(...renderChanges(plan.changes));
  }
  return lines.join('\n');
}

/** After the change set ran: the stack's status, its outputs and what to do next. */
export function renderDeployed(plan: InstallPlan): string {
  const arn = plan.outputs['TerminationPolicyFunctionArn'] ?? '<TerminationPolicyFunctionArn>';
  return [
    `deployed: stack ${plan.stack} is ${plan.status}`,
    ...Object.entries(plan.outputs).map(([k, v]) => `  ${k}: ${v}`),
    `next: graceful-node-termination check <group>; optionally termination-policy enable <group> --function-arn ${arn}`,
  ].join('\n');
}

/** Levenshtein distance, for naming the parameter a mistyped one was meant to be. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** --parameter Key=Value pairs, each a parameter of the template that install does not set itself. */
export function parseSettings(pairs: readonly string[], release: ReleaseFiles): Record<string, string> {
  const settings: Record<string, string> = {};
  const settable = Object.keys(release.parameters).filter((k) => !ownParameters.includes(k));
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0)
      throw new UsageError(`--parameter ${JSON.stringify(pair)} is not Key=Value (e.g. --parameter Mode=observe)`);
    const key = pair.slice(0, at);
    if (ownParameters.includes(key))
      throw new UsageError(`${key} is set by install itself (--cluster, --group or --eksctl-cluster, --bucket)`);
    if (!settable.includes(key)) {
      // A parameter that contains what was typed first (DrainTimeout: DrainTimeoutSeconds), then the closest spelling.
      const score = (name: string) => (name.toLowerCase().includes(key.toLowerCase()) ? -1 : distance(key, name));
      const nearest = [...settable].sort((a, b) => score(a) - score(b)).slice(0, 3);
      throw new UsageError(
        `the template has no parameter ${key}; nearest: ${nearest.join(', ')} (docs/cloudformation.md lists them)`,
      );
    }
    settings[key] = pair.slice(at + 1);
  }
  return settings;
}

const installOptions = {
  bucket: { type: 'string' },
  prefix: { type: 'string', default: 'graceful-node-termination/' },
  group: { type: 'string', multiple: true },
  'eksctl-cluster': { type: 'string' },
  nodegroup: { type: 'string', multiple: true },
  cluster: { type: 'string' },
  'stack-name': { type: 'string' },
  parameter: { type: 'string', multiple: true },
  'release-dir': { type: 'string' },
  approve: { type: 'boolean', default: false },
} as const;

/** Where the release files are: beside the bundled bin (the CLI package), or a clone's dist/release. */
export function defaultReleaseDir(): string {
  return typeof GNT_CLI_VERSION === 'string'
    ? join(import.meta.dirname, '..', 'release')
    : join(import.meta.dirname, '..', 'dist', 'release');
}

/** The stack's name when --stack-name is not given: one per cluster, as the Terraform module names it. */
export const defaultStackName = (cluster: string): string =>
  `graceful-node-termination-${cluster.replaceAll('_', '-')}`;

async function requestOf(
  values: ReturnType<typeof parseCommand<typeof installOptions>>['values'],
  autoScaling: AutoScalingClient,
  say: (line: string) => void,
): Promise<InstallRequest> {
  const bucket = values.bucket;
  if (!bucket)
    throw new UsageError('name the S3 bucket for the template and the Lambda zip with --bucket (see install --help)');
  const eksctl = values['eksctl-cluster'];
  if (eksctl !== undefined && values.group !== undefined)
    throw new UsageError('give the groups with --group or find them with --eksctl-cluster, not both');
  if (values.nodegroup !== undefined && eksctl === undefined)
    throw new UsageError('--nodegroup goes with --eksctl-cluster');
  const cluster = values.cluster ?? eksctl;
  if (!cluster) throw new UsageError('name the EKS cluster with --cluster (or --eksctl-cluster; see install --help)');
  let groups = values.group ?? [];
  if (eksctl !== undefined) {
    const found = await eksctlGroups(autoScaling, eksctl, values.nodegroup ?? []);
    if (found.length === 0)
      throw new UsageError(
        `no unmanaged nodegroup of eksctl cluster ${eksctl}${values.nodegroup ? ` named ${values.nodegroup.join(', ')}` : ''} ` +
          `in this region (groups tagged alpha.eksctl.io/cluster-name=${eksctl}); managed nodegroups are drained by EKS`,
      );
    for (const g of found) say(`  eksctl cluster ${eksctl}: nodegroup ${g.nodegroup ?? '?'}: group ${g.group}`);
    groups = found.map((g) => g.group);
  }
  if (groups.length === 0)
    throw new UsageError('name the groups with --group (repeatable) or --eksctl-cluster (see install --help)');
  const release = releaseFiles(values['release-dir'] ?? defaultReleaseDir());
  return {
    cluster,
    groups,
    bucket,
    prefix: values.prefix,
    stack: values['stack-name'] ?? defaultStackName(cluster),
    release,
    settings: parseSettings(values.parameter ?? [], release),
  };
}

/** The command: `graceful-node-termination install`, `npm run release:install`. */
export async function main(args: readonly string[] = process.argv.slice(2)): Promise<number> {
  const { values } = parseCommand('install', args, installOptions, []);
  if (values.help) {
    console.log(installUsage);
    return exitCodes.ok;
  }
  const format = outputFormat(values);
  // Progress to stdout for people; to stderr when stdout carries json or yaml.
  const say = format === 'table' ? (line: string) => console.log(line) : (line: string) => console.error(line);
  const aws = await resolveAwsAccess(values);
  const client = { region: aws.region, credentials: aws.autoScaling.config.credentials };
  const deps: InstallDeps = {
    autoScaling: aws.autoScaling,
    cloudFormation: new CloudFormationClient(client),
    // A local stand-in (AWS_ENDPOINT_URL_S3) takes the bucket in the path, not the host name.
    s3: new S3Client({ ...client, forcePathStyle: Boolean(process.env['AWS_ENDPOINT_URL_S3']) }),
    region: aws.region,
    s3Endpoint: process.env['AWS_ENDPOINT_URL_S3'],
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    say,
  };
  const where = { region: aws.region, profile: aws.profile };
  const request = await atAws(where, 'Auto Scaling DescribeAutoScalingGroups', () =>
    requestOf(values, aws.autoScaling, say),
  );
  const plan = await atAws(where, 'install (Auto Scaling, S3 PutObject, CloudFormation CreateChangeSet)', () =>
    planInstall(request, deps),
  );
  if (format === 'table') console.log(renderInstall(plan));
  if (plan.refused.length > 0) {
    if (format !== 'table') console.log(formatOutput(format, plan, () => renderInstall(plan)));
    return exitCodes.blocker;
  }
  const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true && format === 'table';
  const go =
    plan.changes !== undefined &&
    (values.approve || (interactive && (await askYes(`deploy stack ${plan.stack}? Type yes to go on: `))));
  let result = plan;
  if (go) result = await atAws(where, 'CloudFormation ExecuteChangeSet', () => applyInstall(plan, deps));
  else await atAws(where, 'CloudFormation DeleteChangeSet', () => discardPlan(plan, deps.cloudFormation));
  if (format !== 'table') console.log(formatOutput(format, result, () => renderInstall(result)));
  else if (result.applied) console.log(renderDeployed(result));
  else if (plan.changes !== undefined)
    console.log('not deployed: pass --approve to deploy it (the plan was discarded)');
  return exitCodes.ok;
}

runAsCommand(import.meta.url, 'install', main);
