// Evicts the pods of one cordoned node and waits until they are gone, within a deadline.
// Every pass is re-evaluated from the live pod list and the named rules (rules.ts), so a
// retry or a duplicate delivery simply picks up where the cluster is.
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { NodeInfo, PodInfo } from '../cluster/model.js';
import type { PodGateway, PodWatch } from '../cluster/ports/pod-gateway.js';
import { isDaemonSetPod, isDrainable, isTerminating, podKey } from '../cluster/rules/pods.js';
import type { Clock } from '../shared/clock.js';
import { mapWithConcurrency } from '../shared/concurrency.js';
import type { Log } from '../shared/log.js';
import {
  announceWaitsAndSkips,
  tellBlocked,
  reportForced,
  reportLongBlocks,
  reportNotWaitedFor,
} from './drain-reports.js';
import { describeStuck, forcedGone, type DrainResult, type StuckPod } from './drain-result.js';
import { BudgetWaits } from './budget-waits.js';
import { passView, type PassOptions, type PassView } from './pass-view.js';
import type { ReturnedPods } from './returned-pods.js';
import * as rules from './rules.js';
import type { Attempt, DrainMoment } from './rules.js';
import type { SurgeGate } from './surge-gate.js';

export interface DrainDeps {
  readonly pods: Pick<PodGateway, 'evictPod' | 'deletePod' | 'pendingReplacements' | 'watchBudgets'>;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly log: Log;
  /** The jitter of looks at a budget a pod waits on (Math.random unless a test fixes it). */
  readonly random?: () => number;
}

/** What the drain fixes for its whole run; the deadlines, the window and the rules are the pass's (pass-view.ts). */
export interface DrainOptions extends PassOptions {
  readonly node: Pick<NodeInfo, 'name' | 'uid'>;
  /** The live pod view of the node, opened by the caller and kept for the load-balancer wait. */
  readonly watch: PodWatch;
  /** Notices pods that come back onto the cordoned node; shared with the load-balancer wait. */
  readonly returns: ReturnedPods;
  /** Epoch milliseconds at which this invocation stops (outcome 'stopped'). */
  readonly stopMs: number;
  readonly evictionConcurrency: number;
  /** A budget that refuses a pod this long is reported again, with pending replacements. */
  readonly blockedReportMs: number;
  /** The node's kubelet is gone: a pod whose deletion began will never finish it. */
  readonly kubeletGone: boolean;
  /** Surge before evict: the pods it holds are not evicted this pass (surge-gate.ts). */
  readonly surge?: SurgeGate | undefined;
}

export type { DrainResult, StuckPod };

export async function drainNode(options: DrainOptions, deps: DrainDeps): Promise<DrainResult> {
  const drain = new NodeDrain(options, deps);
  try {
    return await drain.run();
  } finally {
    drain.close();
  }
}

class NodeDrain {
  private readonly attempts = new Map<string, Attempt>();
  private readonly accepted = new Set<string>();
  /** Pods the force policy deleted, as they stood: the drain did not get them out by eviction. */
  private readonly forcedPods = new Map<string, StuckPod>();
  private readonly notWaitedFor = new Map<string, string>();
  private readonly announcedBatch = new Set<string>();
  private daemonPodsAtStart: ReadonlySet<string> | undefined;
  private readonly tierReachedMs = new Map<number, number>();
  private evicted = 0;
  private blocked = 0;
  private forced = 0;
  private lastProgressLogMs = 0;
  private held: ReadonlySet<string> = new Set();
  /** What tellBlocked told: each (pod, reason, budget) once. */
  private readonly told = new Set<string>();
  private readonly budgets: BudgetWaits;

  constructor(
    private readonly o: DrainOptions,
    private readonly deps: DrainDeps,
  ) {
    this.budgets = new BudgetWaits(deps.pods, deps.random ?? Math.random);
  }

  close(): void {
    this.budgets.close();
  }

