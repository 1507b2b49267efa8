// A repair of ours already decided, carried on each pass. Replace needs nothing here: Auto
// Scaling terminates the instance through our terminate hook, which drains the node, and the
// reconciler takes back a record whose owner is gone (reconcile/owners.ts). Reboot: the node
// was cordoned when it was decided; each pass runs the one drain over it for a few seconds (the
// drain rules, their tiers and budgets hold; a refused pod is asked again next pass) and, once
// the node is empty or the drain deadline passed, EC2 reboots the instance. The cordon is taken
// back once every monitored condition is healthy again; a node still bad 30 min after its
// reboot is replaced instead.
import { repairHeld, repairRebooted, repairRecovered, repairReplacing } from '../cluster/events/repair-events.js';
import { repairSuspendedMessage } from '../cluster/events/log-messages.js';
import { replacementHeld } from './limits.js';
import type { RepairRecord } from '../cluster/model.js';
import { drainNode, type DrainResult } from '../eviction/drain-node.js';
import { ReturnedPods } from '../eviction/returned-pods.js';
import { DeadlinePolicy } from '../shared/deadline-policy.js';

import type { Judged, RepairDeps, RepairReport } from './repair-ports.js';

/** After the reboot, conditions this long healthy count as recovered (the agent reports again). */
export const recoveredAfterMs = 60_000;
/** Still bad this long after the reboot: replaced. */
export const rebootEscalationMs = 30 * 60_000;

export async function followUp(deps: RepairDeps, j: Judged, report: RepairReport): Promise<void> {
  const record = j.node.repair!;
  if (record.action !== 'reboot') return;
  const now = deps.clock.now();
  if (record.rebootedAtMs === undefined) return drainThenReboot(deps, j, record, report);
  const sinceReboot = now - record.rebootedAtMs;
  if (j.verdict.kind === 'healthy' && sinceReboot >= recoveredAfterMs) {
    if ((await deps.cluster.unmarkRepair(j.node, record)) !== 'patched') return;
    report.recovered.push(j.node.name);
    await deps.cluster.record(repairRecovered(j.node, Math.round(sinceReboot / 1000)));
  } else if (j.verdict.kind !== 'healthy' && sinceReboot > rebootEscalationMs) {
    await escalate(deps, j, record, report);
  }
}

/** A reboot's pass drains for at most this long: it evicts what is due and waits a little for pods to go. */
export const rebootPassDrainMs = 5_000;

/**
 * The one drain (eviction/drain-node.ts) over the node, a short run each pass: the drain rules and their tiers hold,
 * budgets hold (a refused pod is asked again), pods waited for until the deadline are never evicted, and nothing is
 * deleted (the reboot stops what is left). Drained, or past the drain deadline: EC2 reboots the instance.
 */
async function drainThenReboot(deps: RepairDeps, j: Judged, record: RepairRecord, report: RepairReport): Promise<void> {
  const drainDeadlineMs = record.decidedAtMs + deps.config.drainTimeoutSeconds * 1000;
  const watch = await deps.cluster.watchPodsOnNode(j.node.name);
  let result: DrainResult;
  try {
    result = await drainNode(
      {
        node: j.node,
        watch,
        returns: new ReturnedPods(watch.current(), j.node, { events: deps.cluster, log: deps.log }),
        rules: deps.config,
        // The batch wait is over when the repair was decided: batch pods are evicted, Cluster API's WaitCompleted
        // ones waited for until the deadline.
        batch: { untilMs: record.decidedAtMs, deadlineMs: drainDeadlineMs },
        drainDeadlineMs,
        latestDrainEndMs: drainDeadlineMs,
        deadlinePolicy: DeadlinePolicy.LEAVE,
        resumed: true,
        window: { startMs: record.decidedAtMs, endMs: record.decidedAtMs },
        stopMs: deps.clock.now() + rebootPassDrainMs,
        evictionConcurrency: deps.config.evictionConcurrency,
        blockedReportMs: deps.config.blockedReportSeconds * 1000,
        kubeletGone: !j.node.ready,
      },
      { pods: deps.cluster, events: deps.cluster, clock: deps.clock, log: deps.log },
    );
  } finally {
    watch.close();
  }
  if (result.outcome === 'stopped') return;
  const now = deps.clock.now();
  // The record first: a pass that dies after the reboot must not reboot again.
  if (
    (await deps.cluster.markRepair(j.node, { ...record, rebootedAtMs: now }, deps.config.deploymentName)) !== 'patched'
  )
    return;
  await deps.repairs.reboot(record.instanceId);
  const podsLeft = result.stuck.length;
  deps.log.warn('node auto repair: rebooted', { node: j.node.name, instanceId: record.instanceId, podsLeft });
  report.rebooted.push(j.node.name);
  await deps.cluster.record(repairRebooted(j.node, record.instanceId, podsLeft));
}

/**
 * Still bad 30 min after the reboot: replaced, decided now (the replacement's owner window runs from here, not from
 * the reboot's decision), unless Auto Scaling would not carry it out (a process suspended on the group).
 */
async function escalate(deps: RepairDeps, j: Judged, record: RepairRecord, report: RepairReport): Promise<void> {
  const state = (await deps.instances.describe([record.instanceId])).get(record.instanceId);
  if (state?.lifecycleState !== 'InService') return;
  const bad = j.verdict.kind === 'healthy' ? undefined : j.verdict.bad;
  const held = replacementHeld(j.member.suspendedProcesses);
  if (held !== undefined) {
    deps.log.warn(repairSuspendedMessage, { node: j.node.name, instanceId: record.instanceId, why: held });
    report.held.push(j.member.group);
    if (bad !== undefined) await deps.cluster.record(repairHeld(j.node, bad, held));
    return;
  }
  const replaced: RepairRecord = {
    ...record,
    action: 'replace',
    reason: `${record.reason}; still unhealthy after the reboot`,
    decidedAtMs: deps.clock.now(),
    rebootedAtMs: undefined,
  };
  if ((await deps.cluster.markRepair(j.node, replaced, deps.config.deploymentName)) !== 'patched') return;
  await deps.repairs.setUnhealthy(record.instanceId);
  report.replacing.push(j.node.name);
  if (bad !== undefined) await deps.cluster.record(repairReplacing(j.node, bad, record.instanceId));
}
