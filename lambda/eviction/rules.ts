// The drain's rules, each a named pure function over one moment of the drain: which pods may
// be evicted now, when a pod may be forced, and when the drain must next wake up. The drain
// itself (drain-node.ts) is a short pass over these, as Karpenter's terminator is:
// https://github.com/kubernetes-sigs/karpenter/blob/main/pkg/controllers/node/termination/terminator/terminator.go
import type { BlockReason, Blocked, PodInfo } from '../cluster/model.js';
import { isTerminating } from '../cluster/rules/pods.js';

/** What one pod's drain has seen in this invocation. */
export interface Attempt {
  count: number;
  nextAtMs: number;
  lastBlock: Blocked | undefined;
  /** When a budget first refused this pod (in this invocation). */
  blockedSinceMs: number | undefined;
  /** The long-block report was written. */
  reportedLong: boolean;
}

/** The drain at one moment: its deadlines and what it has tried. */
export interface DrainMoment {
  readonly nowMs: number;
  /** 'force': a pod still on the node is deleted at its deadline minus its grace period. */
  readonly force: boolean;
  /** The deadline from the plan, later while batch pods are on the node. */
  readonly drainDeadlineMs: number;
  /** End of the fair eviction window from when the drain first saw the node. */
  readonly windowEndMs: number;
  readonly windowMs: number;
  /** Nothing runs past this (the action's cap less the load-balancer wait). */
  readonly latestDrainEndMs: number;
  /** The lowest drain order still on the node: only it is evicted (drain rules, Cluster API's `order`). */
  readonly tier: number;
  /** Each pod's order (its drain rule's). */
  readonly orderOf: (pod: PodInfo) => number;
  /** When each tier became the lowest one present (this invocation). */
  readonly tierReachedMs: ReadonlyMap<number, number>;
  readonly attempts: ReadonlyMap<string, Attempt>;
  readonly accepted: ReadonlySet<string>;
}

export const maxRetryDelayMs = 10_000;

/**
 * A terminating pod still there this long after its deletionTimestamp will not leave by
 * itself: a finalizer nobody removes, a kubelet that is gone. The API server sets
 * deletionTimestamp to the deletion time plus the grace period, so this is a margin past it.
 * https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/#System
 */
export const stuckTerminatingMarginMs = 30_000;

/** How long before its deadline a pod already terminating is hurried (force policy). */
export const hurryLeadMs = 10_000;

/**
 * Delay before evicting a blocked pod again: exponential from 500 ms to 10 s (Karpenter
 * uses 100 ms to 10 s, kubectl a flat 5 s), never sooner than the server's Retry-After.
 */
export function retryDelayMs(attempt: number, retryAfterSeconds: number | undefined): number {
  const backoff = Math.min(maxRetryDelayMs, 250 * 2 ** Math.max(1, attempt));
  return Math.max(backoff, (retryAfterSeconds ?? 0) * 1000);
}

/** The pod's own grace period (the server's default when unset). */
export function gracePeriodMs(pod: PodInfo): number {
  return (pod.terminationGracePeriodSeconds ?? 30) * 1000;
}

/** Budgets refuse for a while; everything else is retried at the same pace but told once. */
export function isBudgetBlock(reason: BlockReason): boolean {
  return reason === 'disruption-budget' || reason === 'multiple-budgets';
}

/** When a budget still refusing a pod is reported as a long block (undefined: not refused by a budget, or told). */
export function longBlockReportAtMs(
  attempt: Attempt | undefined,
  accepted: boolean,
  blockedReportMs: number,
): number | undefined {
  if (attempt?.blockedSinceMs === undefined || attempt.reportedLong || accepted) return undefined;
  return attempt.blockedSinceMs + blockedReportMs;
}

/** Bound to the node since then (the API server keeps whole seconds): a DaemonSet pod its controller put back. */
export function boundSince(pod: PodInfo, sinceMs: number): boolean {
  return pod.startedAt !== undefined && pod.startedAt.getTime() > sinceMs - 1_000;
}

/** Eviction was asked for (and refused) or accepted at least once. */
export function wasAsked(pod: PodInfo, m: Pick<DrainMoment, 'attempts' | 'accepted'>): boolean {
  return (m.attempts.get(pod.uid)?.count ?? 0) > 0 || m.accepted.has(pod.uid);
}

/**
 * A tier's own fair window: critical pods (a later order) are evicted only once the others are
 * gone, so their window starts when their tier is reached, not when the drain began (the
 * first tier's is the drain's own window: tierReachedMs has it at the window's start).
 */
export function podWindowEndMs(pod: PodInfo, m: DrainMoment): number {
  const reached = m.tierReachedMs.get(m.orderOf(pod));
  return reached === undefined ? Number.POSITIVE_INFINITY : Math.max(m.windowEndMs, reached + m.windowMs);
}

/**
 * A pod's deadline. Under 'force' a pod is deleted at its deadline minus its grace period,
 * its grace clamped to the deadline (as Karpenter does). When the fair window ends near the
 * deadline (a notification that waited in a queue, a tier reached late), the pod's deadline
 * moves out by at most one more window, so the pod deleted when its window ends still gets
 * time to shut down; a tier not yet reached is expected no sooner than the deadline.
 */
