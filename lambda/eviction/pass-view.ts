// The pods of one drain pass, sorted by their drain rules (cluster/rules/drain-rules.ts): those the
// node must see gone, those waited for (WaitCompleted), those evicted now or later (by order),
// and those the rules leave running (Skip). Re-derived at every pass from the live pod list.
import type { PodInfo } from '../cluster/model.js';
import type { DrainRuleSettings, PodRule } from '../cluster/rules/drain-rules.js';
import { drainPlan, evictionOrder, isWaitedFor, mustLeave, waitEndMs } from '../cluster/rules/drain-plan.js';
import { isTerminating } from '../cluster/rules/pods.js';
import { DeadlinePolicy } from '../shared/deadline-policy.js';
import { lastPodDeadlineMs, type Attempt, type DrainMoment } from './rules.js';

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
  const { ruleOf, leave } = drainPlan(input.pods, input.settings, nowMs);
  const counted = input.pods.filter((p) => !input.ignored(p));
  const remaining = counted.filter((p) => mustLeave(ruleOf(p)));
  const waitEnd = (pod: PodInfo, untilMs: number): number => {
    const rule = ruleOf(pod);
    return isWaitedFor(rule) ? waitEndMs(rule, untilMs) : Number.NEGATIVE_INFINITY;
  };
  const waiting =
    batch === undefined ? [] : remaining.filter((p) => !isTerminating(p) && nowMs < waitEnd(p, batch.untilMs));
  // Pods waited for do not hold the orders back: the rest of the node drains meanwhile.
  const evictable = remaining.filter((p) => !waiting.includes(p));
  return {
    remaining,
    waiting,
    evictable,
    skipped: leave.map(({ pod }) => pod).filter((p) => !input.ignored(p)),
    holdsBatchDeadline: batch !== undefined && remaining.some((p) => isWaitedFor(ruleOf(p))),
    waitEndsMs:
      batch === undefined ? Number.POSITIVE_INFINITY : Math.min(...waiting.map((p) => waitEnd(p, batch.untilMs))),
    tier: Math.min(...evictable.map((p) => evictionOrder(ruleOf(p)))),
    ruleOf,
  };
}

export interface PassView {
  readonly remaining: readonly PodInfo[];
  /** Batch pods waited for (not evicted yet). */
  readonly waiting: readonly PodInfo[];
  readonly evictable: readonly PodInfo[];
  /** Left running by a drain rule (Skip): told once. */
  readonly skipped: readonly PodInfo[];
  readonly ruleOf: (pod: PodInfo) => PodRule;
  readonly waitEndsMs: number;
  readonly moment: DrainMoment;
  readonly lastPodDeadlineMs: number;
}

/** What the drain fixes for its whole run (drain-node.ts's DrainOptions). */
export interface PassOptions {
  /** What is done with each pod, in which order (drain rules). */
  readonly rules: DrainRuleSettings;
  /** Batch pods are not evicted before untilMs; while any is on the node the deadline is deadlineMs if later. */
  readonly batch?: { readonly untilMs: number; readonly deadlineMs: number } | undefined;
  /** Epoch milliseconds after which the drain stops waiting. */
  readonly drainDeadlineMs: number;
  /** Nothing runs past this (the action's cap less the load-balancer wait). */
  readonly latestDrainEndMs: number;
  readonly deadlinePolicy: DeadlinePolicy;
  /** An earlier invocation ran this drain and already told its batch wait as an Event. */
  readonly resumed: boolean;
  /** The fair eviction window, from when the drain first saw the node: no pod is forced inside it. */
  readonly window: { readonly startMs: number; readonly endMs: number };
}

/** What the drain has seen so far, and the pods now. */
export interface PassState {
  readonly pods: readonly PodInfo[];
  readonly nowMs: number;
  readonly ignored: (pod: PodInfo) => boolean;
  readonly attempts: ReadonlyMap<string, Attempt>;
  readonly accepted: ReadonlySet<string>;
  /** When each order was first the lowest present: a pass records the one it reaches. */
  readonly tierReachedMs: Map<number, number>;
}

/** The pods and the moment of one pass. */
export function passView(o: PassOptions, state: PassState): PassView {
  const { batch } = o;
  const { nowMs, tierReachedMs } = state;
  const sorted = sortPods({ pods: state.pods, settings: o.rules, nowMs, batch, ignored: state.ignored });
  const { remaining, waiting, evictable, tier } = sorted;
  // The first order's window is the drain's own; a later order's (0 after a negative one too)
  // starts when it is reached. A resumed drain cannot tell which came first: the default order's.
  const first = tierReachedMs.size === 0 && (!o.resumed || tier <= 0);
  if (Number.isFinite(tier) && !tierReachedMs.has(tier)) tierReachedMs.set(tier, first ? o.window.startMs : nowMs);
  const moment: DrainMoment = {
    nowMs,
    force: o.deadlinePolicy === DeadlinePolicy.FORCE,
    drainDeadlineMs:
      sorted.holdsBatchDeadline && batch ? Math.max(o.drainDeadlineMs, batch.deadlineMs) : o.drainDeadlineMs,
    windowEndMs: o.window.endMs,
    windowMs: o.window.endMs - o.window.startMs,
    latestDrainEndMs: o.latestDrainEndMs,
    tier,
    orderOf: (pod) => evictionOrder(sorted.ruleOf(pod)),
    tierReachedMs,
    attempts: state.attempts,
    accepted: state.accepted,
  };
  // A pod waited for is never forced: its window moves nothing.
  const deadlineMs = lastPodDeadlineMs(evictable, moment);
  const { skipped, ruleOf, waitEndsMs } = sorted;
  return { remaining, waiting, evictable, skipped, ruleOf, waitEndsMs, moment, lastPodDeadlineMs: deadlineMs };
}
