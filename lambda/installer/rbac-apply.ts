// Applying and deleting the drainer's RBAC and flow-control objects with server-side apply,
// and never anything that is not ours: a Delete takes away only objects whose owner
// annotation names this stack, or (objects of the versions before) that carry our own name.
import { KubeApiError } from '../adapters/kubernetes/kube-api-error.js';
import { type KubeHttp } from '../adapters/kubernetes/kube-http.js';
import { ConfigError } from '../shared/errors.js';
import { installedObjects } from './installed-objects.js';
import { readingRoleName } from './reading-rbac.js';
import { ownerAnnotation, type KubernetesObject } from './rbac.js';

const admission = '/apis/admissionregistration.k8s.io/v1';
const flowControl = '/apis/flowcontrol.apiserver.k8s.io/v1';
const surge = (name: string) => encodeURIComponent(`${name}-surge`);
const inNamespace = (name: string) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${encodeURIComponent(name)}`;
const paths = (name: string) =>
  ({
    Namespace: `/api/v1/namespaces/${encodeURIComponent(name)}`,
    Role: `${inNamespace(name)}/roles/${encodeURIComponent(readingRoleName(name))}`,
    RoleBinding: `${inNamespace(name)}/rolebindings/${encodeURIComponent(readingRoleName(name))}`,
    ClusterRole: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${encodeURIComponent(name)}`,
    ClusterRoleBinding: `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${encodeURIComponent(name)}`,
    PriorityLevelConfiguration: `${flowControl}/prioritylevelconfigurations/${encodeURIComponent(name)}`,
    FlowSchema: `${flowControl}/flowschemas/${encodeURIComponent(name)}`,
    ValidatingAdmissionPolicy: `${admission}/validatingadmissionpolicies/${surge(name)}`,
    ValidatingAdmissionPolicyBinding: `${admission}/validatingadmissionpolicybindings/${surge(name)}`,
  }) as const;

type Kind = keyof ReturnType<typeof paths>;

export interface ApplyRequest {
  readonly name: string;
  readonly group: string;
  readonly deadlinePolicy: string;
  /** The owner annotation's value: this stack and resource. */
  readonly owner?: string;
  /** Groups kept bound while the access entry switches (a group change under way). */
  readonly alsoBound?: readonly string[];
  /** SURGE_BEFORE_EVICT: patch on Deployments, fenced by the ValidatingAdmissionPolicy (surge-policy.ts). */
  readonly surge?: boolean;
}

/**
 * Server-side apply: one idempotent call per object, whether it exists or not.
 * https://kubernetes.io/docs/reference/using-api/server-side-apply/
 */
export async function applyRbac(kube: KubeHttp, r: ApplyRequest): Promise<void> {
  const p = paths(r.name);
  const o = {
    ...(r.owner ? { owner: r.owner } : {}),
    ...(r.alsoBound ? { alsoBound: r.alsoBound } : {}),
    surge: r.surge === true,
  };
  for (const object of installedObjects(r.group, r.deadlinePolicy, r.name, o)) {
    // Another stack's objects of the same name (a deploymentName reused) are never taken over:
    // its Delete would then take away the RBAC the first deployment drains with.
    if (r.owner !== undefined)
      await refuseOthers(kube, p[object.kind as Kind], `${object.kind} ${r.name}`, { ...r, owner: r.owner });
    // A namespace of this name made by someone else (or by hand) is used as it is, never marked
    // ours: a Delete would take it away with everything in it.
    if (object.kind === 'Namespace' && (await unownedNamespace(kube, p.Namespace))) continue;
    await kube.request('PATCH', p[object.kind as Kind], {
      // Our own objects only: force takes back fields another manager changed on them.
      query: { fieldManager: r.name, force: true },
      body: object,
      contentType: 'application/apply-patch+yaml',
    });
  }
  // Surge turned off: its policy goes too (the role lost the right with the apply above).
  if (!r.surge && r.owner !== undefined)
    await deleteObjects(kube, r.name, r.owner, false, [
      'ValidatingAdmissionPolicyBinding',
      'ValidatingAdmissionPolicy',
    ]);
}

