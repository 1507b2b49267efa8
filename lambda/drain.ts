// Evicts the pods of one cordoned node and waits until they are gone, within a deadline.
// Every pass is re-evaluated from the live pod list, so a retry or a duplicate delivery
// simply picks up where the cluster is.
import { evictionTier, isDrainable, isTerminating, podKey, toleratesUnschedulable } from './pods.js';
import type { BlockReason, Clock, EventRecorder, EvictionResult, Log, NodeInfo, PodGateway, PodInfo } from './ports.js';

export interface DrainDeps {
  readonly pods: PodGateway;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly log: Log;
}

export interface DrainOptions {
  readonly node: NodeInfo;
  /** Epoch milliseconds after which the drain stops waiting. */
  readonly deadlineMs: number;
  readonly evictionConcurrency: number;
}

export interface StuckPod {
  readonly pod: string;
  /** Why it is still there: the last eviction answer, or 'terminating' / 'not-attempted'. */
  readonly reason: BlockReason | 'terminating' | 'not-attempted';
  readonly budgetName: string | undefined;
  readonly message: string | undefined;
}

export interface DrainResult {
  readonly outcome: 'drained' | 'timed-out';
  /** Evictions the API server accepted in this run. */
  readonly evicted: number;
  /** Pods still on the node at the deadline, each with what blocked it. */
  readonly stuck: readonly StuckPod[];
  /** Pods that tolerate the cordon and landed back on the node: reported, not chased. */
  readonly returned: readonly string[];
}

interface Attempt {
  count: number;
  nextAtMs: number;
  lastBlock: Extract<EvictionResult, { kind: 'blocked' }> | undefined;
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

export async function drainNode(options: DrainOptions, deps: DrainDeps): Promise<DrainResult> {
  const { node, deadlineMs, evictionConcurrency } = options;
  const { pods, events, clock, log } = deps;
  const watch = await pods.watchPodsOnNode(node.name);
  try {
    const attempts = new Map<string, Attempt>();
    const accepted = new Set<string>();
    const initial = new Set(watch.current().map((p) => p.uid));
    const returned = new Map<string, PodInfo>();
    let evicted = 0;
    let lastProgressLogMs = 0;

    for (;;) {
      // A pod that tolerates the cordon and was not here when the drain began has come
      // back (for example a Deployment tolerating every taint). Evicting it again would
      // only start another round trip, so report it once and do not wait for it.
      for (const pod of watch.current()) {
        if (!initial.has(pod.uid) && isDrainable(pod) && toleratesUnschedulable(pod) && !returned.has(pod.uid)) {
          returned.set(pod.uid, pod);
          log.warn('pod tolerating the cordon was scheduled back onto the draining node', { pod: podKey(pod) });
          await events.record({
            regarding: { kind: 'Node', name: node.name, uid: node.uid },
            type: 'Warning',
            reason: 'PodRescheduledOnDrainingNode',
            message: `Pod ${podKey(pod)} tolerates node.kubernetes.io/unschedulable and was scheduled back onto this draining node; it is not waited for and ends with the instance.`,
          });
        }
      }
      const remaining = watch.current().filter((p) => isDrainable(p) && !returned.has(p.uid));
      const now = clock.now();
      if (remaining.length === 0) {
        return { outcome: 'drained', evicted, stuck: [], returned: [...returned.values()].map(podKey) };
      }
      if (now >= deadlineMs) {
        return {
          outcome: 'timed-out',
          evicted,
          stuck: remaining.map((pod) => describeStuck(pod, attempts.get(pod.uid), accepted.has(pod.uid))),
          returned: [...returned.values()].map(podKey),
        };
      }
      if (now - lastProgressLogMs >= 10_000) {
        lastProgressLogMs = now;
        log.info('drain progress', {
          podsRemaining: remaining.length,
          terminating: remaining.filter(isTerminating).length,
          secondsToDeadline: Math.round((deadlineMs - now) / 1000),
        });
      }

      // Only the lowest tier still present is evicted: critical pods such as coredns keep
      // serving until everything else has left, as Karpenter does.
      const tier = Math.min(...remaining.map(evictionTier));
      const due = remaining.filter(
        (p) =>
          evictionTier(p) === tier &&
          !isTerminating(p) &&
          !accepted.has(p.uid) &&
          (attempts.get(p.uid)?.nextAtMs ?? 0) <= now,
      );
      const results = await mapWithConcurrency(due, evictionConcurrency, (pod) => pods.evictPod(pod));
      for (const [i, result] of results.entries()) {
        const pod = due[i]!;
        if (result.kind === 'evicted' || result.kind === 'gone') {
          accepted.add(pod.uid);
          if (result.kind === 'evicted') evicted++;
          log.info(result.kind === 'evicted' ? 'pod evicted' : 'pod already gone', { pod: podKey(pod) });
          continue;
        }
        const previous = attempts.get(pod.uid);
        const count = (previous?.count ?? 0) + 1;
        attempts.set(pod.uid, { count, nextAtMs: clock.now() + retryDelayMs(count, result.retryAfterSeconds), lastBlock: result });
        if (previous?.lastBlock?.reason !== result.reason || previous.lastBlock.budgetName !== result.budgetName) {
          await reportBlocked(node, pod, result, deps);
        }
      }

      const nextAttemptMs = Math.min(
        deadlineMs,
        ...remaining.map((p) => attempts.get(p.uid)?.nextAtMs ?? deadlineMs).filter((t) => t > clock.now()),
      );
      // Wake on any change of the node's pods (a pod gone, a new one bound), on the next
      // retry, or at the deadline.
      await watch.changed(Math.max(0, nextAttemptMs - clock.now()));
    }
  } finally {
    watch.close();
  }
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
