// What a drain says of the pods it could not get out by eviction (drain-node.ts).
import type { BlockReason, PodInfo } from '../cluster/cluster-ports.js';
import { isTerminating, podKey } from '../cluster/pods.js';
import type { Attempt } from './rules.js';

export interface StuckPod {
  readonly pod: string;
  /** Why it is still there: the last eviction answer, or 'terminating' / 'not-attempted'. */
  readonly reason: BlockReason | 'terminating' | 'not-attempted';
  readonly budgetName: string | undefined;
  readonly message: string | undefined;
}

export function describeStuck(pod: PodInfo, attempt: Attempt | undefined, accepted: boolean): StuckPod {
  if (accepted || isTerminating(pod)) return { pod: podKey(pod), reason: 'terminating', budgetName: undefined, message: undefined };
  const block = attempt?.lastBlock;
  return { pod: podKey(pod), reason: block?.reason ?? 'not-attempted', budgetName: block?.budgetName, message: block?.message };
}

/** Pods the force policy deleted that are gone now: the drain did not get them out by eviction. */
export function forcedGone(forcedPods: ReadonlyMap<string, StuckPod>, remaining: readonly PodInfo[]): StuckPod[] {
  return [...forcedPods].filter(([uid]) => !remaining.some((p) => p.uid === uid)).map(([, s]) => s);
}
