// A repair of ours already decided, carried on each pass. Replace needs nothing here: Auto
// Scaling terminates the instance through our terminate hook, which drains the node, and the
// reconciler takes back a record whose owner is gone (reconcile/owners.ts). Reboot is kept
// simple: the node was cordoned when it was decided; each pass evicts what is still on it
// (the Eviction API, so budgets hold; a refused pod is asked again next pass) and, once the
// node is empty or the drain deadline passed, EC2 reboots the instance. The cordon is taken
// back once every monitored condition is healthy again; a node still bad 30 min after its
// reboot is replaced instead.
import { repairRebooted, repairRecovered, repairReplacing } from '../cluster/events/repair-events.js';
import type { RepairRecord } from '../cluster/model.js';
import { podRule } from '../cluster/rules/drain-rules.js';
import { isEvicted, mustLeave } from '../cluster/rules/drain-plan.js';
import { isDrainable, isTerminating } from '../cluster/rules/pods.js';

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

async function drainThenReboot(deps: RepairDeps, j: Judged, record: RepairRecord, report: RepairReport): Promise<void> {
  const watch = await deps.cluster.watchPodsOnNode(j.node.name);
  const now = deps.clock.now();
  // The drain rules hold here too: Skip pods stay (and hold nothing), Cluster API's WaitCompleted ones are waited for,
  // never evicted.
  const ruled = watch
    .current()
    .filter(isDrainable)
    .map((pod) => ({ pod, rule: podRule(pod, deps.config, now) }))
    .filter(({ rule }) => mustLeave(rule));
  watch.close();
  const pods = ruled.map(({ pod }) => pod);
  if (pods.length > 0 && now < record.decidedAtMs + deps.config.drainTimeoutSeconds * 1000) {
    for (const { pod } of ruled.filter(({ pod, rule }) => !isTerminating(pod) && isEvicted(rule)))
      await deps.cluster.evictPod(pod);
    return;
  }
  // The record first: a pass that dies after the reboot must not reboot again.
  if (
    (await deps.cluster.markRepair(j.node, { ...record, rebootedAtMs: now }, deps.config.deploymentName)) !== 'patched'
  )
    return;
  await deps.repairs.reboot(record.instanceId);
  deps.log.warn('node auto repair: rebooted', {
    node: j.node.name,
    instanceId: record.instanceId,
    podsLeft: pods.length,
  });
  report.rebooted.push(j.node.name);
  await deps.cluster.record(repairRebooted(j.node, record.instanceId, pods.length));
}

async function escalate(deps: RepairDeps, j: Judged, record: RepairRecord, report: RepairReport): Promise<void> {
  const state = (await deps.instances.describe([record.instanceId])).get(record.instanceId);
  if (state?.lifecycleState !== 'InService') return;
  const replaced: RepairRecord = {
    ...record,
    action: 'replace',
    reason: `${record.reason}; still unhealthy after the reboot`,
    rebootedAtMs: undefined,
  };
  if ((await deps.cluster.markRepair(j.node, replaced, deps.config.deploymentName)) !== 'patched') return;
  await deps.repairs.setUnhealthy(record.instanceId);
  report.replacing.push(j.node.name);
  const bad = j.verdict.kind === 'healthy' ? undefined : j.verdict.bad;
  if (bad !== undefined) await deps.cluster.record(repairReplacing(j.node, bad, record.instanceId));
}
