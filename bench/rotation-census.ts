// Where a rotation's moved pods went (bench/rotation.ts): after the refresh's Started event and
// after each batch, the pods created since the rotation began that sit on an old node (one the
// refresh has still to replace: each will be evicted again), and whether that node carries the
// outdated taint the Started event sets (PreferNoSchedule: a preference the scheduler weighs
// against its other scores, not a rule). The bench's own reads (admin), not the drainer's.
import type { Environment } from '../demo/environment.js';
import { outdatedTaintKey } from '../lambda/cluster/marks/mark-keys.js';
import { namespace } from './wave-fleet.js';

export interface Census {
  /** After what: "started" or "batch N". */
  readonly after: string;
  readonly oldNodes: number;
  readonly oldNodesTainted: number;
  /** Pods created since the rotation began, Running or Pending with a node. */
  readonly movedPods: number;
  readonly movedOnOldNodes: number;
  readonly movedOnTaintedOldNodes: number;
}

export async function census(
  env: Environment,
  after: string,
  originals: ReadonlySet<string>,
  oldNames: ReadonlySet<string>,
): Promise<Census> {
  const nodes = (await env.admin.core.listNode()).items.filter((n) => oldNames.has(n.metadata?.name ?? ''));
  const tainted = new Set(
    nodes.filter((n) => n.spec?.taints?.some((t) => t.key === outdatedTaintKey)).map((n) => n.metadata!.name!),
  );
  const moved = (await env.admin.core.listNamespacedPod({ namespace })).items.filter(
    (p) => !originals.has(p.metadata?.name ?? '') && p.spec?.nodeName !== undefined && !p.metadata?.deletionTimestamp,
  );
  const onOld = moved.filter((p) => oldNames.has(p.spec!.nodeName!));
  return {
    after,
    oldNodes: nodes.length,
    oldNodesTainted: tainted.size,
    movedPods: moved.length,
    movedOnOldNodes: onOld.length,
    movedOnTaintedOldNodes: onOld.filter((p) => tainted.has(p.spec!.nodeName!)).length,
  };
}
