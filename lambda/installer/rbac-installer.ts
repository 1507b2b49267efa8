// CloudFormation custom resource that installs the drainer's ClusterRole, ClusterRoleBinding,
// FlowSchema and PriorityLevelConfiguration during `cdk deploy`, so no kubectl step is needed.
//
// It runs as its own function with its own role, never as the drainer. Creating a ClusterRole
// needs at least the rights it grants, so the role's access entry gets cluster admin, but only
// while it works: associated before it applies or deletes, disassociated after. What it
// installs comes from its environment (the group is the one input), never from the event; it
// checks the request names its own stack and answers only CloudFormation's own bucket before it
// connects to anything; and it deletes only objects that are its own.
import { AssociateAccessPolicyCommand, DisassociateAccessPolicyCommand, EKSClient } from '@aws-sdk/client-eks';
import { partition } from '@aws-sdk/core/client';
import { Logger } from '@aws-lambda-powertools/logger';
import { connectToEks } from '../adapters/aws/eks-connection.js';
import { createKubeHttp, type KubeEndpoint, type KubeHttp } from '../adapters/kubernetes/kube-http.js';
import { KubeApiError } from '../adapters/kubernetes/kube-api-error.js';
import { asError } from '../shared/log.js';
import {
  isCloudFormationResponseUrl,
  parsePhysicalId,
  physicalIdFor,
  respondToCloudFormation,
  type CustomResourceEvent,
  type CustomResourceResponse,
} from './custom-resource.js';
import { applyRbac, boundGroups, deleteRbac } from './rbac-apply.js';
import { rbacName } from './rbac.js';
import { requireSupportedServer, requireSurgeServer } from './server-version.js';
import { ConfigError } from '../shared/errors.js';

export type { CustomResourceEvent, CustomResourceResponse };
export { isCloudFormationResponseUrl };

/** What the installer installs, from its own environment (set by the construct). */
export interface InstallerSettings {
  /** The deployment's name: its objects are named after it. */
  readonly name: string;
  readonly clusterName: string;
  readonly group: string;
  readonly deadlinePolicy: string;
  /** SURGE_BEFORE_EVICT: patch on Deployments and the policy that fences it. */
  readonly surge?: boolean | undefined;
  /** Its region: the only response bucket it answers. */
  readonly region: string;
  /** Its stack: a request naming another is refused. */
  readonly stackId?: string | undefined;
}

/** Cluster admin for the installer's own role, only while it works. */
export interface ClusterAdminAccess {
  grant(): Promise<void>;
  revoke(): Promise<void>;
}

export interface InstallerDeps {
  readonly settings: InstallerSettings;
  connect(clusterName: string): Promise<KubeEndpoint>;
  respond(url: string, response: CustomResourceResponse): Promise<void>;
  readonly access?: ClusterAdminAccess | undefined;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  sleep(ms: number): Promise<void>;
  /** How long to retry 401/403 while an access entry or its policy propagates. */
  readonly authRetryMs: number;
  /** How requests reach the API server (default: our REST client over node:https). */
  readonly http?: ((endpoint: KubeEndpoint) => KubeHttp) | undefined;
}

type Plan =
  | { readonly kind: 'apply'; readonly keepOldGroups: boolean }
  /** Only drop groups other than ours from the binding: the Delete of a replaced physical id. */
  | { readonly kind: 'unbind-old' }
  | { readonly kind: 'delete'; readonly name: string; readonly unownedOk: boolean }
  | { readonly kind: 'nothing'; readonly why: string };

