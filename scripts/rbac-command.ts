// graceful-node-termination rbac --deployment NAME [--group G] [--deadline-policy P] [--surge] [--apply]
// graceful-node-termination rbac --function F [--group G] [--apply]
//
// The drainer's Kubernetes objects for a cluster whose stack does not install them (aws-auth
// clusters, deployed with manageKubernetesAccess=false / ManageKubernetesAccess=false): the
// ClusterRole and its binding to the deployment's group, the FlowSchema and
// PriorityLevelConfiguration, and with surge before evict the ValidatingAdmissionPolicy that
// fences it. Exactly the objects the stack's installer applies on a cluster with access entries
// (lambda/installer/installed-objects.ts), printed as YAML for `kubectl apply -f -`, or
// applied with the kubeconfig (--apply, server-side apply, as the installer does). The settings
// come from the options, or from the deployed function's own variables (--function), so neither
// needs a clone of this repository. Mapping the role to the group stays the user's step
// (docs/deploy.md#clusters-on-aws-auth).
import { KubeApiError } from '../lambda/adapters/kubernetes/kube-api-error.js';
import { createKubeHttp, type KubeHttp } from '../lambda/adapters/kubernetes/kube-http.js';
import { applyRbac } from '../lambda/installer/rbac-apply.js';
import { installedObjects } from '../lambda/installer/installed-objects.js';
import {
  deploymentNamePattern,
  ownerAnnotation,
  rbacRulesFor,
  type KubernetesObject,
} from '../lambda/installer/rbac.js';
import { requireSupportedServer, requireSurgeServer } from '../lambda/installer/server-version.js';
import { yamlOf } from '../lambda/installer/yaml.js';
import { ConfigError } from '../lambda/shared/errors.js';
import { flag } from '../lambda/shared/variable.js';
import { resolveAwsAccess } from './aws-access.js';
import { endpointFromKubeConfig } from './cluster-access.js';
import { choice, exitCodes, parseCommand, UsageError } from './command-options.js';
import { atAws, atKubernetes, KubernetesError } from './failure.js';
import { loadKubeAccess } from './kube-access.js';
import { functionVariables } from './maintenance-windows-note.js';
import { runAsCommand } from './run-command.js';
import { rbacUsage } from './usage.js';

export const deadlinePolicies = ['force', 'leave', 'retain'] as const;

/** One deployment's RBAC settings: what the construct gives its installer. */
export interface RbacSettings {
  /** The deployment's name (the DeploymentName output): every object is named after it. */
  readonly name: string;
  /** The Kubernetes group the function's role is mapped to (default: the name). */
  readonly group: string;
  readonly deadlinePolicy: (typeof deadlinePolicies)[number];
  /** SURGE_BEFORE_EVICT: patch on Deployments, fenced by a ValidatingAdmissionPolicy. */
  readonly surge: boolean;
}

/** The objects the installer applies for these settings, in its order. */
export function rbacObjectsOf(s: RbacSettings): readonly KubernetesObject[] {
  return installedObjects(s.group, s.deadlinePolicy, s.name, { surge: s.surge });
}

const list = (xs: readonly string[]) => `[${xs.map((x) => JSON.stringify(x)).join(', ')}]`;

/** The ClusterRole with each rule's reason above it (as infra/kubernetes/rbac.yaml has them). */
function clusterRoleYaml(role: KubernetesObject, s: RbacSettings): string[] {
  const { rules: _rules, ...rest } = role as KubernetesObject & { rules?: unknown };
  return [
    ...yamlOf(rest),
    'rules:',
    ...rbacRulesFor(s.deadlinePolicy, s.surge).flatMap((r) => [
      `  # ${r.why}`,
      `  - apiGroups: ${list(r.apiGroups)}`,
      `    resources: ${list(r.resources)}`,
      `    verbs: ${list(r.verbs)}`,
    ]),
  ];
}

