// Evicts the pods of one cordoned node and waits until they are gone, within a deadline.
// Every pass is re-evaluated from the live pod list, so a retry or a duplicate delivery
// simply picks up where the cluster is.
import { evictionTier, isBatchPod, isDrainable, isTerminating, podKey, toleratesUnschedulable } from './pods.js';
import type { DeadlinePolicy } from './config.js';
import type { BlockReason, Clock, EventRecorder, EvictionResult, Log, NodeInfo, PodGateway, PodInfo, PodWatch } from './ports.js';

export interface DrainDeps {
  readonly pods: Pick<PodGateway, 'evictPod' | 'deletePod' | 'pendingReplacements'>;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly log: Log;
}

export interface DrainOptions {
  readonly node: NodeInfo;
  /** The live pod view of the node, opened by the caller and kept for the load-balancer wait. */
  readonly watch: PodWatch;
  /** Notices pods that come back onto the cordoned node; shared with the load-balancer wait. */
  readonly returns: ReturnedPods;
  /** Epoch milliseconds after which the drain stops waiting. */
  readonly deadlineMs: number;
  /** Epoch milliseconds at which this invocation stops (outcome 'stopped'); default never. */
  readonly stopMs?: number | undefined;
  /**
   * Batch pods (isBatchPod) are not evicted before `untilMs`; while any is on the node the
   * deadline is `deadlineMs` here if later, so they can still be drained after the wait.
   */
  readonly batch?: { readonly untilMs: number; readonly deadlineMs: number } | undefined;
  readonly evictionConcurrency: number;
  /** A budget that refuses a pod this long is reported again, with pending replacements. */
  readonly blockedReportMs?: number | undefined;
  /** An earlier invocation ran this drain and already told its batch wait as an Event. */
  readonly resumed?: boolean;
  /**
   * 'force': a pod still on the node is deleted (PodDisruptionBudgets bypassed) at the
   * deadline minus its own grace period, so its shutdown ends by the deadline (Karpenter does
   * the same); never before `windowEndMs` and never before one eviction attempt. 'leave'
   * (default): nothing is deleted.
   */
  readonly deadlinePolicy?: DeadlinePolicy | undefined;
  /** End of the fair eviction window: no pod is force-deleted before it. Default: no window. */
  readonly windowEndMs?: number | undefined;
  /** The window's length: past the deadline, a pod deleted when the window ends gets at most this long of its grace. */
  readonly windowMs?: number | undefined;
  /**
   * Nothing runs past this (the action's cap less the load-balancer wait). Under 'force' a pod
   * deleted at the end of the window still gets its grace period, up to here.
   */
  readonly hardDeadlineMs?: number | undefined;
  /**
   * The node's kubelet is gone (NotReady or tainted unreachable when the drain started): a pod
   * whose deletion began will never finish it, so evicting it is the end of our part.
   */
  readonly kubeletGone?: boolean | undefined;
}

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
  readonly blocked?: number;
  /** Pods deleted by the force policy in this run (only DELETEs that changed something). */
  readonly forced?: number;
  /** Pods still on the node at the deadline, each with what blocked it. */
  readonly stuck: readonly StuckPod[];
  /** Pods that tolerate the cordon and landed back on the node: reported, not chased. */
  readonly returned: readonly string[];
  /** Terminating pods no longer waited for (past their grace period, or no kubelet to stop them). */
  readonly notWaitedFor?: readonly string[];
}

interface Attempt {
  count: number;
  nextAtMs: number;
  lastBlock: Extract<EvictionResult, { kind: 'blocked' }> | undefined;
  /** When a budget first refused this pod (in this invocation). */
  blockedSinceMs: number | undefined;
  /** The long-block report was written. */
  reportedLong: boolean;
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

/**
 * Pods that tolerate the cordon and were not on the node when the drain began have come
 * back (for example a Deployment tolerating every taint). Evicting them again would only
 * start another round trip, so each is reported once and not waited for.
 */
export class ReturnedPods {
  private readonly initial: ReadonlySet<string>;
  private readonly seen = new Map<string, PodInfo>();

