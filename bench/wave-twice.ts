// Issue 40: a pod evicted twice, traced. A replacement the scheduler bound to a node of the wave
// before that node was marked is evicted again by the node's own drain. Each such pod is told
// with the node it went to, when it was bound, when the node's instance was notified and when a
// drain of ours first marked the node (ahead by a sibling's drain, or by its own), in seconds
// from the first notification: which of them came first says where the mark was late.
import type { AuditEntry } from '../test/cluster/kube.js';
import { round } from './fleet.js';
import { isNodePatch, marksAhead } from './wave-report.js';

export interface TwiceEvicted {
  readonly pod: string;
  readonly node: string | undefined;
  readonly boundSeconds: number | undefined;
  readonly notifiedSeconds: number | undefined;
  readonly firstMarkSeconds: number | undefined;
  /** Whether that first mark was a sibling's drain marking it ahead (wave-report.ts marksAhead). */
  readonly markedAhead: boolean | undefined;
  /** Refused node patches (409) by drains of ours before the first mark. */
  readonly conflictsBeforeMark: number;
}

export function traceTwiceEvicted(
  o: {
    readonly evictedTwice: readonly AuditEntry[];
    readonly bindings: readonly AuditEntry[];
    readonly requests: readonly AuditEntry[];
    readonly notifiedMsByNode: ReadonlyMap<string, number>;
  },
  startedMs: number,
): TwiceEvicted[] {
  const at = (ms: number | undefined) => (ms === undefined ? undefined : round((ms - startedMs) / 1000));
  const nodeOf = new Map<string, { node: string; atMs: number }>();
  for (const b of o.bindings) {
    const node = (b.requestObject as { target?: { name?: string } } | undefined)?.target?.name;
    if (b.code === 201 && b.name !== undefined && node !== undefined) nodeOf.set(b.name, { node, atMs: b.atMs });
  }
  return o.evictedTwice.map((e) => {
    const bound = nodeOf.get(e.name ?? '');
    const patches = o.requests.filter((r) => isNodePatch(r) && r.name === bound?.node);
    const firstMark = patches.find((r) => r.code === 200);
    const conflicts = patches.filter((r) => r.code === 409 && (firstMark === undefined || r.atMs < firstMark.atMs));
    return {
      pod: e.name ?? '',
      node: bound?.node,
      boundSeconds: at(bound?.atMs),
      notifiedSeconds: at(bound === undefined ? undefined : o.notifiedMsByNode.get(bound.node)),
      firstMarkSeconds: at(firstMark?.atMs),
      markedAhead: firstMark === undefined ? undefined : marksAhead(firstMark),
      conflictsBeforeMark: conflicts.length,
    };
  });
}

/**
 * How fast the wave's nodes were marked, against when its evictions began: seconds from the first notification
 * until the first eviction, and until half, 90 % and all of the wave's nodes had a first mark of ours.
 */
export function markCoverage(
  requests: readonly AuditEntry[],
  waveNodes: readonly string[],
  startedMs: number,
): { firstEvictionSeconds: number | undefined; markedSeconds: Record<string, number | undefined> } {
  const firstMarkMs = new Map<string, number>();
  for (const r of requests) {
    if (isNodePatch(r) && r.code === 200 && r.name !== undefined && !firstMarkMs.has(r.name))
      firstMarkMs.set(r.name, r.atMs);
  }
  const times = waveNodes.map((n) => firstMarkMs.get(n) ?? Number.POSITIVE_INFINITY).sort((x, y) => x - y);
  const at = (ms: number | undefined) =>
    ms === undefined || !Number.isFinite(ms) ? undefined : round((ms - startedMs) / 1000);
  const share = (f: number) => at(times[Math.max(0, Math.ceil(f * times.length) - 1)]);
  const firstEviction = requests.find((r) => r.subresource === 'eviction');
  return {
    firstEvictionSeconds: at(firstEviction?.receivedMs),
    markedSeconds: { '50 %': share(0.5), '90 %': share(0.9), all: share(1) },
  };
}