/** Words in lines of at most `width` characters. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

/** The objects as one YAML stream for `kubectl apply -f -`, with what they are for said first. */
export function renderRbac(s: RbacSettings): string {
  const about =
    `graceful-node-termination: the Kubernetes objects of deployment ${s.name} (group ${s.group}, ` +
    `deadline policy ${s.deadlinePolicy}${s.surge ? ', surge before evict' : ''}), as its stack's installer ` +
    'applies them on a cluster with access entries (lambda/installer/installed-objects.ts). ' +
    `Map the function's role to the group "${s.group}" in aws-auth: docs/deploy.md#clusters-on-aws-auth.`;
  const header = wrap(about, 96).map((line) => `# ${line}`);
  const docs = rbacObjectsOf(s).map((o) => (o.kind === 'ClusterRole' ? clusterRoleYaml(o, s) : yamlOf(o)));
  return [...header, ...docs.flatMap((d, i) => [...(i > 0 ? ['---'] : []), ...d]), ''].join('\n');
}

/** The objects as a Kubernetes List (JSON), for tools that read JSON. */
export function rbacList(s: RbacSettings): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rbacObjectsOf(s) }, null, 2);
}

/** Settings from the deployed function's variables (DEPLOYMENT_NAME, DEADLINE_POLICY, SURGE_BEFORE_EVICT). */
export function settingsFromVariables(
  variables: Readonly<Record<string, string>>,
  fn: string,
  group: string | undefined,
): RbacSettings {
  const name = variables['DEPLOYMENT_NAME']?.trim() || 'graceful-node-termination';
  const policy = variables['DEADLINE_POLICY']?.trim() || 'force';
  if (!deploymentNamePattern.test(name))
    throw new UsageError(`function ${fn} has DEPLOYMENT_NAME ${JSON.stringify(name)}, not a deployment name`);
  if (!(deadlinePolicies as readonly string[]).includes(policy))
    throw new UsageError(`function ${fn} has DEADLINE_POLICY ${JSON.stringify(policy)}: not force, leave or retain`);
  return {
    name,
    group: group ?? name,
    deadlinePolicy: policy as RbacSettings['deadlinePolicy'],
    surge: flag(variables['SURGE_BEFORE_EVICT'] ?? '') === true,
  };
}

/** Settings from --deployment, --group, --deadline-policy and --surge. */
export function settingsFromOptions(o: {
  deployment?: string | undefined;
  group?: string | undefined;
  'deadline-policy'?: string | undefined;
  surge?: boolean | undefined;
}): RbacSettings {
  const name = o.deployment;
  if (name === undefined)
    throw new UsageError(
      'name the deployment with --deployment (the stack output DeploymentName), ' +
        'or read it from the function with --function (see rbac --help)',
    );
  if (!deploymentNamePattern.test(name))
    throw new UsageError(
      `--deployment ${JSON.stringify(name)} is not a deployment name: ` +
        'lowercase letters, digits and "-", at most 63 (the stack output DeploymentName)',
    );
  return {
    name,
    group: o.group ?? name,
    deadlinePolicy: choice('--deadline-policy', o['deadline-policy'], deadlinePolicies, 'force'),
    surge: o.surge === true,
  };
}

/**
 * Server-side applies the objects, after the checks the installer makes (Kubernetes 1.29, or
 * 1.30 with surge). Objects a stack's installer owns (its owner annotation) are refused: that
 * stack manages them, and an apply without the annotation would make them nobody's.
 */
export async function applyWithKubeconfig(kube: KubeHttp, s: RbacSettings): Promise<string[]> {
  const version = await requireSupportedServer(kube);
  if (s.surge) requireSurgeServer(version);
  const owner = await ownerOf(kube, s.name);
  if (owner !== undefined)
    throw new KubernetesError(
      `ClusterRole ${s.name} is installed by a stack (${ownerAnnotation}: ${owner}): ` +
        'that stack manages its RBAC; nothing was applied',
    );
  await applyRbac(kube, { name: s.name, group: s.group, deadlinePolicy: s.deadlinePolicy, surge: s.surge });
  return rbacObjectsOf(s).map((o) => `${o.kind} ${o.metadata.name}`);
}