  async run(): Promise<DrainResult> {
    for (;;) {
      await this.o.returns.notice(this.o.watch.current());
      await this.giveUpOnPodsThatCannotLeave();
      const view = this.view();
      // Gone, but not all by eviction: budgets were bypassed, which is a timed-out drain.
      if (view.remaining.length === 0) return this.result(this.forcedPods.size > 0 ? 'timed-out' : 'drained', view);
      if (view.moment.nowMs >= view.lastPodDeadlineMs) {
        // Nothing ends without every pod asked once: a late Spot warning's pods still get the
        // seconds of graceful shutdown they have; critical pods a stuck tier held back too.
        await this.askEveryoneOnce(view);
        return this.result('timed-out', this.view());
      }
      if (view.moment.nowMs >= this.o.stopMs) return this.result('stopped', view);
      await this.announceBatchWait(view);
      this.logProgress(view);
      const toForce = view.remaining.filter((p) => this.isForceDue(p, view.moment));
      await this.evictDue(view, toForce);
      await this.force(toForce, view);
      await this.reportLongBlocks(view);
      const next = this.view();
      const notHeld = { ...next, evictable: next.evictable.filter((p) => !this.held.has(p.uid)) };
      const wakeMs = Math.min(
        this.o.surge?.nextCheckMs() ?? Number.POSITIVE_INFINITY,
        rules.nextWakeMs(notHeld, next.moment, {
          lastPodDeadlineMs: next.lastPodDeadlineMs,
          stopMs: this.o.stopMs,
          batchUntilMs: next.waitEndsMs,
          reportAtMs: (pod) => this.reportAtMs(pod),
        }),
      );
      // Wake on any change of the node's pods (a pod gone or finished, a new one bound), on
      // the next retry, at the end of the batch wait, or at the deadline.
      await this.o.watch.changed(Math.max(0, wakeMs - this.deps.clock.now()));
    }
  }

  private view(): PassView {
    return passView(this.o, {
      pods: this.o.watch.current(),
      nowMs: this.deps.clock.now(),
      ignored: (p) => !this.counted(p) || this.o.returns.has(p) || this.notWaitedFor.has(p.uid),
      attempts: this.attempts,
      accepted: this.accepted,
      tierReachedMs: this.tierReachedMs,
    });
  }

  /** Each answer is handled as it arrives, so the log and Events follow the evictions live. */
  private async evictDue(view: PassView, toForce: readonly PodInfo[]): Promise<void> {
    const { ask: due, stillClosed } = this.budgets.admit(
      view.evictable.filter((p) => rules.isDue(p, view.moment) && !toForce.includes(p)),
      this.attempts,
      view.moment.nowMs,
    );
    for (const pod of stillClosed) {
      const result = this.attempts.get(pod.uid)?.lastBlock;
      if (result === undefined) continue;
      await tellBlocked(this.told, { node: this.o.node, pod, result, budgetRefusals: 2 }, this.reportDeps());
    }
    // Terminating pods too: the gate tells when a rollout took a held pod out itself.
    this.held = (await this.o.surge?.held([...due, ...view.evictable.filter(isTerminating)], view.moment)) ?? this.held;
    const free = due.filter((p) => !this.held.has(p.uid));
    await mapWithConcurrency(free, this.o.evictionConcurrency, (pod) => this.evict(pod));
  }

  private async askEveryoneOnce(view: PassView): Promise<void> {
    const never = view.evictable.filter((p) => !isTerminating(p) && !rules.wasAsked(p, view.moment));
    await mapWithConcurrency(never, this.o.evictionConcurrency, (pod) => this.evict(pod));
  }

  private async evict(pod: PodInfo): Promise<void> {
    const answer = await this.deps.pods.evictPod(pod);
    if (answer.kind === 'evicted' || answer.kind === 'gone') {
      this.accepted.add(pod.uid);
      this.budgets.done(pod);
      if (answer.kind === 'evicted') this.evicted++;
      this.deps.log.info(answer.kind === 'evicted' ? 'pod evicted' : 'pod already gone', { pod: podKey(pod) });
      return;
    }
    this.blocked++;
    const previous = this.attempts.get(pod.uid);
    const count = (previous?.count ?? 0) + 1;
    const budget = rules.isBudgetBlock(answer.reason);
    const now = this.deps.clock.now();
    this.attempts.set(pod.uid, {
      count,
      nextAtMs: now + rules.retryDelayMs(count, answer.retryAfterSeconds),
      lastBlock: answer,
      blockedSinceMs: budget ? (previous?.blockedSinceMs ?? now) : undefined,
      reportedLong: budget && (previous?.reportedLong ?? false),
    });
    const budgetRefusals = budget && answer.budgetName ? this.budgets.refused(pod, answer.budgetName) : 0;
    await tellBlocked(this.told, { node: this.o.node, pod, result: answer, budgetRefusals }, this.reportDeps());
  }

  private isForceDue(pod: PodInfo, m: DrainMoment): boolean {
    return rules.isForceCandidate(pod, m) && !this.forcedPods.has(pod.uid) && m.nowMs >= rules.forceAtMs(pod, m);
  }

