// Phase 3, drain: evict every pod that must leave (PodDisruptionBudgets hold) and wait for
// them, within the deadline. The deadline runs from the notification's time as our record
// keeps it, but never shorter than the fair eviction window from when the drain first saw the
// node (a notification that waited in Lambda's queue still gets its evictions), and never past
// what the action's cap allows. A record that says the drain ended resumes in settle.
import { drainEnded, tellConditions } from '../cluster/rules/lifecycle-conditions.js';
import { drained as drainedEvent, drainTimedOut } from '../cluster/events/termination-events.js';
import { drainTimedOutMessage, instanceRetainedMessage } from '../cluster/events/log-messages.js';
import type { DrainRecord, SurgeMark } from '../cluster/model.js';
import { drainNode, type DrainResult } from '../eviction/drain-node.js';
import { ReturnedPods } from '../eviction/returned-pods.js';
import { DeploymentSurge } from '../eviction/surge-gate.js';
import { DeadlinePolicy } from '../shared/deadline-policy.js';
import {
  deadlinePolicyOf,
  secondsSince,
  stopMs,
  type Deadlines,
  type Drained,
  type Marked,
  type Run,
  type Step,
} from './state.js';

/** The drain deadline for a drain that first saw the node at firstSeenMs. */
export function drainDeadlineOf(
  d: Pick<Deadlines, 'drainDeadlineMs' | 'minEvictionWindowMs' | 'latestDrainEndMs'>,
  firstSeenMs: number,
): number {
  return Math.min(d.latestDrainEndMs, Math.max(d.drainDeadlineMs, firstSeenMs + d.minEvictionWindowMs));
}

export async function drain(run: Run, m: Marked): Promise<Step<Drained>> {
  const { record, deadlines, node } = m;
  if (record.drained !== undefined) {
    return {
      ...m,
      outcome: record.drained.outcome,
      drainedAtMs: record.drained.atMs,
      evictedTotal: record.evicted ?? 0,
      result: undefined,
    };
  }
  const pods = await openPods(run, m);
  const drainDeadlineMs = drainDeadlineOf(deadlines, record.startedAtMs);
  const kubeletGone = !node.ready || node.taints.some((taint) => taint.key === 'node.kubernetes.io/unreachable');
  logStart(run, drainDeadlineMs, kubeletGone);
  const surge = openSurge(run, m);
  const result = await drainNode(
    {
      node,
      ...pods,
      drainDeadlineMs,
      stopMs: stopMs(run, deadlines),
      batch: deadlines.batch,
      evictionConcurrency: run.request.settings.evictionConcurrency,
      blockedReportMs: run.request.settings.blockedReportSeconds * 1000,
      resumed: run.request.handOff !== undefined,
      deadlinePolicy: deadlinePolicyOf(run.request),
      window: {
        startMs: record.startedAtMs,
        endMs: Math.min(record.startedAtMs + deadlines.minEvictionWindowMs, drainDeadlineMs),
      },
      latestDrainEndMs: deadlines.latestDrainEndMs,
      kubeletGone,
      rules: run.request.settings,
      surge,
    },
    run.deps,
  );
  const evictedTotal = (record.evicted ?? 0) + result.evicted;
  // The surges travel with the record: a hand-off resumes their waits, never their restarts.
  const surged = surge !== undefined ? { ...m, record: { ...record, surges: surge.marks() } } : m;
  if (result.outcome === 'stopped')
    return {
      stop: {
        handOff: 'drain',
        state: surged,
        record: { ...surged.record, evicted: evictedTotal },
        evictedTotal,
        result,
      },
    };
  return ended(run, surged, result, evictedTotal);
}

function logStart(run: Run, drainDeadlineMs: number, kubeletGone: boolean): void {
  const { clock, log } = run.deps;
  const secondsToDeadline = Math.round((drainDeadlineMs - clock.now()) / 1000);
  if (run.request.handOff !== undefined)
    log.info('drain resumed', { handOff: run.request.handOff.count, secondsToDeadline });
  else log.info('drain started', { secondsToDeadline, kubeletGone });
  if (kubeletGone)
    log.warn(
      'the node is NotReady or unreachable: pods are evicted (budgets hold) but not waited for once their ' +
        'deletion began',
    );
}

