// The release as a CloudFormation stack, for `install` and `uninstall`: the release's files
// (the template and the Lambda zip `npm run release` writes, shipped inside the CLI package),
// their upload to the user's bucket, the stack's state, a change set as the plan, and the
// waits. CloudFormation and S3 through their SDK clients (docs/development.md#dependency-choices
// gives the bundle cost); each honours AWS_ENDPOINT_URL_CLOUDFORMATION / AWS_ENDPOINT_URL_S3 as
// every SDK client does.
import {
  CreateChangeSetCommand,
  DeleteChangeSetCommand,
  DescribeChangeSetCommand,
  DescribeStackEventsCommand,
  DescribeStacksCommand,
  type Change,
  type CloudFormationClient,
  type Parameter,
  type Stack,
} from '@aws-sdk/client-cloudformation';
import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { partition } from '@aws-sdk/core/client';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { urlSafe } from './build-version.js';
import { UsageError } from './command-options.js';

export interface ReleaseFiles {
  readonly directory: string;
  readonly template: string;
  readonly code: string;
  /** The version in the template's file name. */
  readonly version: string;
  /** The template's parameters by name: what --parameter may set. */
  readonly parameters: Readonly<Record<string, { readonly Default?: unknown; readonly Description?: string }>>;
}

const templatePattern = /^graceful-node-termination-(.+)\.template\.json$/;
const codePattern = /^graceful-node-termination-.+-lambda-[0-9a-f]+\.zip$/;

/** The one release in `directory`, or a UsageError saying what is there instead. */
export function releaseFiles(directory: string): ReleaseFiles {
  const names = existsSync(directory) ? readdirSync(directory) : [];
  const templates = names.filter((n) => templatePattern.test(n));
  const codes = names.filter((n) => codePattern.test(n));
  if (templates.length !== 1 || codes.length !== 1)
    throw new UsageError(
      `${directory} must hold one release (graceful-node-termination-<version>.template.json and its -lambda-<hash>.zip); ` +
        `it holds ${templates.length} template(s) and ${codes.length} zip(s): pass --release-dir, or run npm run release in a clone`,
    );
  const template = templates[0]!;
  const body = JSON.parse(readFileSync(join(directory, template), 'utf8')) as {
    Parameters?: ReleaseFiles['parameters'];
  };
  return {
    directory,
    template,
    code: codes[0]!,
    version: templatePattern.exec(template)![1]!,
    parameters: body.Parameters ?? {},
  };
}

/** The key of a release file in the bucket. */
export const objectKey = (prefix: string, name: string): string => `${prefix}${name}`;

/**
 * Puts the file unless the bucket has it with the same SHA-256 (kept in the object's metadata):
 * a second install of the same release uploads nothing. Returns whether it uploaded.
 */
export async function uploadOnce(s3: S3Client, bucket: string, key: string, file: string): Promise<boolean> {
  const body = readFileSync(file);
  const sha256 = createHash('sha256').update(body).digest('hex');
  try {
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    if (head.Metadata?.['sha256'] === sha256) return false;
  } catch (error) {
    // 404: not there yet; 403: HeadObject without s3:ListBucket says so for a missing key too.
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status !== 404 && status !== 403) throw error;
  }
  await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: body,
      Metadata: { sha256 },
      ContentType: key.endsWith('.json') ? 'application/json' : 'application/zip',
    }),
  );
  return true;
}

/** The template's S3 URL as CloudFormation fetches it (virtual-hosted; the endpoint override path-style). */
export function templateUrl(bucket: string, region: string, key: string, endpoint?: string): string {
  if (endpoint) return `${endpoint.replace(/\/$/, '')}/${bucket}/${urlSafe(key)}`;
  return `https://${bucket}.s3.${region}.${partition(region).dnsSuffix}/${urlSafe(key)}`;
}

/** The stack, or undefined when there is none (CloudFormation answers ValidationError "does not exist"). */
export async function describeStack(cfn: CloudFormationClient, name: string): Promise<Stack | undefined> {
  try {
    return (await cfn.send(new DescribeStacksCommand({ StackName: name }))).Stacks?.[0];
  } catch (error) {
    if (error instanceof Error && /does not exist/.test(error.message)) return undefined;
    throw error;
  }
}

export const outputOf = (stack: Stack, key: string): string | undefined =>
  stack.Outputs?.find((o) => o.OutputKey === key)?.OutputValue;

/** A status CloudFormation is still working on: nothing else may start on the stack. */
export const busy = (status: string | undefined): boolean =>
  status !== undefined && status.endsWith('_IN_PROGRESS') && status !== 'REVIEW_IN_PROGRESS';

