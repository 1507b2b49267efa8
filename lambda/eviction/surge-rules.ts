// Surge before evict, the decision (pure): whether a pod's Deployment takes part, whether its
// eviction would leave it with no Ready replica off the leaving nodes, and the named reasons
// a surge is refused. The traps are the ones third-party controllers document (maxSurge 0,
// hostname anti-affinity, no capacity, owners that fight a restart): docs/surge.md.
import type { PodInfo } from '../cluster/model.js';
import { surgeAnnotation } from '../cluster/marks/mark-keys.js';
import { type DeploymentInfo, type ReplicaPod } from '../cluster/ports/surge-gateway.js';
import { selects, type SurgeSettings } from '../shared/surge-variables.js';

export type SurgeRefusal =
  | 'statefulset'
  | 'untouchable-owner'
  | 'paused'
  | 'not-settled'
  | 'recreate-strategy'
  | 'max-surge-zero'
  | 'no-readiness-probe'
  | 'anti-affinity'
  | 'no-capacity'
  | 'not-recorded';

/** What each refusal means, in the SurgeRefused Event. */
export const refusalText: Readonly<Record<SurgeRefusal, string>> = {
  statefulset:
    'StatefulSet pods are never surged: a StatefulSet replaces a pod only after it is gone (same name, same volumes)',
  'untouchable-owner':
    'the Deployment is marked untouchable (annotated "false", or written by a field manager ' +
    'SURGE_UNTOUCHABLE_MANAGERS lists)',
  paused: 'the Deployment is paused: a restart would not roll out',
  'not-settled':
    'the Deployment controller has not observed its latest change yet (status.observedGeneration behind ' +
    'metadata.generation)',
  'recreate-strategy': 'its strategy is Recreate: it never runs old and new pods together',
  'max-surge-zero': 'its maxSurge rounds to 0: a rollout would remove the pod before starting its replacement',
  'no-readiness-probe': 'a container has no readiness probe: Ready would not mean serving',
  'anti-affinity':
    'a required pod anti-affinity on kubernetes.io/hostname leaves no node for one more pod (schedulable, not ' +
    'leaving, its nodeSelector and taints met, none of its pods there)',
  'no-capacity': 'the replacement stays Pending (Unschedulable): no node has room for it',
  'not-recorded': 'the drain record could not be written first, and a restart is never made unrecorded',
};

export type Participation = 'opted-in' | 'opted-out' | 'not-asked';

/**
 * The annotation (on the pod or the Deployment) decides; "false" is an opt-out that wins.
 * Otherwise the namespaces and the pod selector of the deployment-wide settings.
 */
export function participation(
  pod: Pick<PodInfo, 'namespace' | 'annotations'>,
  d: Pick<DeploymentInfo, 'annotations' | 'templateLabels'> | undefined,
  s: SurgeSettings,
): Participation {
  const marks = [pod.annotations[surgeAnnotation], d?.annotations[surgeAnnotation]];
  if (marks.includes('false')) return 'opted-out';
  if (marks.includes('true')) return 'opted-in';
  if (s.namespaces.has(pod.namespace)) return 'opted-in';
  if (d !== undefined && s.podSelector !== undefined && selects(s.podSelector, d.templateLabels)) return 'opted-in';
  return 'not-asked';
}

/**
 * maxSurge as the Deployment controller resolves it: a percentage of spec.replicas rounded up
 * (GetScaledValueFromIntOrPercent(maxSurge, replicas, true) in
 * https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/deployment/util/deployment_util.go).
 */
export function resolvedMaxSurge(d: Pick<DeploymentInfo, 'maxSurge' | 'replicas'>): number {
  if (typeof d.maxSurge === 'number') return d.maxSurge;
  const m = /^(\d+)%$/.exec(d.maxSurge.trim());
  if (m === null) return 0;
  return Math.ceil((Number(m[1]) * d.replicas) / 100);
}

/** Whether any of these managers writes the Deployment (`name` or `name/subresource`). */
export function writtenBy(d: Pick<DeploymentInfo, 'managers'>, untouchable: readonly string[]): boolean {
  return d.managers.some((f) => untouchable.some((u) => u === f.manager || u === `${f.manager}/${f.subresource}`));
}

/**
 * The first reason the Deployment cannot be surged now; undefined: it can. `room`: nodes left for hostname
 * anti-affinity.
 */
export function refusalOf(d: DeploymentInfo, s: SurgeSettings, room: number | undefined): SurgeRefusal | undefined {
  if (writtenBy(d, s.untouchableManagers)) return 'untouchable-owner';
  if (d.paused) return 'paused';
  if (d.observedGeneration < d.generation) return 'not-settled';
  if (d.strategy === 'Recreate') return 'recreate-strategy';
  if (resolvedMaxSurge(d) < 1) return 'max-surge-zero';
  if (!d.readinessProbe) return 'no-readiness-probe';
  if (d.selfAntiAffinityOnHostname && room !== undefined && room < 1) return 'anti-affinity';
  return undefined;
}

/** A Ready pod of the Deployment (other than this one) on a node that is not leaving. */
export function readyElsewhere(
  pods: readonly ReplicaPod[],
  podUid: string,
  leaving: ReadonlySet<string>,
): ReplicaPod | undefined {
  return pods.find(
    (p) => p.uid !== podUid && p.ready && !p.terminating && p.nodeName !== undefined && !leaving.has(p.nodeName),
  );
}

/**
 * Schedulable nodes, not leaving, that hold no pod of the Deployment: where one more pod can go
 * under a required anti-affinity on the hostname.
 */
export function antiAffinityRoom(
  schedulable: readonly string[],
  leaving: ReadonlySet<string>,
  pods: readonly ReplicaPod[],
): number {
  const taken = new Set(pods.filter((p) => !p.terminating && p.nodeName !== undefined).map((p) => p.nodeName!));
  return schedulable.filter((n) => !leaving.has(n) && !taken.has(n)).length;
}

/** The restart annotation's value: RFC 3339 to the second, as kubectl writes it (in UTC). */
export const restartValue = (nowMs: number): string =>
  new Date(Math.floor(nowMs / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/**
 * Whether to write the restart when resuming a surge the record names: only when the template
 * does not carry our value or a later one (the earlier invocation stopped between the record and
 * the patch). An unreadable value is left alone: it may be someone's later restart.
 */
export function restartStillToWrite(current: string | undefined, ours: string): boolean {
  return current === undefined || Date.parse(current) < Date.parse(ours);
}