export function createInstallerHandler(deps: InstallerDeps): (event: CustomResourceEvent) => Promise<void> {
  return async (event) => {
    const { settings, log } = deps;
    if (!isCloudFormationResponseUrl(String(event.ResponseURL), settings.region)) {
      log.error(
        "refused: the ResponseURL is not CloudFormation's response bucket of this region; nothing applied, " +
          'nothing sent',
        {
          host: safeHost(event.ResponseURL),
          region: settings.region,
        },
      );
      return;
    }
    const physicalId =
      event.RequestType === 'Delete'
        ? (event.PhysicalResourceId ?? physicalIdFor(settings.name, settings.group))
        : physicalIdFor(settings.name, settings.group);
    const base = {
      PhysicalResourceId: physicalId,
      StackId: event.StackId,
      RequestId: event.RequestId,
      LogicalResourceId: event.LogicalResourceId,
    };
    try {
      const plan = planFor(event, settings);
      const left = await carryOut(plan, event, deps);
      log.info('RBAC request handled', {
        requestType: event.RequestType,
        plan: plan.kind,
        clusterName: settings.clusterName,
        group: settings.group,
        leftAlone: left,
      });
      await deps.respond(event.ResponseURL, {
        ...base,
        Status: 'SUCCESS',
        Data: { ClusterRole: settings.name, Group: settings.group },
      });
    } catch (error) {
      const reason = asError(error).message;
      log.error('RBAC request failed', { requestType: event.RequestType, error: asError(error) });
      await deps.respond(event.ResponseURL, { ...base, Status: 'FAILED', Reason: reason.slice(0, 900) });
    }
  };
}

/** What a request asks for, decided from our settings and the physical id alone. */
export function planFor(event: CustomResourceEvent, settings: InstallerSettings): Plan {
  requireText(settings.clusterName, 'CLUSTER_NAME');
  requireText(settings.group, 'KUBERNETES_GROUP');
  if (settings.group.startsWith('system:'))
    throw new Error(`KubernetesGroup ${settings.group}: EKS access entries refuse groups starting with "system:"`);
  if (settings.stackId !== undefined && event.StackId !== settings.stackId)
    throw new Error(`request for stack ${event.StackId} refused: this installer belongs to ${settings.stackId}`);
  const ours = physicalIdFor(settings.name, settings.group);
  if (event.RequestType !== 'Delete')
    return { kind: 'apply', keepOldGroups: event.RequestType === 'Update' && event.PhysicalResourceId !== ours };
  const id = parsePhysicalId(event.PhysicalResourceId ?? '');
  if (id === undefined)
    return { kind: 'nothing', why: `physical id ${event.PhysicalResourceId} names no objects of ours` };
  if (id.name === settings.name)
    return event.PhysicalResourceId === ours
      ? { kind: 'delete', name: settings.name, unownedOk: true }
      : { kind: 'unbind-old' };
  // The fixed name of the versions before deployment names, on a request of our own stack.
  if (id.name === rbacName) return { kind: 'delete', name: rbacName, unownedOk: true };
  // Another deployment's name: deleted only where the objects themselves name our stack.
  return { kind: 'delete', name: id.name, unownedOk: false };
}

/** Carries the plan out with cluster admin held only meanwhile; returns what it left alone. */
async function carryOut(plan: Plan, event: CustomResourceEvent, deps: InstallerDeps): Promise<string[]> {
  if (plan.kind === 'nothing') {
    deps.log.warn('nothing to do', { why: plan.why });
    return [];
  }
  const { settings } = deps;
  const owner = `${settings.stackId ?? event.StackId}/${event.LogicalResourceId}`;
  await deps.access?.grant();
  try {
    let kube: KubeHttp;
    try {
      const endpoint = await deps.connect(settings.clusterName);
      kube =
        deps.http?.(endpoint) ??
        createKubeHttp(endpoint, { userAgent: `${rbacName}-installer/0.3`, timeoutMs: 15_000 });
    } catch (error) {
      throw plan.kind === 'delete'
        ? new Error(
            `could not reach cluster ${settings.clusterName}; left behind: ClusterRole, ClusterRoleBinding, ` +
              `FlowSchema and PriorityLevelConfiguration ${plan.name} (delete them with kubectl, or retain this ` +
              `resource)`,
            { cause: error },
          )
        : error;
    }
    const apply = (alsoBound?: readonly string[]) =>
      applyRbac(kube, {
        name: settings.name,
        group: settings.group,
        deadlinePolicy: settings.deadlinePolicy,
        surge: settings.surge === true,
        owner,
        ...(alsoBound ? { alsoBound } : {}),
      });
    if (plan.kind === 'delete')
      return await withAuthRetry(() => deleteRbac(kube, plan.name, owner, plan.unownedOk), deps);
    // Nothing is applied to a cluster too old to serve every object (server-version.ts).
    const version = await withAuthRetry(() => requireSupportedServer(kube), deps);
    if (settings.surge === true) requireSurgeServer(version);
    deps.log.info('cluster version supported', { kubernetesVersion: version.gitVersion });
    if (plan.kind === 'unbind-old') {
      await withAuthRetry(() => apply(), deps);
      return [];
    }
    // A group change: the old group stays bound until CloudFormation has switched the access
    // entry and deletes the old physical id (unbind-old).
    await withAuthRetry(
      async () => apply(plan.keepOldGroups ? await boundGroups(kube, settings.name) : undefined),
      deps,
    );
    return [];
  } finally {
    await revoke(deps);
  }
}