  constructor(
    initialPods: readonly PodInfo[],
    private readonly node: NodeInfo,
    private readonly deps: Pick<DrainDeps, 'events' | 'log'>,
  ) {
    this.initial = new Set(initialPods.map((p) => p.uid));
  }

  has(pod: PodInfo): boolean {
    return this.seen.has(pod.uid);
  }

  names(): string[] {
    return [...this.seen.values()].map(podKey);
  }

  async notice(pods: readonly PodInfo[]): Promise<void> {
    for (const pod of pods) {
      if (this.initial.has(pod.uid) || this.seen.has(pod.uid) || !isDrainable(pod) || !toleratesUnschedulable(pod)) continue;
      this.seen.set(pod.uid, pod);
      this.deps.log.warn('pod tolerating the cordon was scheduled back onto the draining node', { pod: podKey(pod) });
      await this.deps.events.record({
        regarding: { kind: 'Node', name: this.node.name, uid: this.node.uid },
        type: 'Warning',
        reason: 'PodRescheduledOnDrainingNode',
        message: `Pod ${podKey(pod)} tolerates node.kubernetes.io/unschedulable and was scheduled back onto this draining node; it is not waited for and ends with the instance.`,
      });
    }
  }
}

/** Waits until untilMs while still noticing pods that come back (the load-balancer wait). */
export async function waitWatching(watch: PodWatch, returns: ReturnedPods, untilMs: number, clock: Clock): Promise<void> {
  for (let now = clock.now(); now < untilMs; now = clock.now()) {
    await watch.changed(untilMs - now);
    await returns.notice(watch.current());
  }
}

export async function drainNode(options: DrainOptions, deps: DrainDeps): Promise<DrainResult> {
  const { node, evictionConcurrency, watch, returns, batch } = options;
  const stopMs = options.stopMs ?? Number.POSITIVE_INFINITY;
  const force = options.deadlinePolicy === 'force';
  const windowEndMs = options.windowEndMs ?? Number.NEGATIVE_INFINITY;
  const hardDeadlineMs = options.hardDeadlineMs ?? Number.POSITIVE_INFINITY;
  const windowMs = options.windowMs ?? 0;
  const { clock, log } = deps;
  const attempts = new Map<string, Attempt>();
  const accepted = new Set<string>();
  /** Pods the force policy deleted, as they stood: the drain did not get them out by eviction. */
  const forcedPods = new Map<string, StuckPod>();
  const notWaitedFor = new Map<string, string>();
  const announcedBatch = new Set<string>();
  let evicted = 0;
  let blocked = 0;
  let forced = 0;
  let lastProgressLogMs = 0;
  const result = (outcome: DrainResult['outcome'], stuck: readonly StuckPod[]): DrainResult => ({
    outcome,
    evicted,
    blocked,
    forced,
    stuck,
    returned: returns.names(),
    notWaitedFor: [...notWaitedFor.values()],
  });

  for (;;) {
    await returns.notice(watch.current());
    const now = clock.now();
    const onNode = watch.current().filter((p) => isDrainable(p) && !returns.has(p));
    await giveUpOnPodsThatCannotLeave(onNode, now);
    const remaining = onNode.filter((p) => !notWaitedFor.has(p.uid));
    // Pods still here, and those that left only because the force policy deleted them.
    const stuck = () => [
      ...remaining.map((pod) => describeStuck(pod, attempts.get(pod.uid), accepted.has(pod.uid))),
      ...[...forcedPods].filter(([uid]) => !remaining.some((p) => p.uid === uid)).map(([, s]) => s),
    ];
    // Gone, but not all by eviction: budgets were bypassed, which is a timed-out drain.
    if (remaining.length === 0) return forcedPods.size > 0 ? result('timed-out', stuck()) : result('drained', []);
    const batchPods = batch ? remaining.filter(isBatchPod) : [];
    const batchWaiting = batch !== undefined && now < batch.untilMs;
    const baseDeadlineMs = batchPods.length > 0 ? Math.max(options.deadlineMs, batch!.deadlineMs) : options.deadlineMs;
    // Under 'force' a pod is deleted at its deadline minus its grace period, its grace clamped
    // to the deadline (as Karpenter does). Only when the fair window ends near the deadline (a
    // notification that waited in a queue) does a pod's deadline move out, by at most one more
    // window, so the pod deleted when the window ends still gets time to shut down.
    const podDeadlineMs = (pod: PodInfo) =>
      force ? Math.min(hardDeadlineMs, Math.max(baseDeadlineMs, windowEndMs + Math.min(gracePeriodMs(pod), windowMs))) : baseDeadlineMs;
    const deadlineMs = Math.max(baseDeadlineMs, ...remaining.map(podDeadlineMs));
    if (now >= deadlineMs) return result('timed-out', stuck());
    if (now >= stopMs) return result('stopped', remaining.map((pod) => describeStuck(pod, attempts.get(pod.uid), accepted.has(pod.uid))));

    const waiting = batchWaiting ? batchPods.filter((p) => !isTerminating(p)) : [];
    const fresh = waiting.filter((p) => !announcedBatch.has(p.uid));
    if (fresh.length > 0) {
      for (const p of fresh) announcedBatch.add(p.uid);
      await reportBatchWait(node, fresh, batch!.untilMs, deps, options.resumed === true);
    }
    if (now - lastProgressLogMs >= 10_000) {
      lastProgressLogMs = now;
      log.info('drain progress', {
        podsRemaining: remaining.length,
        terminating: remaining.filter(isTerminating).length,
        batchPodsWaitedFor: waiting.length,
        secondsToDeadline: Math.round((deadlineMs - now) / 1000),
      });
    }

    // When the force policy may delete a pod: at the deadline minus its own grace period (so
    // its shutdown still ends by the deadline), never inside the fair eviction window.
    // A pod already shutting down (its eviction accepted) is only hurried in the last moments
    // before its deadline, if its shutdown would outlast it: it may well be gone by then.
    const forceAtMs = (pod: PodInfo) => {
      if (!force) return Number.POSITIVE_INFINITY;
      const leadMs = isTerminating(pod) || accepted.has(pod.uid) ? Math.min(gracePeriodMs(pod), hurryLeadMs) : gracePeriodMs(pod);
      return Math.max(windowEndMs, podDeadlineMs(pod) - leadMs);
    };

    // Only the lowest tier still present is evicted: critical pods such as coredns keep
    // serving until everything else has left, as Karpenter does. Batch pods being waited
    // for do not hold the tiers back. A pod whose force time has come is tried whatever its
    // tier: nothing is deleted without one eviction attempt first.
    const evictable = remaining.filter((p) => !waiting.includes(p));
    const tier = Math.min(...evictable.map(evictionTier));
    const eligible = (p: PodInfo, at: number) =>
      !isTerminating(p) && !accepted.has(p.uid) && (evictionTier(p) === tier || at >= forceAtMs(p));
    // A pod the force policy will delete when its time comes: not yet deleted, tried at least
    // once, and its shutdown (if begun) would outlast its deadline.
    const forceCandidate = (p: PodInfo) =>
      force && !forcedPods.has(p.uid) && ((attempts.get(p.uid)?.count ?? 0) > 0 || accepted.has(p.uid)) && outlivesDeadline(p, podDeadlineMs(p));
    const toForce = remaining.filter((p) => forceCandidate(p) && now >= forceAtMs(p));
    const due = evictable.filter((p) => eligible(p, now) && !toForce.includes(p) && (attempts.get(p.uid)?.nextAtMs ?? 0) <= now);
    // Each answer is handled as it arrives, so the log and Events follow the evictions live.
    await mapWithConcurrency(due, evictionConcurrency, async (pod) => {
      const answer = await deps.pods.evictPod(pod);
      if (answer.kind === 'evicted' || answer.kind === 'gone') {
        accepted.add(pod.uid);
        if (answer.kind === 'evicted') evicted++;
        log.info(answer.kind === 'evicted' ? 'pod evicted' : 'pod already gone', { pod: podKey(pod) });
        return;
      }
      blocked++;
      const previous = attempts.get(pod.uid);
      const count = (previous?.count ?? 0) + 1;
      const budget = answer.reason === 'disruption-budget' || answer.reason === 'multiple-budgets';
      const attempt: Attempt = {
        count,
        nextAtMs: clock.now() + retryDelayMs(count, answer.retryAfterSeconds),
        lastBlock: answer,
        blockedSinceMs: budget ? (previous?.blockedSinceMs ?? clock.now()) : undefined,
        reportedLong: budget && (previous?.reportedLong ?? false),
      };
      attempts.set(pod.uid, attempt);
      if (previous?.lastBlock?.reason !== answer.reason || previous.lastBlock.budgetName !== answer.budgetName) {
        await reportBlocked(node, pod, answer, deps);
      }
    });
    await mapWithConcurrency(toForce, evictionConcurrency, async (pod) => {
      forcedPods.set(pod.uid, describeStuck(pod, attempts.get(pod.uid), accepted.has(pod.uid)));
      const graceSeconds = Math.max(0, Math.min(gracePeriodMs(pod), podDeadlineMs(pod) - clock.now()) / 1000) | 0;
      const outcome = await deps.pods.deletePod(pod, graceSeconds);
      if (outcome !== 'deleted') {
        if (outcome === 'gone') forcedPods.delete(pod.uid);
        return;
      }
      forced++;
      await reportForced(node, pod, graceSeconds, attempts.get(pod.uid)?.lastBlock, deps);
    });

    // A budget still refusing a pod after blockedReportMs is reported when that time comes,
    // not at the next retry (which backoff can put up to maxRetryDelayMs later).
    const reportAtMs = (pod: PodInfo) => {
      const attempt = attempts.get(pod.uid);
      if (attempt?.blockedSinceMs === undefined || attempt.reportedLong || accepted.has(pod.uid)) return undefined;
      return attempt.blockedSinceMs + (options.blockedReportMs ?? 120_000);
    };
    for (const pod of remaining) {
      const at = reportAtMs(pod);
      const attempt = attempts.get(pod.uid);
      if (at === undefined || at > clock.now() || attempt?.lastBlock === undefined) continue;
      attempt.reportedLong = true;
      await reportLongBlock(node, pod, attempt.lastBlock, clock.now() - attempt.blockedSinceMs!, deps);
    }

    // The next moment something is due. A retry whose time has already come (the pass took
    // longer than its backoff) makes the next pass start at once: it is never skipped.
    const later = clock.now();
    const nextAttemptMs = Math.min(
      deadlineMs,
      stopMs,
      batchWaiting ? batch!.untilMs : Number.POSITIVE_INFINITY,
      ...evictable.filter((p) => eligible(p, later)).map((p) => attempts.get(p.uid)?.nextAtMs ?? later),
      // The force time of a pod that will be deleted then, and of one held back by its tier.
      ...remaining.filter(forceCandidate).map(forceAtMs),
      ...evictable.filter((p) => !isTerminating(p) && !accepted.has(p.uid) && !eligible(p, later)).map(forceAtMs),
      ...remaining.filter(isTerminating).map((p) => p.deletionTimestamp!.getTime() + stuckTerminatingMarginMs),
      ...remaining.map((p) => reportAtMs(p) ?? Number.POSITIVE_INFINITY),
    );
    // Wake on any change of the node's pods (a pod gone or finished, a new one bound), on
    // the next retry, at the end of the batch wait, or at the deadline.
    await watch.changed(Math.max(0, nextAttemptMs - clock.now()));
  }

  /**
   * A terminating pod that no kubelet will stop (the node's is gone) or that outlived its
   * grace period by stuckTerminatingMarginMs (a finalizer nobody removes) holds nothing up:
   * it is reported once, with its finalizers, and no longer waited for.
   */
  async function giveUpOnPodsThatCannotLeave(pods: readonly PodInfo[], now: number): Promise<void> {
    const newly = pods.filter(
      (p) => isTerminating(p) && !notWaitedFor.has(p.uid) && (options.kubeletGone === true || now >= p.deletionTimestamp!.getTime() + stuckTerminatingMarginMs),
    );
    if (newly.length === 0) return;
    const describePod = (p: PodInfo) => `${podKey(p)}${p.finalizers && p.finalizers.length > 0 ? ` (finalizers: ${p.finalizers.join(', ')})` : ''}`;
    for (const p of newly) notWaitedFor.set(p.uid, describePod(p));
    const names = newly.map(describePod);
    const why = options.kubeletGone
      ? 'the node is NotReady or unreachable, so no kubelet will stop them'
      : `they are still terminating ${stuckTerminatingMarginMs / 1000} s past the end of their grace period`;
    log.warn('terminating pods are not waited for', { pods: names, reason: why });
    await deps.events.record({
      regarding: { kind: 'Node', name: node.name, uid: node.uid },
      type: 'Warning',
      reason: 'PodsNotWaitedFor',
      message: `Not waiting for ${listed(names)}: ${why}.`,
    });
  }
}

/** A pod that is not terminating, or whose deletion would end after the deadline. */
function outlivesDeadline(pod: PodInfo, deadlineMs: number): boolean {
  return pod.deletionTimestamp === undefined || pod.deletionTimestamp.getTime() > deadlineMs + 1_000;
}

/** At most ten names in an Event, then how many more. */
export function listed(names: readonly string[]): string {
  return names.length <= 10 ? names.join(', ') : `${names.slice(0, 10).join(', ')} and ${names.length - 10} more`;
}

async function reportForced(
  node: NodeInfo,
  pod: PodInfo,
  graceSeconds: number,
  lastBlock: Extract<EvictionResult, { kind: 'blocked' }> | undefined,
  deps: DrainDeps,
): Promise<void> {
  const why = lastBlock ? ` (last eviction answer: ${lastBlock.reason}${lastBlock.budgetName ? `, PodDisruptionBudget ${lastBlock.budgetName}` : ''})` : '';
  deps.log.warn('pod deleted before the drain deadline (force policy)', { pod: podKey(pod), gracePeriodSeconds: graceSeconds, lastBlock: lastBlock?.reason });
  await deps.events.record({
    regarding: { kind: 'Node', name: node.name, uid: node.uid },
    type: 'Warning',
    reason: 'PodForceDeleted',
    message: `Deleted pod ${podKey(pod)} with a ${graceSeconds} s grace period so it is gone by the drain deadline${why} (DEADLINE_POLICY=force).`,
  });
  await deps.events.record({
    regarding: { kind: 'Pod', name: pod.name, namespace: pod.namespace, uid: pod.uid },
    type: 'Warning',
    reason: 'PodForceDeleted',
    message: `Deleted with a ${graceSeconds} s grace period so it is gone by the drain deadline of node ${node.name}${why}; eviction could not succeed in time.`,
  });
}

async function reportBatchWait(node: NodeInfo, pods: readonly PodInfo[], untilMs: number, deps: DrainDeps, resumed: boolean): Promise<void> {
  const names = pods.map(podKey);
  const until = new Date(untilMs).toISOString();
  if (resumed) {
    deps.log.info('still waiting for batch pods to finish', { pods: names, batchWaitUntil: until });
    return;
  }
  deps.log.info('waiting for batch pods to finish before evicting them', { pods: names, batchWaitUntil: until });
  await deps.events.record({
    regarding: { kind: 'Node', name: node.name, uid: node.uid },
    type: 'Normal',
    reason: 'WaitingForBatchPods',
    message: `Not evicting ${names.join(', ')} (Job or do-not-disrupt) until they finish or ${until}; the rest of the node drains meanwhile.`,
  });
}

async function reportBlocked(
  node: NodeInfo,
  pod: PodInfo,
  result: Extract<EvictionResult, { kind: 'blocked' }>,
  deps: DrainDeps,
): Promise<void> {
  const { log, events } = deps;
  const fields = { pod: podKey(pod), reason: result.reason, budget: result.budgetName, detail: result.message };
  if (result.reason === 'multiple-budgets') {
    // Never succeeds on its own: the eviction subresource refuses pods under two PDBs.
    log.error('eviction impossible: more than one PodDisruptionBudget selects the pod', fields);
  } else {
    log.warn('eviction blocked, will retry', fields);
  }
  if (result.reason !== 'disruption-budget' && result.reason !== 'multiple-budgets' && result.reason !== 'admission-denied') return;
  const what =
    result.reason === 'multiple-budgets'
      ? 'more than one PodDisruptionBudget selects it (the eviction API refuses such pods; fix the budgets)'
      : result.reason === 'admission-denied'
        ? `admission denied it (retried until the drain deadline; the rest of the node drains meanwhile): ${result.message}`
        : `PodDisruptionBudget ${result.budgetName ?? '(unnamed)'} allows no disruption now: ${result.message}`;
  await events.record({
    regarding: { kind: 'Pod', name: pod.name, namespace: pod.namespace, uid: pod.uid },
    type: 'Warning',
    reason: 'EvictionBlocked',
    message: `Eviction for draining node ${node.name} is blocked: ${what}`,
  });
  await events.record({
    regarding: { kind: 'Node', name: node.name, uid: node.uid },
    type: 'Warning',
    reason: 'EvictionBlocked',
    message: `Eviction of pod ${podKey(pod)} is blocked: ${what}`,
  });
}

/**
 * A budget that allows no disruption for minutes usually means its replacements cannot
 * start: say which, with the scheduler's reason, so nobody has to go looking.
 */
async function reportLongBlock(
  node: NodeInfo,
  pod: PodInfo,
  result: Extract<EvictionResult, { kind: 'blocked' }>,
  blockedForMs: number,
  deps: DrainDeps,
): Promise<void> {
  let pending: readonly { pod: string; reason: string }[] = [];
  try {
    pending = await deps.pods.pendingReplacements(pod);
  } catch (error) {
    deps.log.debug('could not list pending replacements', { error: String(error) });
  }
  const minutes = Math.round(blockedForMs / 6_000) / 10;
  const budget = result.budgetName ? `PodDisruptionBudget ${result.budgetName}` : 'its PodDisruptionBudgets';
  const replacements = pending.length > 0 ? ` Replacements pending: ${pending.map((p) => `${p.pod} (${p.reason})`).join('; ')}.` : ' No replacement is pending.';
  deps.log.warn('eviction blocked by a budget for minutes', {
    pod: podKey(pod),
    budget: result.budgetName,
    minutes,
    detail: result.message,
    pendingReplacements: pending,
  });
  await deps.events.record({
    regarding: { kind: 'Node', name: node.name, uid: node.uid },
    type: 'Warning',
    reason: 'EvictionBlockedLong',
    message: `Eviction of ${podKey(pod)} has been refused by ${budget} for ${minutes} min: ${(result.message ?? '').replace(/\.$/, '')}.${replacements}`,
  });
}

function describeStuck(pod: PodInfo, attempt: Attempt | undefined, accepted: boolean): StuckPod {
  if (accepted || isTerminating(pod)) {
    return { pod: podKey(pod), reason: 'terminating', budgetName: undefined, message: undefined };
  }
  const block = attempt?.lastBlock;
  return {
    pod: podKey(pod),
    reason: block?.reason ?? 'not-attempted',
    budgetName: block?.budgetName,
    message: block?.message,
  };
}

/** Runs fn over items with at most `limit` calls in flight; results keep the input order. */
export async function mapWithConcurrency<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
