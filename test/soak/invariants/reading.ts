// How the invariants read the observations: each pod's drain rule as docs/drain-rules.md states
// it (written here from the documentation, not imported from the handler, so the handler's own
// reading is what is checked), whose instance a node is, and what Auto Scaling said when.
import type { AuditEntry } from '../../cluster/kube.js';
import type { ActionRecord, InstanceState, NodeRecord, Observations, PodRecord } from '../observations.js';
import type { SoakSettings } from '../scenario.js';

export type DocumentedRule =
  | { readonly behavior: 'Skip' }
  | { readonly behavior: 'Drain'; readonly order: number }
  /** bound: until the deadline (never evicted), or within the batch wait (then evicted as any pod). */
  | { readonly behavior: 'WaitCompleted'; readonly bound: 'deadline' | 'batch'; readonly protectedForMs?: number };

/** A Go duration as Karpenter reads do-not-disrupt ("90s", "2m", "1h30m"); undefined when not one. */
export function goDurationMs(value: string): number | undefined {
  if (!/^(\d+(\.\d+)?(h|m|s|ms))+$/.test(value)) return undefined;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
  let total = 0;
  for (const [, n, , u] of value.matchAll(/(\d+(\.\d+)?)(ms|h|m|s)/g)) total += Number(n) * unit[u!]!;
  return total;
}

/**
 * docs/drain-rules.md, "Where a pod's rule comes from" (the soak sets no DRAIN_RULES), for the pod as it was at
 * `atMs`: a pod that finished later (the pod garbage collector fails the pods of a deleted node) was not finished
 * then, and its rule then is what the drainer had to keep.
 */
export function documentedRule(
  pod: PodRecord,
  settings: Pick<SoakSettings, 'evictDaemonSetPods'>,
  atMs: number,
): DocumentedRule {
  if (pod.annotations['kubernetes.io/config.mirror'] !== undefined || (pod.finishedMs ?? Infinity) <= atMs)
    return { behavior: 'Skip' };
  if (pod.ownerKind === 'DaemonSet')
    return settings.evictDaemonSetPods ? { behavior: 'Drain', order: 1000 } : { behavior: 'Skip' };
  const capi = pod.labels['cluster.x-k8s.io/drain']?.toLowerCase();
  if (capi === 'skip') return { behavior: 'Skip' };
  if (capi === 'wait-completed' || capi === 'waitcompleted') return { behavior: 'WaitCompleted', bound: 'deadline' };
  const ours = pod.labels['graceful-node-termination/drain'] ?? pod.annotations['graceful-node-termination/drain'];
  if (ours === 'skip') return { behavior: 'Skip' };
  if (ours === 'wait-completed') return { behavior: 'WaitCompleted', bound: 'deadline' };
  const order = Number(
    pod.labels['graceful-node-termination/drain-order'] ??
      pod.annotations['graceful-node-termination/drain-order'] ??
      0,
  );
  if (ours === 'drain') return { behavior: 'Drain', order };
  if (pod.annotations['graceful-node-termination/wait-for-completion'] === 'true')
    return { behavior: 'WaitCompleted', bound: 'batch' };
  const dnd = pod.annotations['karpenter.sh/do-not-disrupt'];
  if (dnd === 'true') return { behavior: 'WaitCompleted', bound: 'batch' };
  const protectedForMs = dnd === undefined ? undefined : goDurationMs(dnd);
  if (protectedForMs !== undefined) return { behavior: 'WaitCompleted', bound: 'batch', protectedForMs };
  if (pod.ownerKind === 'Job') return { behavior: 'WaitCompleted', bound: 'batch' };
  return { behavior: 'Drain', order };
}

/** Evictions and deletions the drainer asked for, with the pod each names (by namespace and name, then time). */
export function podWrites(o: Observations): { entry: AuditEntry; pod: PodRecord | undefined }[] {
  return o.audit
    .filter((e) => e.resource === 'pods' && (e.subresource === 'eviction' || (e.verb === 'delete' && !e.subresource)))
    .map((entry) => ({ entry, pod: podAt(o.pods, entry.namespace, entry.name, entry.receivedMs) }));
}

/** The pod of that name at that moment (names are reused by StatefulSets). */
export function podAt(
  pods: readonly PodRecord[],
  namespace: string | undefined,
  name: string | undefined,
  atMs: number,
): PodRecord | undefined {
  const named = pods.filter((p) => p.namespace === namespace && p.name === name && p.createdMs <= atMs + 1_000);
  return named.sort((x, y) => y.createdMs - x.createdMs)[0];
}

export const evicted = (e: AuditEntry) => e.subresource === 'eviction' && e.code === 201;

export function nodeNamed(o: Observations, name: string | undefined): NodeRecord | undefined {
  return o.nodes.find((n) => n.name === name);
}

/** Auto Scaling's lifecycle state of the instance at that moment (undefined before it was known). */
export function stateAt(states: readonly InstanceState[], instanceId: string, atMs: number): string | undefined {
  let state: string | undefined;
  for (const s of states) if (s.instanceId === instanceId && s.atMs <= atMs) state = s.state;
  return state;
}

/** When the action ended: its accepted completion or its timeout; undefined while open. */
export function endOf(action: ActionRecord): number | undefined {
  return action.completions.find((c) => c.accepted)?.atMs ?? action.expiredMs;
}

/** Whether the pod was on the node at that moment (bound, and not yet gone). */
export function onNodeAt(pod: PodRecord, node: string, atMs: number): boolean {
  return pod.node === node && (pod.boundMs ?? pod.createdMs) <= atMs && (pod.goneMs ?? Infinity) > atMs;
}

/** The node's drainer Events in order (the recorder's watch), until a moment. */
export function nodeEvents(o: Observations, node: string, untilMs = Infinity) {
  return o.events.filter((e) => e.kind === 'Node' && e.name === node && e.atMs <= untilMs);
}

/** A real instant in soak time (the handler's clock): what it had read on its clock then. */
export function soakTimeOf(o: Pick<Observations, 'skips'>, realMs: number): number {
  let offset = 0;
  for (const s of o.skips) if (s.atRealMs <= realMs) offset = s.offsetMs;
  return realMs + offset;
}

const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Whether an Event's message names the pod exactly ("ns/web-1" is not named by "ns/web-10"). */
export function namesPod(message: string, pod: { readonly namespace: string; readonly name: string }): boolean {
  return new RegExp(`(^|[\\s,])${escaped(`${pod.namespace}/${pod.name}`)}([\\s,:.]|$)`).test(message);
}
