// Which marks of ours a node carries: the owner label (marks/mark-keys.ts) stays while any is there.
import { migrationLabel, refreshCordonedLabel, refreshLabel } from './mark-keys.js';

/** Each kind of mark of ours a node can carry; the owner label stays while any is there. */
export type OurMark = 'drain' | 'refresh' | 'repair' | 'deferral' | 'out-of-service' | 'migration';

/** Whether a mark of ours other than `taking` stays on the node (then its owner label stays too). */
export function otherMarksOfOurs(
  node: {
    readonly labels: Readonly<Record<string, string>>;
    readonly drain?: unknown;
    readonly repair?: unknown;
    readonly deferral?: unknown;
    readonly outOfService?: unknown;
  },
  taking: OurMark,
): boolean {
  const present: Record<OurMark, boolean> = {
    drain: node.drain !== undefined,
    refresh: node.labels[refreshLabel] !== undefined,
    repair: node.repair !== undefined,
    deferral: node.deferral !== undefined,
    'out-of-service': node.outOfService !== undefined,
    migration: node.labels[migrationLabel] !== undefined,
  };
  return (Object.keys(present) as OurMark[]).some((k) => k !== taking && present[k]);
}

/** The node's cordon is a refresh's of ours: a drain that finds it takes it over. */
export function adoptsRefreshCordon(node: {
  readonly unschedulable: boolean;
  readonly labels: Readonly<Record<string, string>>;
}): boolean {
  return node.unschedulable && node.labels[refreshCordonedLabel] !== undefined;
}
