// What a drain tells as it goes: eviction answers that block, budgets that block for
// minutes (with the replacements that cannot start), the force policy's deletions, batch
// pods waited for, pods that cannot leave. A log line for each, and the Events people read.
import type { Blocked, NodeInfo, PodInfo } from '../cluster/model.js';
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { BudgetView, PodGateway } from '../cluster/ports/pod-gateway.js';
import type { PodRule, WaitRule } from '../cluster/rules/drain-rules.js';
import { isWaitedFor, waitEndMs, waitsUntilDeadline, type Planned } from '../cluster/rules/drain-plan.js';
import {
  evictionBlocked,
  evictionBlockedLong,
  podForceDeleted,
  podsNotWaitedFor,
  podsSkippedByDrainRule,
  waitingForBatchPods,
} from '../cluster/events/eviction-events.js';
import { podKey } from '../cluster/rules/pods.js';
import { asError, type Log } from '../shared/log.js';
import { longBlockReportAtMs, stuckTerminatingMarginMs, type Attempt } from './rules.js';

export interface ReportDeps {
  readonly pods: Pick<PodGateway, 'pendingReplacements'>;
  readonly events: EventRecorder;
  readonly log: Log;
}

type NodeRef = Pick<NodeInfo, 'name' | 'uid'>;

const recordAll = async (deps: ReportDeps, events: readonly Parameters<EventRecorder['record']>[0][]) => {
  for (const event of events) await deps.events.record(event);
};

/**
 * A refusal, told once per (pod, reason, budget) in the log and as Events, so answers that alternate (the budget, a
 * 504, the budget) are not told again. A budget's Event waits for its second refusal of the pod, or the second look
 * that finds the budget still closed (budget-waits.ts): in a wave most are turn-taking, over at the first retry, and
 * two Warning Events each would be most of what a wave spends beyond its drains (issue 40). A budget that holds on
 * is told half a second later.
 */
export async function tellBlocked(
  told: Set<string>,
  o: { readonly node: NodeRef; readonly pod: PodInfo; readonly result: Blocked; readonly budgetRefusals: number },
  deps: ReportDeps,
): Promise<void> {
  const key = `${o.pod.uid} ${o.result.reason} ${o.result.budgetName ?? ''}`;
  const log = !told.has(`log ${key}`);
  const event = !told.has(`event ${key}`) && (o.result.reason !== 'disruption-budget' || o.budgetRefusals !== 1);
  if (log) told.add(`log ${key}`);
  if (event) told.add(`event ${key}`);
  await reportBlocked(o.node, o.pod, o.result, deps, { log, event });
}

export async function reportBlocked(
  node: NodeRef,
  pod: PodInfo,
  result: Blocked,
  deps: ReportDeps,
  tell = { log: true, event: true },
): Promise<void> {
  const fields = { pod: podKey(pod), reason: result.reason, budget: result.budgetName, detail: result.message };
  if (tell.log && result.reason === 'multiple-budgets') {
    // Never succeeds on its own: the eviction subresource refuses pods under two PDBs.
    deps.log.error('eviction impossible: more than one PodDisruptionBudget selects the pod', fields);
  } else if (tell.log) {
    deps.log.warn('eviction blocked, will retry', fields);
  }
  if (
    !tell.event ||
    (result.reason !== 'disruption-budget' &&
      result.reason !== 'multiple-budgets' &&
      result.reason !== 'admission-denied')
  )
    return;
  const what =
    result.reason === 'multiple-budgets'
      ? 'more than one PodDisruptionBudget selects it (the eviction API refuses such pods; fix the budgets)'
      : result.reason === 'admission-denied'
        ? `admission denied it (retried until the drain deadline; the rest of the node drains meanwhile): ` +
          `${result.message}`
        : `PodDisruptionBudget ${result.budgetName ?? '(unnamed)'} allows no disruption now: ${result.message}`;
  await recordAll(deps, evictionBlocked(node, pod, what));
}

