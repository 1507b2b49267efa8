// Pods a PodDisruptionBudget refused wait on that budget instead of asking again. In a wave every
// invocation drains its own node against the same budgets; asked on the retry cadence, each budget
// answered most of them 429 (issue 40). At the first refusal the drain watches the budgets of the
// pod's namespace (one request for all of them: a node's pods are mostly under different budgets
// of one namespace), and a refused pod is asked again only when its budget allows a disruption.
// It is looked at on today's retry cadence, jittered (equal jitter: half the delay plus a random
// half), so waiting invocations do not all ask at the same instant: the first to look takes the
// disruption, and the eviction lowers disruptionsAllowed, which the others see before their own
// look most of the time. Never later than today's retry: a look that finds the budget open asks
// at once, and an unknown budget (not seen yet, deleted, the watch failed) is asked as before.
// https://kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-budgets
import type { PodInfo } from '../cluster/model.js';
import type { BudgetView, BudgetWatch, PodGateway } from '../cluster/ports/pod-gateway.js';
import { retryDelayMs, type Attempt } from './rules.js';

interface Wait {
  readonly namespace: string;
  readonly budget: string;
  /** Refusals by this budget (in this invocation). */
  refusals: number;
  /** Looks that found the budget closed: each stands for a refusal the drain no longer spends. */
  looks: number;
}

/** What admit decided: the pods to ask now, and those whose budget a second look found still closed (to be told). */
export interface Admitted {
  readonly ask: PodInfo[];
  readonly stillClosed: PodInfo[];
}

export class BudgetWaits {
  /** By namespace. */
  private readonly watches = new Map<string, BudgetWatch>();
  private readonly waits = new Map<string, Wait>();

  constructor(
    private readonly pods: Pick<PodGateway, 'watchBudgets'>,
    private readonly random: () => number,
  ) {}

  /** The named budget refused this pod; returns how many times in a row. From now on the pod waits on the budget. */
  refused(pod: PodInfo, budgetName: string): number {
    const previous = this.waits.get(pod.uid);
    const same = previous?.namespace === pod.namespace && previous.budget === budgetName;
    const wait = same ? previous : { namespace: pod.namespace, budget: budgetName, refusals: 0, looks: 0 };
    wait.refusals++;
    this.waits.set(pod.uid, wait);
    if (!this.watches.has(pod.namespace)) this.watches.set(pod.namespace, this.pods.watchBudgets(pod.namespace));
    return wait.refusals;
  }

  /** The pod's eviction was accepted, or it is gone: nothing to wait for. */
  done(pod: PodInfo): void {
    const wait = this.waits.get(pod.uid);
    this.waits.delete(pod.uid);
    // The last pod of its namespace waiting: closed (each resume of an idle watch is a request).
    if (wait === undefined || [...this.waits.values()].some((w) => w.namespace === wait.namespace)) return;
    this.watches.get(wait.namespace)?.close();
    this.watches.delete(wait.namespace);
  }

  /**
   * The due pods that may be asked now: those waiting on no budget, and per budget at most as many as it allows
   * disruptions (none while it is unprocessed, which the eviction API refuses too). The others get their next look,
   * with no request spent. A budget not seen (yet, deleted, the watch failed) holds nobody back: today's retry.
   */
  admit(due: readonly PodInfo[], attempts: ReadonlyMap<string, Attempt>, nowMs: number): Admitted {
    const left = new Map<string, number>();
    const stillClosed: PodInfo[] = [];
    const ask = due.filter((pod) => {
      const wait = this.waits.get(pod.uid);
      const attempt = attempts.get(pod.uid);
      const view = wait && this.watches.get(wait.namespace)?.current(wait.budget);
      if (!wait || !attempt || view === undefined) return true;
      const key = `${wait.namespace}/${wait.budget}`;
      const allowed = left.get(key) ?? (view.processed ? view.disruptionsAllowed : 0);
      left.set(key, allowed - 1);
      if (allowed > 0) return true;
      wait.looks++;
      // Told as a second refusal would have been (drain-reports.ts: the first one is not told), at the second look
      // (a second or so after the refusal): in a wave most budgets are turn-taking, open again by then.
      if (wait.looks === 2) stillClosed.push(pod);
      const delayMs = retryDelayMs(attempt.count + wait.looks, undefined);
      attempt.nextAtMs = nowMs + Math.round(delayMs * (0.5 + 0.5 * this.random()));
      return false;
    });
    return { ask, stillClosed };
  }

  /** The pod's budget as the watch sees it now (undefined: the pod waits on none, or it is not seen). */
  budgetOf(pod: PodInfo): BudgetView | undefined {
    const wait = this.waits.get(pod.uid);
    return wait && this.watches.get(wait.namespace)?.current(wait.budget);
  }

  close(): void {
    for (const watch of this.watches.values()) watch.close();
    this.watches.clear();
  }
}