async function ended(run: Run, m: Marked, result: DrainResult, evictedTotal: number): Promise<Step<Drained>> {
  const { log, events, clock } = run.deps;
  const { node } = m;
  const since = secondsSince(clock, m.record.notifiedAtMs);
  const policy = deadlinePolicyOf(run.request);
  if (result.outcome === 'drained') {
    log.info('node drained', { podsEvicted: evictedTotal, seconds: since, notWaitedFor: result.notWaitedFor });
    await events.record(drainedEvent(node, since, evictedTotal));
  } else {
    log.error(drainTimedOutMessage, { stuck: result.stuck, policy, forced: result.forced });
    const stuck = result.stuck.map(
      (s) => `${s.pod} (${s.reason}${s.budgetName ? `: PodDisruptionBudget ${s.budgetName}` : ''})`,
    );
    await events.record(drainTimedOut(node, { seconds: since, stuck, policy: policyText(run, result) }));
  }
  const outcome = result.outcome === 'drained' ? 'drained' : 'timed-out';
  const left = result.stuck.map((s) => s.pod);
  const told =
    outcome === 'drained'
      ? `drained in ${since} s, ${evictedTotal} pods evicted`
      : `drain deadline reached with ${left.length} pods left: ${left.slice(0, 10).join(', ')}`;
  await tellConditions(run.deps.nodes, log, node.name, drainEnded(outcome === 'drained', told));
  if (outcome === 'timed-out' && policy === DeadlinePolicy.RETAIN) {
    // The instance stays and its pods keep serving: no load-balancer wait, ABANDON now.
    log.error(instanceRetainedMessage, { stuck: result.stuck });
    return { stop: { complete: { node, outcome: 'retained', verdict: 'ABANDON', evictedTotal, result } } };
  }
  return { ...m, outcome, drainedAtMs: clock.now(), evictedTotal, result };
}

function policyText(run: Run, result: DrainResult): string {
  switch (deadlinePolicyOf(run.request)) {
    case DeadlinePolicy.FORCE:
      return (
        `DEADLINE_POLICY=force: ${result.forced} pod(s) were deleted at the deadline minus their grace period; the ` +
        `rest terminate with the instance.`
      );
    case DeadlinePolicy.RETAIN:
      return (
        `DEADLINE_POLICY=retain: nothing is deleted; the lifecycle action completes with ABANDON and, with the ` +
        `group's instance lifecycle policy set to retain, the instance stays (Terminating:Retained) with this ` +
        `node cordoned while a replacement launches. Fix what held the pods, then: aws autoscaling ` +
        `terminate-instance-in-auto-scaling-group --instance-id ${run.request.instance.instanceId} ` +
        `--no-should-decrement-desired-capacity`
      );
    default:
      return 'The instance terminates with them (DEADLINE_POLICY=leave).';
  }
}

/** Surge before evict, when the deployment turned it on (SURGE_BEFORE_EVICT) and the cluster serves Deployments. */
function openSurge(run: Run, m: Marked): DeploymentSurge | undefined {
  const { surge: settings } = run.request.settings;
  const { surge: api, nodes, events, clock, log } = run.deps;
  if (settings === undefined || api === undefined) return undefined;
  // The drain phase writes the record: the surges, before each restart, over what mark wrote.
  const saveSurges = (surges: readonly SurgeMark[]) =>
    nodes.saveDrainRecord(m.node.name, { ...m.record, surges, updatedAtMs: clock.now() });
  return new DeploymentSurge(
    {
      settings,
      node: m.node,
      surges: m.record.surges ?? [],
      saveSurges,
      owner: run.request.settings.deploymentName,
      drainStartedAtMs: m.record.startedAtMs,
    },
    { api, nodes, events, clock, log },
  );
}

/** The live pod view of the node, opened once and kept for the load-balancer wait. */
export async function openPods(run: Run, m: Marked): Promise<NonNullable<Run['pods']>> {
  if (run.pods === undefined) {
    const watch = await run.deps.pods.watchPodsOnNode(m.node.name);
    run.pods = { watch, returns: new ReturnedPods(watch.current(), m.node, run.deps) };
  }
  return run.pods;
}

/** The record as a hand-off in the load-balancer wait leaves it: the drain is over. */
export function drainedRecord(d: Drained): DrainRecord {
  return { ...d.record, evicted: d.evictedTotal, drained: { atMs: d.drainedAtMs, outcome: d.outcome } };
}