/**
 * Throws when the object exists and its owner annotation names another stack. An object of our
 * name without one is ours to take, as a Delete takes it: the shipped manifest applied by
 * hand, or this deployment before owners were recorded (0.1).
 */
async function refuseOthers(
  kube: KubeHttp,
  path: string,
  what: string,
  r: ApplyRequest & { owner: string },
): Promise<void> {
  const existing = await read(kube, path);
  if (existing === undefined) return;
  const named = existing.metadata.annotations?.[ownerAnnotation];
  if (named === undefined || stackOf(named) === stackOf(r.owner)) return;
  throw new ConfigError([
    `${what} belongs to another stack (${named}): two deployments cannot share the name ` +
      `${JSON.stringify(r.name)}; give this one another deploymentName`,
  ]);
}

async function unownedNamespace(kube: KubeHttp, path: string): Promise<boolean> {
  const existing = await read(kube, path);
  return existing !== undefined && existing.metadata.annotations?.[ownerAnnotation] === undefined;
}

/** The stack part of an owner (`<stack id>/<logical id>`): a resource replaced within one stack stays its owner. */
const stackOf = (owner: string) => owner.slice(0, Math.max(0, owner.lastIndexOf('/')));

async function read(kube: KubeHttp, path: string): Promise<KubernetesObject | undefined> {
  try {
    return await kube.request<KubernetesObject>('GET', path);
  } catch (error) {
    if (error instanceof KubeApiError && error.statusCode === 404) return undefined;
    throw error;
  }
}

/** The groups the binding binds now (a group change keeps the old one until it is done). */
export async function boundGroups(kube: KubeHttp, name: string): Promise<string[]> {
  const binding = (await read(kube, paths(name).ClusterRoleBinding)) as
    (KubernetesObject & { subjects?: { kind?: string; name?: string }[] }) | undefined;
  return (binding?.subjects ?? []).filter((s) => s.kind === 'Group' && typeof s.name === 'string').map((s) => s.name!);
}

/** Whether an object is ours to delete: it names our stack, or it has no owner and our name is in `unowned`. */
export function isOurs(object: KubernetesObject, owner: string, unownedOk: boolean): boolean {
  const named = object.metadata.annotations?.[ownerAnnotation];
  return named === undefined ? unownedOk : named === owner;
}

/**
 * Deletes every object of `name` that is ours, the FlowSchema first; already gone counts as
 * deleted. Returns what it left because it belongs to someone else.
 */
export async function deleteRbac(kube: KubeHttp, name: string, owner: string, unownedOk: boolean): Promise<string[]> {
  const kinds = [
    'ValidatingAdmissionPolicyBinding',
    'ValidatingAdmissionPolicy',
    'FlowSchema',
    'PriorityLevelConfiguration',
    'RoleBinding',
    'Role',
    'ClusterRoleBinding',
    'ClusterRole',
  ] as const;
  const leftAlone = await deleteObjects(kube, name, owner, unownedOk, kinds);
  // The namespace (and the readings in it) only when it names this stack: one of that name made
  // by someone else, or by hand, is never taken away with its contents.
  return [...leftAlone, ...(await deleteObjects(kube, name, owner, false, ['Namespace']))];
}

async function deleteObjects(
  kube: KubeHttp,
  name: string,
  owner: string,
  unownedOk: boolean,
  kinds: readonly Kind[],
): Promise<string[]> {
  const p = paths(name);
  const leftAlone: string[] = [];
  for (const kind of kinds) {
    const object = await read(kube, p[kind]);
    if (object === undefined) continue;
    if (!isOurs(object, owner, unownedOk)) {
      leftAlone.push(`${kind} ${name}`);
      continue;
    }
    try {
      await kube.request('DELETE', p[kind]);
    } catch (error) {
      if (!(error instanceof KubeApiError && error.statusCode === 404)) throw error;
    }
  }
  return leftAlone;
}