/**
 * A budget that allows no disruption for minutes usually means its replacements cannot
 * start: say which, with the scheduler's reason, so nobody has to go looking.
 */
export async function reportLongBlock(
  node: NodeRef,
  pod: PodInfo,
  result: Blocked,
  blockedForMs: number,
  deps: ReportDeps,
): Promise<void> {
  let pending: readonly { pod: string; reason: string }[] = [];
  try {
    pending = await deps.pods.pendingReplacements(pod);
  } catch (error) {
    deps.log.debug('could not list pending replacements', asError(error));
  }
  const minutes = Math.round(blockedForMs / 6_000) / 10;
  const budget = result.budgetName ? `PodDisruptionBudget ${result.budgetName}` : 'its PodDisruptionBudgets';
  const replacements =
    pending.length > 0
      ? ` Replacements pending: ${pending.map((p) => `${p.pod} (${p.reason})`).join('; ')}.`
      : ' No replacement is pending.';
  deps.log.warn('eviction blocked by a budget for minutes', {
    pod: podKey(pod),
    budget: result.budgetName,
    minutes,
    detail: result.message,
    pendingReplacements: pending,
  });
  await deps.events.record(
    evictionBlockedLong(node, pod, { budget, minutes, detail: result.message ?? '', replacements }),
  );
}

/** Each pod a budget has refused for blockedReportMs is reported once (reportLongBlock), when that time comes. */
export async function reportLongBlocks(
  node: NodeRef,
  remaining: readonly PodInfo[],
  o: {
    readonly attempts: ReadonlyMap<string, Attempt>;
    readonly accepted: ReadonlySet<string>;
    readonly blockedReportMs: number;
    readonly nowMs: number;
    /** The pod's budget as the drain's watch sees it now, if it waits on one. */
    readonly budgets?: { budgetOf(pod: PodInfo): BudgetView | undefined };
  },
  deps: ReportDeps,
): Promise<void> {
  for (const pod of remaining) {
    const attempt = o.attempts.get(pod.uid);
    const at = longBlockReportAtMs(attempt, o.accepted.has(pod.uid), o.blockedReportMs);
    if (at === undefined || at > o.nowMs || attempt?.lastBlock === undefined || attempt.blockedSinceMs === undefined)
      continue;
    attempt.reportedLong = true;
    const block = asNow(attempt.lastBlock, o.budgets?.budgetOf(pod));
    await reportLongBlock(node, pod, block, o.nowMs - attempt.blockedSinceMs, deps);
  }
}

/**
 * The refusal told with the budget's health as its status says now: a pod waiting on the budget watch was last asked
 * minutes ago, when the refusal counted a pod then leaving (found by the cluster suite: "has 2 currently" told of a
 * budget that had 1). The eviction API's own words, from the same status fields.
 */
function asNow(block: Blocked, view: BudgetView | undefined): Blocked {
  if (view?.currentHealthy === undefined || view.desiredHealthy === undefined || block.budgetName === undefined)
    return block;
  const message =
    `The disruption budget ${block.budgetName} needs ${view.desiredHealthy} healthy pods and has ` +
    `${view.currentHealthy} currently.`;
  return { ...block, message };
}

export async function reportForced(
  node: NodeRef,
  pod: PodInfo,
  graceSeconds: number,
  lastBlock: Blocked | undefined,
  deps: ReportDeps,
): Promise<void> {
  const why = lastBlock
    ? ` (last eviction answer: ` +
      `${lastBlock.reason}${lastBlock.budgetName ? `, PodDisruptionBudget ${lastBlock.budgetName}` : ''})`
    : '';
  deps.log.warn('pod deleted before the drain deadline (force policy)', {
    pod: podKey(pod),
    gracePeriodSeconds: graceSeconds,
    lastBlock: lastBlock?.reason,
  });
  await recordAll(deps, podForceDeleted(node, pod, graceSeconds, why));
}

/**
 * Pods waited for (WaitCompleted), named with their rule: until the batch wait ends, or (Cluster API's WaitCompleted)
 * the deadline.
 */
