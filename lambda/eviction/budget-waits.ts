// Pods a PodDisruptionBudget refused wait on that budget instead of asking again. In a wave every
// invocation drains its own node against the same budgets; asked on the retry cadence, each budget
// answered most of them 429 (issue 40). A budget that refused a pod twice is watched (one request,
// shared by the node's pods under it) and the pod is asked again only when the budget allows a
// disruption. It is looked at on today's retry cadence, jittered (equal jitter: half the delay plus
// a random half), so waiting invocations do not all ask at the same instant: the first to look
// takes the disruption, and the eviction lowers disruptionsAllowed, which the others see before
// their own look most of the time. Never later than today's retry: a look that finds the budget
// open asks at once, and an unknown budget (not seen yet, deleted, the watch failed) is asked
// as before.
// https://kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-budgets
import type { PodInfo } from '../cluster/model.js';
import type { BudgetWatch, PodGateway } from '../cluster/ports/pod-gateway.js';
import { retryDelayMs, type Attempt } from './rules.js';

interface Wait {
  readonly budget: string;
  /** Refusals by this budget (in this invocation). */
  refusals: number;
  /** Looks that found the budget closed: each stands for a refusal the drain no longer spends. */
  looks: number;
}

export class BudgetWaits {
  private readonly watches = new Map<string, BudgetWatch>();
  private readonly waits = new Map<string, Wait>();

  constructor(
    private readonly pods: Pick<PodGateway, 'watchBudget'>,
    private readonly random: () => number,
  ) {}

  /**
   * The named budget refused this pod; returns how many times in a row. From the second the pod waits on the budget:
   * most refusals in a wave are over at the first retry, which costs no more than opening the watch would.
   */
  refused(pod: PodInfo, budgetName: string): number {
    const budget = `${pod.namespace}/${budgetName}`;
    const previous = this.waits.get(pod.uid);
    const wait = previous?.budget === budget ? previous : { budget, refusals: 0, looks: 0 };
    wait.refusals++;
    this.waits.set(pod.uid, wait);
    if (wait.refusals >= 2 && !this.watches.has(budget))
      this.watches.set(budget, this.pods.watchBudget(pod.namespace, budgetName));
    return wait.refusals;
  }

  /** The pod's eviction was accepted, or it is gone: nothing to wait for. */
  done(pod: PodInfo): void {
    const wait = this.waits.get(pod.uid);
    this.waits.delete(pod.uid);
    // The last pod waiting on it: closed (each resume of an idle watch is a request).
    if (wait === undefined || [...this.waits.values()].some((w) => w.budget === wait.budget)) return;
    this.watches.get(wait.budget)?.close();
    this.watches.delete(wait.budget);
  }

  /**
   * The due pods that may be asked now: those waiting on no budget, and per budget at most as many as it allows
   * disruptions (none while it is unprocessed, which the eviction API refuses too). The others get their next look,
   * with no request spent. A budget not seen (yet, deleted, the watch failed) holds nobody back: today's retry.
   */
  admit(due: readonly PodInfo[], attempts: ReadonlyMap<string, Attempt>, nowMs: number): PodInfo[] {
    const left = new Map<string, number>();
    return due.filter((pod) => {
      const wait = this.waits.get(pod.uid);
      const attempt = attempts.get(pod.uid);
      const view = wait && this.watches.get(wait.budget)?.current();
      if (!wait || !attempt || view === undefined) return true;
      const allowed = left.get(wait.budget) ?? (view.processed ? view.disruptionsAllowed : 0);
      left.set(wait.budget, allowed - 1);
      if (allowed > 0) return true;
      wait.looks++;
      const delayMs = retryDelayMs(attempt.count + wait.looks, undefined);
      attempt.nextAtMs = nowMs + Math.round(delayMs * (0.5 + 0.5 * this.random()));
      return false;
    });
  }

  close(): void {
    for (const watch of this.watches.values()) watch.close();
    this.watches.clear();
  }
}
