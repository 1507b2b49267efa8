// The one reading of the drain rules: a node's pods and the deployment's settings in, a plan out (what to evict
// and in which order tiers, what to wait for and until when, what to leave). The drain, observe mode, the
// termination policy's costs, node repair and `check` read this plan and its named readings below; they are
// the only places that branch on a behaviour, each by an exhaustive switch, so a behaviour added to drain-rules.ts
// is a compile error everywhere it matters.
import type { PodInfo } from '../model.js';
import {
  podRule,
  type DrainRuleSettings,
  type EvictRule,
  type LeaveRule,
  type PodRule,
  type WaitRule,
} from './drain-rules.js';

export interface Planned<R extends PodRule = PodRule> {
  readonly pod: PodInfo;
  readonly rule: R;
}

export interface DrainPlan {
  /** Evicted (Drain), lowest order first (a tier keeps the pods' order as given). */
  readonly evict: readonly Planned<EvictRule>[];
  /** Waited for to finish (WaitCompleted): within the batch wait, then evicted, or until the deadline. */
  readonly waitFor: readonly Planned<WaitRule>[];
  /** Left running by a rule a user wrote (Skip): told. */
  readonly leave: readonly Planned<LeaveRule>[];
  /** Left by the built-in rules (static, finished, DaemonSet pods not evicted): never told. */
  readonly ignore: readonly Planned<LeaveRule>[];
  /** Each pod's rule, as this plan read it. */
  ruleOf(pod: PodInfo): PodRule;
}

/** The plan for these pods now (a do-not-disrupt duration elapses with time). */
export function drainPlan(pods: readonly PodInfo[], settings: DrainRuleSettings, nowMs: number): DrainPlan {
  const rules = new Map<string, PodRule>(pods.map((p) => [p.uid, podRule(p, settings, nowMs)]));
  const ruleOf = (pod: PodInfo): PodRule => rules.get(pod.uid) ?? podRule(pod, settings, nowMs);
  const evict: Planned<EvictRule>[] = [];
  const waitFor: Planned<WaitRule>[] = [];
  const leave: Planned<LeaveRule>[] = [];
  const ignore: Planned<LeaveRule>[] = [];
  for (const pod of pods) {
    const rule = ruleOf(pod);
    switch (rule.behavior) {
      case 'Drain':
        evict.push({ pod, rule });
        break;
      case 'WaitCompleted':
        waitFor.push({ pod, rule });
        break;
      case 'Skip':
        (rule.builtIn ? ignore : leave).push({ pod, rule });
        break;
      default:
        return unknownBehavior(rule);
    }
  }
  evict.sort((a, b) => a.rule.order - b.rule.order);
  return { evict, waitFor, leave, ignore, ruleOf };
}

/** The node must see it gone before it may go: everything but what the rules leave running. */
export function mustLeave(rule: PodRule): boolean {
  switch (rule.behavior) {
    case 'Drain':
    case 'WaitCompleted':
      return true;
    case 'Skip':
      return false;
    default:
      return unknownBehavior(rule);
  }
}

/** The drain asks the eviction API for it at some point (so its budgets can hold the drain up). */
export function isEvicted(rule: PodRule): boolean {
  switch (rule.behavior) {
    case 'Drain':
      return true;
    case 'WaitCompleted':
      return rule.bound === 'batch-wait';
    case 'Skip':
      return false;
    default:
      return unknownBehavior(rule);
  }
}

/** Waited for to finish (a Job's, a do-not-disrupt pod, one a rule says so of). */
export function isWaitedFor(rule: PodRule): rule is WaitRule {
  return rule.behavior === 'WaitCompleted';
}

/** Never evicted: waited for until the drain deadline (Cluster API's WaitCompleted). */
export function waitsUntilDeadline(rule: PodRule): boolean {
  return isWaitedFor(rule) && rule.bound === 'deadline';
}

/** Until when a waited-for pod is waited for: the batch wait (or its do-not-disrupt time), or for good. */
export function waitEndMs(rule: WaitRule, batchUntilMs: number): number {
  switch (rule.bound) {
    case 'deadline':
      return Number.POSITIVE_INFINITY;
    case 'batch-wait':
      return Math.min(batchUntilMs, rule.untilMs ?? Number.POSITIVE_INFINITY);
  }
}

/** Its eviction tier: a Drain rule's order; a pod waited for is evicted (if ever) with the first tier. */
export function evictionOrder(rule: PodRule): number {
  switch (rule.behavior) {
    case 'Drain':
      return rule.order;
    case 'WaitCompleted':
      return 0;
    case 'Skip':
      return Number.POSITIVE_INFINITY;
    default:
      return unknownBehavior(rule);
  }
}

/** How `check` sorts a node's rows: waited for first, then evicted, then left. */
export function planRank(rule: PodRule): number {
  switch (rule.behavior) {
    case 'WaitCompleted':
      return 0;
    case 'Drain':
      return 1;
    case 'Skip':
      return 2;
    default:
      return unknownBehavior(rule);
  }
}

function unknownBehavior(rule: never): never {
  throw new Error(`a drain rule behavior this code does not know: ${JSON.stringify(rule)}`);
}