async function ownerOf(kube: KubeHttp, name: string): Promise<string | undefined> {
  try {
    const role = await kube.request<KubernetesObject>(
      'GET',
      `/apis/rbac.authorization.k8s.io/v1/clusterroles/${encodeURIComponent(name)}`,
    );
    return role.metadata.annotations?.[ownerAnnotation];
  } catch (error) {
    if (error instanceof KubeApiError && error.statusCode === 404) return undefined;
    throw error;
  }
}

const rbacOptions = {
  deployment: { type: 'string' },
  function: { type: 'string' },
  group: { type: 'string' },
  'deadline-policy': { type: 'string' },
  surge: { type: 'boolean' },
  apply: { type: 'boolean', default: false },
} as const;

/** The deployed function's settings (lambda:GetFunctionConfiguration). */
async function deployedSettings(
  fn: string,
  group: string | undefined,
  o: { region?: string | undefined; profile?: string | undefined },
): Promise<RbacSettings> {
  const aws = await resolveAwsAccess(o);
  const endpoint = process.env['AWS_ENDPOINT_URL_LAMBDA'] ?? process.env['AWS_ENDPOINT_URL'];
  const read = await atAws({ region: aws.region, profile: aws.profile }, 'Lambda GetFunctionConfiguration', () =>
    functionVariables(fn, { region: aws.region, credentials: aws.autoScaling.config.credentials, endpoint }),
  );
  if ('unreadable' in read)
    throw new Error(`could not read the settings of function ${fn} in ${aws.region}: ${read.unreadable}`);
  return settingsFromVariables(read.variables, fn, group);
}

/** The command: `graceful-node-termination rbac`. */
export async function main(args: readonly string[] = process.argv.slice(2)): Promise<number> {
  const { values } = parseCommand('rbac', args, rbacOptions, []);
  if (values.help) {
    console.log(rbacUsage);
    return exitCodes.ok;
  }
  const format = values.json ? 'json' : choice('-o/--output', values.output, ['yaml', 'json'], 'yaml');
  const fn = values.function;
  if (fn !== undefined && [values.deployment, values['deadline-policy'], values.surge].some((v) => v !== undefined))
    throw new UsageError(
      '--function reads the deployment, deadline policy and surge from the function: ' +
        'give it, or --deployment, --deadline-policy and --surge, not both',
    );
  const settings = fn !== undefined ? await deployedSettings(fn, values.group, values) : settingsFromOptions(values);
  if (!values.apply) {
    process.stdout.write(format === 'json' ? `${rbacList(settings)}\n` : renderRbac(settings));
    return exitCodes.ok;
  }
  const kube = loadKubeAccess(values);
  const where = { server: kube.server, context: kube.context };
  const http = createKubeHttp(endpointFromKubeConfig(kube.kc), {
    userAgent: 'graceful-node-termination-cli',
    timeoutMs: 15_000,
  });
  const applied = await atKubernetes(where, 'apply ClusterRoles, ClusterRoleBindings and flow-control objects', () =>
    applyWithKubeconfig(http, settings).catch((error: unknown) => {
      // The cluster too old for the objects: said as the installer says it, a failure (exit 1).
      if (error instanceof ConfigError) throw new KubernetesError(error.problems.join('; '), { cause: error });
      throw error;
    }),
  );
  for (const object of applied) console.log(`applied ${object} (server-side apply)`);
  console.log(
    `next: map the function's role to the group ${settings.group} in aws-auth (eksctl create iamidentitymapping ` +
      `--cluster <cluster> --arn <role ARN> --group ${settings.group} --username ${settings.name}; ` +
      'docs/deploy.md#clusters-on-aws-auth)',
  );
  return exitCodes.ok;
}

runAsCommand(import.meta.url, 'rbac', main);
