// What one drain run ends with (drain-node.ts): its outcome, what it did, and the pods it could
// not get out by eviction, each with why.
import type { BlockReason, PodInfo } from '../cluster/model.js';
import { isTerminating, podKey } from '../cluster/rules/pods.js';
import type { Attempt } from './rules.js';

export interface StuckPod {
  readonly pod: string;
  /** Why it is still there: the last eviction answer, or 'terminating' / 'not-attempted'. */
  readonly reason: BlockReason | 'terminating' | 'not-attempted';
  readonly budgetName: string | undefined;
  readonly message: string | undefined;
}

export interface DrainResult {
  /** 'stopped': this invocation's time is up before the deadline (the caller hands on). */
  readonly outcome: 'drained' | 'timed-out' | 'stopped';
  /** Evictions the API server accepted in this run. */
  readonly evicted: number;
  /** Eviction answers in this run that refused (budgets, throttling, server errors). */
  readonly blocked: number;
  /** Pods deleted by the force policy in this run (only DELETEs that changed something). */
  readonly forced: number;
  /** Pods still on the node at the deadline, each with what blocked it. */
  readonly stuck: readonly StuckPod[];
  /** Pods that tolerate the cordon and landed back on the node: reported, not chased. */
  readonly returned: readonly string[];
  /** Terminating pods no longer waited for (past their grace period, or no kubelet to stop them). */
  readonly notWaitedFor: readonly string[];
}

export function describeStuck(pod: PodInfo, attempt: Attempt | undefined, accepted: boolean): StuckPod {
  if (accepted || isTerminating(pod))
    return { pod: podKey(pod), reason: 'terminating', budgetName: undefined, message: undefined };
  const block = attempt?.lastBlock;
  return {
    pod: podKey(pod),
    reason: block?.reason ?? 'not-attempted',
    budgetName: block?.budgetName,
    message: block?.message,
  };
}

/** Pods the force policy deleted that are gone now: the drain did not get them out by eviction. */
export function forcedGone(forcedPods: ReadonlyMap<string, StuckPod>, remaining: readonly PodInfo[]): StuckPod[] {
  return [...forcedPods].filter(([uid]) => !remaining.some((p) => p.uid === uid)).map(([, s]) => s);
}
