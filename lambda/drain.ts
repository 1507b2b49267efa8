// Evicts the pods of one cordoned node and waits until they are gone, within a deadline.
// Every pass is re-evaluated from the live pod list, so a retry or a duplicate delivery
// simply picks up where the cluster is.
import { evictionTier, isBatchPod, isDrainable, isTerminating, podKey, toleratesUnschedulable } from './pods.js';
import type { BlockReason, Clock, EventRecorder, EvictionResult, Log, NodeInfo, PodGateway, PodInfo, PodWatch } from './ports.js';

export interface DrainDeps {
  readonly pods: Pick<PodGateway, 'evictPod' | 'pendingReplacements'>;
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
  /** Pods still on the node at the deadline, each with what blocked it. */
  readonly stuck: readonly StuckPod[];
  /** Pods that tolerate the cordon and landed back on the node: reported, not chased. */
  readonly returned: readonly string[];
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
 * Delay before evicting a blocked pod again: exponential from 500 ms to 10 s (Karpenter
 * uses 100 ms to 10 s, kubectl a flat 5 s), never sooner than the server's Retry-After.
 */
export function retryDelayMs(attempt: number, retryAfterSeconds: number | undefined): number {
  const backoff = Math.min(maxRetryDelayMs, 250 * 2 ** Math.max(1, attempt));
  return Math.max(backoff, (retryAfterSeconds ?? 0) * 1000);
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
  const { clock, log } = deps;
  const attempts = new Map<string, Attempt>();
  const accepted = new Set<string>();
  const announcedBatch = new Set<string>();
  let evicted = 0;
  let blocked = 0;
  let lastProgressLogMs = 0;

  for (;;) {
    await returns.notice(watch.current());
    const remaining = watch.current().filter((p) => isDrainable(p) && !returns.has(p));
    const now = clock.now();
    const stuck = () => remaining.map((pod) => describeStuck(pod, attempts.get(pod.uid), accepted.has(pod.uid)));
    if (remaining.length === 0) {
      return { outcome: 'drained', evicted, blocked, stuck: [], returned: returns.names() };
    }
    const batchPods = batch ? remaining.filter(isBatchPod) : [];
    const batchWaiting = batch !== undefined && now < batch.untilMs;
    const deadlineMs = batchPods.length > 0 ? Math.max(options.deadlineMs, batch!.deadlineMs) : options.deadlineMs;
    if (now >= deadlineMs) return { outcome: 'timed-out', evicted, blocked, stuck: stuck(), returned: returns.names() };
    if (now >= stopMs) return { outcome: 'stopped', evicted, blocked, stuck: stuck(), returned: returns.names() };

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

    // Only the lowest tier still present is evicted: critical pods such as coredns keep
    // serving until everything else has left, as Karpenter does. Batch pods being waited
    // for do not hold the tiers back.
    const evictable = remaining.filter((p) => !waiting.includes(p));
    const tier = Math.min(...evictable.map(evictionTier));
    const due = evictable.filter(
      (p) => evictionTier(p) === tier && !isTerminating(p) && !accepted.has(p.uid) && (attempts.get(p.uid)?.nextAtMs ?? 0) <= now,
    );
    // Each answer is handled as it arrives, so the log and Events follow the evictions live.
    await mapWithConcurrency(due, evictionConcurrency, async (pod) => {
      const result = await deps.pods.evictPod(pod);
      if (result.kind === 'evicted' || result.kind === 'gone') {
        accepted.add(pod.uid);
        if (result.kind === 'evicted') evicted++;
        log.info(result.kind === 'evicted' ? 'pod evicted' : 'pod already gone', { pod: podKey(pod) });
        return;
      }
      blocked++;
      const previous = attempts.get(pod.uid);
      const count = (previous?.count ?? 0) + 1;
      const budget = result.reason === 'disruption-budget' || result.reason === 'multiple-budgets';
      const attempt: Attempt = {
        count,
        nextAtMs: clock.now() + retryDelayMs(count, result.retryAfterSeconds),
        lastBlock: result,
        blockedSinceMs: budget ? (previous?.blockedSinceMs ?? clock.now()) : undefined,
        reportedLong: budget && (previous?.reportedLong ?? false),
      };
      attempts.set(pod.uid, attempt);
      if (previous?.lastBlock?.reason !== result.reason || previous.lastBlock.budgetName !== result.budgetName) {
        await reportBlocked(node, pod, result, deps);
      }
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

    const nextAttemptMs = Math.min(
      deadlineMs,
      stopMs,
      batchWaiting ? batch!.untilMs : Number.POSITIVE_INFINITY,
      ...remaining.map((p) => attempts.get(p.uid)?.nextAtMs ?? deadlineMs).filter((t) => t > clock.now()),
      ...remaining.map((p) => reportAtMs(p) ?? Number.POSITIVE_INFINITY),
    );
    // Wake on any change of the node's pods (a pod gone or finished, a new one bound), on
    // the next retry, at the end of the batch wait, or at the deadline.
    await watch.changed(Math.max(0, nextAttemptMs - clock.now()));
  }
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
  if (result.reason !== 'disruption-budget' && result.reason !== 'multiple-budgets') return;
  const what =
    result.reason === 'multiple-budgets'
      ? 'more than one PodDisruptionBudget selects it (the eviction API refuses such pods; fix the budgets)'
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
