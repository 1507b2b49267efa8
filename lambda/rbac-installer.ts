// CloudFormation custom resource that installs the drainer's ClusterRole, ClusterRoleBinding,
// FlowSchema and PriorityLevelConfiguration during `cdk deploy`, so no kubectl step is needed.
//
// It runs as its own function with its own role, never as the drainer: that role holds
// an EKS access entry with AmazonEKSClusterAdminPolicy, because creating a ClusterRole
// needs at least the rights it grants. Its code applies only the objects of
// lambda/rbac.ts (the group name is the one input), so the admin right cannot be steered
// into anything else by whoever edits the stack's properties.
import { request } from 'node:https';
import { EKSClient } from '@aws-sdk/client-eks';
import { Logger } from '@aws-lambda-powertools/logger';
import { connectToEks } from './adapters/cluster-connection.js';
import { createKubeHttp, KubeApiError, type KubeEndpoint, type KubeHttp } from './adapters/kube-http.js';
import { installedObjects, rbacName } from './rbac.js';

/** The fields of a CloudFormation custom resource request that we use. */
export interface CustomResourceEvent {
  readonly RequestType: 'Create' | 'Update' | 'Delete';
  readonly ResponseURL: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly PhysicalResourceId?: string;
  /** Informational only (they trigger an Update when they change); the installer reads its own environment. */
  readonly ResourceProperties: Readonly<Record<string, unknown>>;
}

export interface CustomResourceResponse {
  readonly Status: 'SUCCESS' | 'FAILED';
  readonly Reason?: string;
  readonly PhysicalResourceId: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly Data?: Record<string, string>;
}

