// Where a Deployment's next pod may go, as far as the surge needs to know before it restarts
// anything: the template's nodeSelector and its tolerations of the nodes' NoSchedule and
// NoExecute taints. Required node affinity and resources are the scheduler's to judge; a
// replacement it cannot place is refused later, by name (no-capacity).
// https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#concepts
import type { Taint, Toleration, Placement } from '../model.js';

/** A node a replacement might land on. */
export interface CandidateNode {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
}

/** The toleration matches the taint as the scheduler matches them (key, operator, value, effect). */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect !== undefined && t.effect !== '' && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return t.key === undefined || t.key === '' || t.key === taint.key;
  // An operator this code does not know (Gt and Lt, alpha in Kubernetes 1.35) is taken as
  // tolerating: a node counted as room by mistake ends as no-capacity, never a false refusal.
  if (t.operator !== undefined && t.operator !== '' && t.operator !== 'Equal') return t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

/** The template's pods may be scheduled there: every label it selects, every repelling taint tolerated. */
export function admits(p: Placement, node: CandidateNode): boolean {
  if (Object.entries(p.nodeSelector).some(([k, v]) => node.labels[k] !== v)) return false;
  const repelling = node.taints.filter((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute');
  return repelling.every((taint) => p.tolerations.some((t) => toleratesTaint(t, taint)));
}

/** The nodeSelector as a list's labelSelector query ('' selects every node). */
export const nodeSelectorQuery = (p: Placement): string =>
  Object.entries(p.nodeSelector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