async function revoke(deps: InstallerDeps): Promise<void> {
  try {
    await deps.access?.revoke();
  } catch (error) {
    deps.log.error(
      'could not disassociate the cluster admin access policy from the installer; it is re-associated and removed ' +
        'at the next deployment',
      { error: asError(error) },
    );
  }
}

function requireText(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new Error(`${field} must be a non-empty string in the installer's environment, got ${JSON.stringify(value)}`);
  return value.trim();
}

function safeHost(url: unknown): string {
  try {
    return new URL(String(url)).hostname;
  } catch {
    return '(not a URL)';
  }
}

/** A fresh access entry or policy association can take a little while before the API server honours it. */
async function withAuthRetry<T>(work: () => Promise<T>, deps: InstallerDeps): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      // A bad configuration (another stack's objects of our name) does not get better by waiting.
      if (error instanceof ConfigError) throw error;
      const code = error instanceof KubeApiError ? error.statusCode : 0;
      const retryable = code === 401 || code === 403 || code === 429 || code >= 500 || code === 0;
      if (!retryable || Date.now() - started > deps.authRetryMs) throw error;
      deps.log.warn('RBAC request not accepted yet, retrying', { attempt, error: asError(error) });
      await deps.sleep(Math.min(15_000, 1000 * 2 ** attempt));
    }
  }
}

/** AmazonEKSClusterAdminPolicy on the installer's own access entry, while it works. */
export function eksClusterAdminAccess(
  eks: EKSClient,
  o: { readonly clusterName: string; readonly principalArn: string; readonly region: string },
): ClusterAdminAccess {
  const policyArn = `arn:${partition(o.region).name}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy`;
  const target = { clusterName: o.clusterName, principalArn: o.principalArn, policyArn };
  return {
    grant: async () =>
      void (await eks.send(new AssociateAccessPolicyCommand({ ...target, accessScope: { type: 'cluster' } }))),
    revoke: async () => void (await eks.send(new DisassociateAccessPolicyCommand(target))),
  };
}

const env = process.env;
const region = env['AWS_REGION'] ?? 'us-east-1';
const eks = new EKSClient({ region, requestHandler: { requestTimeout: 10_000, connectionTimeout: 3_000 } });
const clusterName = env['CLUSTER_NAME'] ?? '';

export const handler = createInstallerHandler({
  settings: {
    name: env['RBAC_NAME'] ?? rbacName,
    clusterName,
    group: env['KUBERNETES_GROUP'] ?? '',
    deadlinePolicy: env['DEADLINE_POLICY'] ?? 'force',
    surge: env['SURGE_BEFORE_EVICT'] === 'true',
    region,
    stackId: env['STACK_ID'] || undefined,
  },
  connect: (name) => connectToEks({ clusterName: name, region, eks }),
  respond: respondToCloudFormation,
  access: env['INSTALLER_ROLE_ARN']
    ? eksClusterAdminAccess(eks, { clusterName, principalArn: env['INSTALLER_ROLE_ARN'], region })
    : undefined,
  log: new Logger({ serviceName: `${env['RBAC_NAME'] ?? rbacName}-installer` }),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  authRetryMs: 180_000,
});