const pathsFor = (name: string) =>
  ({
    ClusterRole: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${encodeURIComponent(name)}`,
    ClusterRoleBinding: `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${encodeURIComponent(name)}`,
    PriorityLevelConfiguration: `/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/${encodeURIComponent(name)}`,
    FlowSchema: `/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/${encodeURIComponent(name)}`,
  }) as const;

/**
 * Server-side apply: one idempotent call per object, whether it exists or not.
 * https://kubernetes.io/docs/reference/using-api/server-side-apply/
 */
export async function applyRbac(kube: KubeHttp, group: string, deadlinePolicy = 'force', name = rbacName): Promise<void> {
  const paths = pathsFor(name);
  for (const object of installedObjects(group, deadlinePolicy, name)) {
    await kube.request('PATCH', paths[object.kind as keyof typeof paths], {
      // Our own objects only: force takes back fields another manager changed on them.
      query: { fieldManager: name, force: true },
      body: object,
      contentType: 'application/apply-patch+yaml',
    });
  }
}

/** Deletes every object, the FlowSchema first; already gone counts as deleted. */
export async function deleteRbac(kube: KubeHttp, name = rbacName): Promise<void> {
  const paths = pathsFor(name);
  for (const path of [paths.FlowSchema, paths.PriorityLevelConfiguration, paths.ClusterRoleBinding, paths.ClusterRole]) {
    try {
      await kube.request('DELETE', path);
    } catch (error) {
      if (!(error instanceof KubeApiError && error.statusCode === 404)) throw error;
    }
  }
}

/**
 * What the installer installs comes from its own environment, set by the construct, never
 * from the invoking event: whoever can invoke it cannot steer its cluster-admin right to
 * another cluster or another group.
 */
export interface InstallerSettings {
  /** The deployment's name: its ClusterRole and ClusterRoleBinding are named after it. */
  readonly name: string;
  readonly clusterName: string;
  readonly group: string;
  readonly deadlinePolicy: string;
}

/**
 * CloudFormation's presigned response URLs live in its regional response buckets; anything
 * else is refused (nothing is sent to it), so the installer cannot be made to PUT elsewhere.
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html
 */
export function isCloudFormationResponseUrl(url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  return (
    u.protocol === 'https:' &&
    /^cloudformation-custom-resource-response-[a-z0-9]+\.s3([.-][a-z0-9-]+)*\.amazonaws\.com(\.cn)?$/.test(u.hostname)
  );
}

export interface InstallerDeps {
  readonly settings: InstallerSettings;
  connect(clusterName: string): Promise<KubeEndpoint>;
  respond(url: string, response: CustomResourceResponse): Promise<void>;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  sleep(ms: number): Promise<void>;
  /** How long to retry 401/403 while a new access entry propagates. */
  readonly authRetryMs: number;
}

export function createInstallerHandler(deps: InstallerDeps): (event: CustomResourceEvent) => Promise<void> {
  return async (event) => {
    // The physical id names the objects, so when a deployment's name changes CloudFormation's
    // Delete of the old physical id removes the old objects, and only those.
    const physicalId = event.RequestType === 'Delete' ? (event.PhysicalResourceId ?? `${deps.settings.name}-rbac`) : `${deps.settings.name}-rbac`;
    const base = { PhysicalResourceId: physicalId, StackId: event.StackId, RequestId: event.RequestId, LogicalResourceId: event.LogicalResourceId };
    if (!isCloudFormationResponseUrl(String(event.ResponseURL))) {
      deps.log.error('refused: the ResponseURL is not a CloudFormation response URL; nothing applied, nothing sent', { host: safeHost(event.ResponseURL) });
      return;
    }
    try {
      const { clusterName, group, deadlinePolicy } = deps.settings;
      requireText(clusterName, 'CLUSTER_NAME');
      requireText(group, 'KUBERNETES_GROUP');
      if (group.startsWith('system:')) throw new Error(`KubernetesGroup ${group}: EKS access entries refuse groups starting with "system:"`);
      const kube = createKubeHttp(await deps.connect(clusterName), { userAgent: `${rbacName}-installer/0.1`, timeoutMs: 15_000 });
      if (event.RequestType === 'Delete') {
        const name = objectsOf(physicalId, deps.settings.name);
        try {
          if (name === undefined) throw new Error(`physical id ${physicalId} names no objects of ours`);
          await withAuthRetry(() => deleteRbac(kube, name), deps);
        } catch (error) {
          // Failing a delete would wedge the stack; the leftovers bind a group nobody maps to
          // once the access entry is gone.
          deps.log.warn('could not delete the RBAC objects; leaving them', { error: String(error) });
        }
      } else {
        await withAuthRetry(() => applyRbac(kube, group, deadlinePolicy, deps.settings.name), deps);
      }
      deps.log.info('RBAC request handled', { requestType: event.RequestType, clusterName, group });
      await deps.respond(event.ResponseURL, { ...base, Status: 'SUCCESS', Data: { ClusterRole: deps.settings.name, Group: group } });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      deps.log.error('RBAC request failed', { requestType: event.RequestType, reason });
      // A Delete that cannot even connect (cluster already deleted) must not block the stack.
      const status = event.RequestType === 'Delete' ? 'SUCCESS' : 'FAILED';
      await deps.respond(event.ResponseURL, { ...base, Status: status, Reason: reason.slice(0, 900) });
    }
  };
}

function requireText(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new Error(`${field} must be a non-empty string in the installer's environment, got ${JSON.stringify(value)}`);
  return value.trim();
}

/**
 * The objects a physical id stands for: ours (this deployment's name), or the fixed name of
 * the versions before deployment names. Anything else is not ours to delete.
 */
export function objectsOf(physicalId: string, ownName: string): string | undefined {
  const name = physicalId.replace(/-rbac$/, '');
  if (name === physicalId) return undefined;
  return name === ownName || name === rbacName || name.startsWith(`${rbacName}-`) ? name : undefined;
}

function safeHost(url: unknown): string {
  try {
    return new URL(String(url)).hostname;
  } catch {
    return '(not a URL)';
  }
}

/** A fresh access entry can take a little while before the API server honours it. */
async function withAuthRetry(work: () => Promise<void>, deps: InstallerDeps): Promise<void> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const code = error instanceof KubeApiError ? error.statusCode : 0;
      const retryable = code === 401 || code === 403 || code === 429 || code >= 500 || code === 0;
      if (!retryable || Date.now() - started > deps.authRetryMs) throw error;
      deps.log.warn('RBAC apply not accepted yet, retrying', { attempt, error: String(error) });
      await deps.sleep(Math.min(15_000, 1000 * 2 ** attempt));
    }
  }
}

/** PUTs the result to CloudFormation's presigned S3 URL (an empty Content-Type, as it requires). */
export function respondToCloudFormation(url: string, response: CustomResourceResponse): Promise<void> {
  const body = JSON.stringify(response);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'PUT', headers: { 'Content-Type': '', 'Content-Length': Buffer.byteLength(body) }, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => ((res.statusCode ?? 0) < 300 ? resolve() : reject(new Error(`CloudFormation response: HTTP ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error('CloudFormation response: timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

const region = process.env['AWS_REGION'] ?? 'us-east-1';
const eks = new EKSClient({ region, requestHandler: { requestTimeout: 10_000, connectionTimeout: 3_000 } });

export const handler = createInstallerHandler({
  settings: {
    name: process.env['RBAC_NAME'] ?? rbacName,
    clusterName: process.env['CLUSTER_NAME'] ?? '',
    group: process.env['KUBERNETES_GROUP'] ?? '',
    deadlinePolicy: process.env['DEADLINE_POLICY'] ?? 'force',
  },
  connect: (clusterName) => connectToEks({ clusterName, region, eks }),
  respond: respondToCloudFormation,
  log: new Logger({ serviceName: `${process.env['RBAC_NAME'] ?? rbacName}-installer` }),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  authRetryMs: 180_000,
});
