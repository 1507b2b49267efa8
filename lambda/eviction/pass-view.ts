// The pods of one drain pass, sorted by their drain rules (cluster/rules/drain-rules.ts): those the
// node must see gone, those waited for (WaitCompleted), those evicted now or later (by order),
// and those the rules leave running (Skip). Re-derived at every pass from the live pod list.
import type { PodInfo } from '../cluster/model.js';
import { podRule, type DrainRuleSettings, type PodRule } from '../cluster/rules/drain-rules.js';
import { isTerminating } from '../cluster/rules/pods.js';

export interface SortedPods {
  /** Everything the node must see gone (not Skip, not returned, not given up on). */
  readonly remaining: readonly PodInfo[];
  /** WaitCompleted pods waited for now (not evicted). */
  readonly waiting: readonly PodInfo[];
  /** remaining less waiting: evicted by order. */
  readonly evictable: readonly PodInfo[];
  /** Left running by a rule a user wrote (Skip). */
  readonly skipped: readonly PodInfo[];
  /** Some remaining pod is WaitCompleted: the deadline is the batch-extended one. */
  readonly holdsBatchDeadline: boolean;
  /** When the next pod waited for stops being waited for (Infinity: none will before the deadline). */
  readonly waitEndsMs: number;
  /** The lowest order among the evictable pods (Infinity when none). */
  readonly tier: number;
  readonly ruleOf: (pod: PodInfo) => PodRule;
}

export interface SortInput {
  readonly pods: readonly PodInfo[];
  readonly settings: DrainRuleSettings;
  readonly nowMs: number;
  /** The batch window (undefined: nothing is waited for, as for a Spot interruption's two minutes). */
  readonly batch: { readonly untilMs: number; readonly deadlineMs: number } | undefined;
  /** Pods no longer counted (returned onto the cordoned node, or given up on). */
  readonly ignored: (pod: PodInfo) => boolean;
}

export function sortPods(input: SortInput): SortedPods {
  const { batch, nowMs } = input;
  const rules = new Map<string, PodRule>(input.pods.map((p) => [p.uid, podRule(p, input.settings, nowMs)]));
  const ruleOf = (pod: PodInfo): PodRule => rules.get(pod.uid) ?? podRule(pod, input.settings, nowMs);
  const counted = input.pods.filter((p) => !input.ignored(p));
  const remaining = counted.filter((p) => ruleOf(p).behavior !== 'Skip');
  const waitCompleted = remaining.filter((p) => ruleOf(p).behavior === 'WaitCompleted');
  const waiting = batch === undefined ? [] : waitCompleted.filter((p) => !isTerminating(p) && nowMs < waitEndMs(ruleOf(p), batch.untilMs));
  // Pods waited for do not hold the orders back: the rest of the node drains meanwhile.
  const evictable = remaining.filter((p) => !waiting.includes(p));
  return {
    remaining,
    waiting,
    evictable,
    skipped: counted.filter((p) => ruleOf(p).behavior === 'Skip' && ruleOf(p).builtIn !== true),
    holdsBatchDeadline: batch !== undefined && waitCompleted.length > 0,
    waitEndsMs: batch === undefined ? Number.POSITIVE_INFINITY : Math.min(...waiting.map((p) => waitEndMs(ruleOf(p), batch.untilMs))),
    tier: Math.min(...evictable.map((p) => ruleOf(p).order)),
    ruleOf,
  };
}

/** Until when a WaitCompleted pod is waited for: the batch wait (or its do-not-disrupt time), or for good. */
function waitEndMs(rule: PodRule, batchUntilMs: number): number {
  if (rule.waitBound === 'deadline') return Number.POSITIVE_INFINITY;
  return Math.min(batchUntilMs, rule.untilMs ?? Number.POSITIVE_INFINITY);
}