  /** Deleted at the deadline minus their grace (clamped to the time left), PodDisruptionBudgets bypassed. */
  private async force(toForce: readonly PodInfo[], view: PassView): Promise<void> {
    await mapWithConcurrency(toForce, this.o.evictionConcurrency, async (pod) => {
      const attempt = this.attempts.get(pod.uid);
      this.forcedPods.set(pod.uid, describeStuck(pod, attempt, this.accepted.has(pod.uid)));
      const graceSeconds =
        Math.max(
          0,
          Math.min(rules.gracePeriodMs(pod), rules.podDeadlineMs(pod, view.moment) - this.deps.clock.now()) / 1000,
        ) | 0;
      const outcome = await this.deps.pods.deletePod(pod, graceSeconds);
      if (outcome === 'gone') this.forcedPods.delete(pod.uid);
      if (outcome !== 'deleted') return;
      this.forced++;
      await reportForced(this.o.node, pod, graceSeconds, attempt?.lastBlock, this.reportDeps());
    });
  }

  /** A budget still refusing a pod after blockedReportMs is reported when that time comes. */
  private reportAtMs(pod: PodInfo): number | undefined {
    return rules.longBlockReportAtMs(this.attempts.get(pod.uid), this.accepted.has(pod.uid), this.o.blockedReportMs);
  }

  private async reportLongBlocks(view: PassView): Promise<void> {
    const { attempts, accepted } = this;
    const due = { attempts, accepted, blockedReportMs: this.o.blockedReportMs, nowMs: this.deps.clock.now() };
    await reportLongBlocks(this.o.node, view.remaining, { ...due, budgets: this.budgets }, this.reportDeps());
  }

  /**
   * Drainable, or a DaemonSet pod there when the drain began (EVICT_DAEMONSET_PODS): the one its controller puts back
   * is not chased.
   */
  private counted(p: PodInfo): boolean {
    if (!isDaemonSetPod(p)) return isDrainable(p);
    const atStart = (d: PodInfo) =>
      isDaemonSetPod(d) && !(this.o.resumed && rules.boundSince(d, this.o.window.startMs));
    this.daemonPodsAtStart ??= new Set(
      this.o.watch
        .current()
        .filter(atStart)
        .map((d) => d.uid),
    );
    return this.o.rules.evictDaemonSetPods && this.daemonPodsAtStart.has(p.uid);
  }

  /**
   * Terminating pods no kubelet will stop, or past their grace period by a margin, hold nothing up (evicted DaemonSet
   * pods too).
   */
  private async giveUpOnPodsThatCannotLeave(): Promise<void> {
    const now = this.deps.clock.now();
    const newly = this.o.watch
      .current()
      .filter((p) => this.counted(p) && !this.notWaitedFor.has(p.uid) && rules.cannotLeave(p, now, this.o.kubeletGone));
    if (newly.length === 0) return;
    const names = await reportNotWaitedFor(this.o.node, newly, this.o.kubeletGone, this.reportDeps());
    newly.forEach((p, i) => this.notWaitedFor.set(p.uid, names[i]!));
  }

  private async announceBatchWait(view: PassView): Promise<void> {
    const { node, batch, resumed } = this.o;
    await announceWaitsAndSkips(
      { node, batchUntilMs: batch?.untilMs, resumed, announced: this.announcedBatch, ...view },
      this.reportDeps(),
    );
  }

  private logProgress(view: PassView): void {
    if (view.moment.nowMs - this.lastProgressLogMs < 10_000) return;
    this.lastProgressLogMs = view.moment.nowMs;
    this.deps.log.info('drain progress', {
      podsRemaining: view.remaining.length,
      terminating: view.remaining.filter(isTerminating).length,
      batchPodsWaitedFor: view.waiting.length,
      secondsToDeadline: Math.round((view.lastPodDeadlineMs - view.moment.nowMs) / 1000),
    });
  }

  private reportDeps() {
    return { pods: this.deps.pods, events: this.deps.events, log: this.deps.log };
  }

  private result(outcome: DrainResult['outcome'], view: PassView): DrainResult {
    const describe = (pod: PodInfo) => describeStuck(pod, this.attempts.get(pod.uid), this.accepted.has(pod.uid));
    // Pods still here, and (unless handing on) those that left only because they were forced.
    const stuck =
      outcome === 'drained'
        ? []
        : [
            ...view.remaining.map(describe),
            ...(outcome === 'stopped' ? [] : forcedGone(this.forcedPods, view.remaining)),
          ];
    return {
      outcome,
      evicted: this.evicted,
      blocked: this.blocked,
      forced: this.forced,
      stuck,
      returned: this.o.returns.names(),
      notWaitedFor: [...this.notWaitedFor.values()],
    };
  }
}