export async function reportBatchWait(
  node: NodeRef,
  pods: readonly Planned<WaitRule>[],
  untilMs: number,
  deps: ReportDeps,
  resumed: boolean,
): Promise<void> {
  const names = pods.map(({ pod, rule }) => `${podKey(pod)} (${rule.source})`);
  const until = pods.every(({ rule }) => waitsUntilDeadline(rule))
    ? `the drain deadline (${new Date(untilMs).toISOString()}; WaitCompleted: never evicted)`
    : new Date(Math.min(...pods.map(({ rule }) => waitEndMs(rule, untilMs)))).toISOString();
  if (resumed) {
    deps.log.info('still waiting for batch pods to finish', { pods: names, batchWaitUntil: until });
    return;
  }
  deps.log.info('waiting for batch pods to finish before evicting them', { pods: names, batchWaitUntil: until });
  await deps.events.record(waitingForBatchPods(node, names, until));
}

/** Pods a user's drain rule leaves running (Skip): told once per drain. */
export async function reportSkipped(
  node: NodeRef,
  pods: readonly { pod: PodInfo; rule: PodRule }[],
  deps: ReportDeps,
  resumed: boolean,
): Promise<void> {
  const names = pods.map(({ pod, rule }) => `${podKey(pod)} (${rule.source})`);
  deps.log.info('pods left running by their drain rule (Skip)', { pods: names });
  if (resumed) return;
  await deps.events.record(podsSkippedByDrainRule(node, names));
}

/**
 * Pods waited for (until the batch wait ends, or the deadline for Cluster API's WaitCompleted) and pods left running:
 * told once each.
 */
export async function announceWaitsAndSkips(
  o: {
    readonly node: NodeRef;
    readonly waiting: readonly PodInfo[];
    readonly skipped: readonly PodInfo[];
    readonly ruleOf: (pod: PodInfo) => PodRule;
    readonly lastPodDeadlineMs: number;
    readonly batchUntilMs: number | undefined;
    readonly resumed: boolean;
    readonly announced: Set<string>;
  },
  deps: ReportDeps,
): Promise<void> {
  const fresh = (pods: readonly PodInfo[]) =>
    pods.filter((p) => !o.announced.has(p.uid)).map((pod) => ({ pod, rule: o.ruleOf(pod) }));
  const waiting = fresh(o.waiting).flatMap(({ pod, rule }) => (isWaitedFor(rule) ? [{ pod, rule }] : []));
  const skipped = fresh(o.skipped);
  for (const { pod } of [...waiting, ...skipped]) o.announced.add(pod.uid);
  const untilEnd = waiting.filter(({ rule }) => waitsUntilDeadline(rule));
  const bounded = waiting.filter(({ rule }) => !waitsUntilDeadline(rule));
  if (bounded.length > 0 && o.batchUntilMs !== undefined)
    await reportBatchWait(o.node, bounded, o.batchUntilMs, deps, o.resumed);
  if (untilEnd.length > 0) await reportBatchWait(o.node, untilEnd, o.lastPodDeadlineMs, deps, o.resumed);
  if (skipped.length > 0) await reportSkipped(o.node, skipped, deps, o.resumed);
}

/** Terminating pods no longer waited for: reported once, with their finalizers. */
export async function reportNotWaitedFor(
  node: NodeRef,
  pods: readonly PodInfo[],
  kubeletGone: boolean,
  deps: ReportDeps,
): Promise<string[]> {
  const names = pods.map(
    (p) => `${podKey(p)}${p.finalizers && p.finalizers.length > 0 ? ` (finalizers: ${p.finalizers.join(', ')})` : ''}`,
  );
  const why = kubeletGone
    ? 'the node is NotReady or unreachable, so no kubelet will stop them'
    : `they are still terminating ${stuckTerminatingMarginMs / 1000} s past the end of their grace period`;
  deps.log.warn('terminating pods are not waited for', { pods: names, reason: why });
  await deps.events.record(podsNotWaitedFor(node, names, why));
  return names;
}