export function podDeadlineMs(pod: PodInfo, m: DrainMoment): number {
  if (!m.force) return m.drainDeadlineMs;
  const windowEnd = podWindowEndMs(pod, m);
  const expectedWindowEnd = Number.isFinite(windowEnd) ? windowEnd : Math.max(m.nowMs, m.drainDeadlineMs) + m.windowMs;
  return Math.min(
    m.latestDrainEndMs,
    Math.max(m.drainDeadlineMs, expectedWindowEnd + Math.min(gracePeriodMs(pod), m.windowMs)),
  );
}

/** The drain's deadline: the latest of its pods'. */
export function lastPodDeadlineMs(pods: readonly PodInfo[], m: DrainMoment): number {
  return Math.max(m.drainDeadlineMs, ...pods.map((p) => podDeadlineMs(p, m)));
}

/**
 * When the force policy may delete a pod: at its deadline minus its own grace period (so its
 * shutdown still ends by the deadline), never inside its tier's fair window. A pod already
 * shutting down (its eviction accepted) is only hurried in the last moments before its
 * deadline, if its shutdown would outlast it: it may well be gone by then.
 */
export function forceAtMs(pod: PodInfo, m: DrainMoment): number {
  if (!m.force) return Number.POSITIVE_INFINITY;
  const windowEnd = podWindowEndMs(pod, m);
  if (!Number.isFinite(windowEnd)) return Number.POSITIVE_INFINITY;
  const shuttingDown = isTerminating(pod) || m.accepted.has(pod.uid);
  const leadMs = shuttingDown ? Math.min(gracePeriodMs(pod), hurryLeadMs) : gracePeriodMs(pod);
  return Math.max(windowEnd, podDeadlineMs(pod, m) - leadMs);
}

/**
 * Evictable now: not already leaving, and in the lowest tier present (critical pods such as
 * coredns keep serving until everything else has left, as Karpenter does) or past its force
 * time (nothing is deleted without one eviction attempt first).
 */
export function isEligible(pod: PodInfo, m: DrainMoment): boolean {
  return !isTerminating(pod) && !m.accepted.has(pod.uid) && (m.orderOf(pod) === m.tier || m.nowMs >= forceAtMs(pod, m));
}

/** Eligible, and its retry backoff is over. */
export function isDue(pod: PodInfo, m: DrainMoment): boolean {
  return isEligible(pod, m) && (m.attempts.get(pod.uid)?.nextAtMs ?? 0) <= m.nowMs;
}

/** A pod that is not terminating, or whose deletion would end after the deadline. */
export function outlivesDeadline(pod: PodInfo, deadlineMs: number): boolean {
  return pod.deletionTimestamp === undefined || pod.deletionTimestamp.getTime() > deadlineMs + 1_000;
}

/**
 * A pod the force policy deletes when its time comes: asked to leave at least once, and its
 * shutdown (if begun) would outlast its deadline.
 */
export function isForceCandidate(pod: PodInfo, m: DrainMoment): boolean {
  return m.force && wasAsked(pod, m) && outlivesDeadline(pod, podDeadlineMs(pod, m));
}

/** A terminating pod no kubelet will stop, or one that outlived its grace period by the margin. */
export function cannotLeave(pod: PodInfo, nowMs: number, kubeletGone: boolean): boolean {
  return isTerminating(pod) && (kubeletGone || nowMs >= pod.deletionTimestamp!.getTime() + stuckTerminatingMarginMs);
}

/**
 * The next moment something is due: a retry, a force time (of a pod that will be deleted
 * then, or one held back by its tier), a terminating pod's give-up time, a long-block report,
 * the end of the batch wait, the deadline or the invocation's stop.
 */
export function nextWakeMs(
  pods: { readonly remaining: readonly PodInfo[]; readonly evictable: readonly PodInfo[] },
  m: DrainMoment,
  bounds: {
    readonly lastPodDeadlineMs: number;
    readonly stopMs: number;
    readonly batchUntilMs: number | undefined;
    readonly reportAtMs: (pod: PodInfo) => number | undefined;
  },
): number {
  const { remaining, evictable } = pods;
  return Math.min(
    bounds.lastPodDeadlineMs,
    bounds.stopMs,
    bounds.batchUntilMs ?? Number.POSITIVE_INFINITY,
    // A retry whose time has already come makes the next pass start at once: never skipped.
    ...evictable.filter((p) => isEligible(p, m)).map((p) => m.attempts.get(p.uid)?.nextAtMs ?? m.nowMs),
    ...remaining.filter((p) => isForceCandidate(p, m)).map((p) => forceAtMs(p, m)),
    ...evictable
      .filter((p) => !isTerminating(p) && !m.accepted.has(p.uid) && !isEligible(p, m))
      .map((p) => forceAtMs(p, m)),
    ...remaining.filter(isTerminating).map((p) => p.deletionTimestamp!.getTime() + stuckTerminatingMarginMs),
    ...remaining.map((p) => bounds.reportAtMs(p) ?? Number.POSITIVE_INFINITY),
  );
}