export interface ChangeSetRequest {
  readonly stack: string;
  readonly name: string;
  readonly templateUrl: string;
  readonly parameters: readonly Parameter[];
  /** CREATE for a new stack (or one left in REVIEW_IN_PROGRESS by an unapproved plan), UPDATE otherwise. */
  readonly type: 'CREATE' | 'UPDATE';
  readonly tags: Readonly<Record<string, string>>;
}

/** One resource change of a change set, as the plan shows it. */
export interface PlannedChange {
  readonly action: string;
  readonly resource: string;
  readonly type: string;
  /** True, False or Conditional (CloudFormation's words), empty for an Add. */
  readonly replacement: string;
}

export interface PlannedChangeSet {
  /** undefined: CloudFormation found nothing to change. */
  readonly changes: readonly PlannedChange[] | undefined;
}

const planned = (c: Change): PlannedChange => ({
  action: c.ResourceChange?.Action ?? '',
  resource: c.ResourceChange?.LogicalResourceId ?? '',
  type: c.ResourceChange?.ResourceType ?? '',
  replacement: c.ResourceChange?.Replacement ?? '',
});

const noChanges = /didn't contain changes|No updates are to be performed/;

/** Creates the change set and waits until CloudFormation has computed it; its changes, every page. */
export async function planChangeSet(
  cfn: CloudFormationClient,
  r: ChangeSetRequest,
  sleep: (ms: number) => Promise<void>,
): Promise<PlannedChangeSet> {
  await cfn.send(
    new CreateChangeSetCommand({
      StackName: r.stack,
      ChangeSetName: r.name,
      ChangeSetType: r.type,
      TemplateURL: r.templateUrl,
      Parameters: [...r.parameters],
      // The roles have no fixed names; the AWS::LanguageExtensions transform needs AUTO_EXPAND.
      Capabilities: ['CAPABILITY_IAM', 'CAPABILITY_AUTO_EXPAND'],
      Tags: Object.entries(r.tags).map(([Key, Value]) => ({ Key, Value })),
    }),
  );
  for (let attempt = 0; ; attempt++) {
    const described = await cfn.send(new DescribeChangeSetCommand({ StackName: r.stack, ChangeSetName: r.name }));
    if (described.Status === 'CREATE_COMPLETE') break;
    if (described.Status === 'FAILED') {
      await cfn.send(new DeleteChangeSetCommand({ StackName: r.stack, ChangeSetName: r.name }));
      if (noChanges.test(described.StatusReason ?? '')) return { changes: undefined };
      throw new Error(`CloudFormation could not plan the change: ${described.StatusReason ?? 'no reason given'}`);
    }
    await sleep(Math.min(5_000, 1_000 * (attempt + 1)));
  }
  const changes: Change[] = [];
  let NextToken: string | undefined;
  do {
    const page = await cfn.send(new DescribeChangeSetCommand({ StackName: r.stack, ChangeSetName: r.name, NextToken }));
    changes.push(...(page.Changes ?? []));
    NextToken = page.NextToken;
  } while (NextToken);
  return { changes: changes.map(planned) };
}

/** The plan in lines: one per resource, as the console's change set tab shows it. */
export function renderChanges(changes: readonly PlannedChange[]): string[] {
  return changes.map((c) => {
    const replacement =
      c.replacement === 'True' ? ' (replaced)' : c.replacement === 'Conditional' ? ' (may be replaced)' : '';
    return `  ${c.action.padEnd(7)} ${c.resource}  ${c.type}${replacement}`;
  });
}

/**
 * Waits until the stack leaves its *_IN_PROGRESS state, saying each status once; the final
 * status. `gone` is what a deleted stack ends as (DescribeStacks no longer finds it by name).
 */
export async function waitForStack(
  cfn: CloudFormationClient,
  name: string,
  o: { sleep: (ms: number) => Promise<void>; say: (line: string) => void },
): Promise<string> {
  let last: string | undefined;
  for (;;) {
    const stack = await describeStack(cfn, name);
    const status = stack?.StackStatus ?? 'DELETE_COMPLETE';
    if (status !== last) o.say(`  stack ${name}: ${status}`);
    last = status;
    if (!status.endsWith('_IN_PROGRESS')) return status;
    await o.sleep(5_000);
  }
}

/** The reasons CloudFormation gave for the resources that failed since `since`, newest first. */
export async function failureReasons(cfn: CloudFormationClient, name: string, since: Date): Promise<string[]> {
  const { StackEvents } = await cfn.send(new DescribeStackEventsCommand({ StackName: name }));
  return (StackEvents ?? [])
    .filter((e) => (e.Timestamp ?? new Date(0)) >= since && (e.ResourceStatus ?? '').endsWith('FAILED'))
    .map((e) => `${e.LogicalResourceId}: ${e.ResourceStatus}: ${e.ResourceStatusReason ?? ''}`);
}
