// Starting one repair, confirmed first: Auto Scaling must still have the instance InService in
// a served group (DescribeAutoScalingInstances), and the node read again must still be due
// (one that recovered meanwhile is left alone). Then our record goes on the node, conditional
// on the node as read, so two passes never both decide; only then is the instance marked
// Unhealthy (Replace) or the node cordoned for its reboot (reboot.ts carries it on).
import type { NodeInfo, RepairRecord } from '../cluster/model.js';
import { repairRebooting, repairReplacing } from '../cluster/events/repair-events.js';
import { asError } from '../shared/log.js';
import { RepairAction } from '../shared/repair-settings.js';
import type { Judged, RepairDeps, RepairReport } from './repair-ports.js';
import { judge, type Verdict } from './rules.js';

/** Whether a repair started (it then takes a parallel slot). */
export async function startRepair(deps: RepairDeps, j: Judged, report: RepairReport): Promise<boolean> {
  const due = await confirmDue(deps, j, report);
  if (due === undefined) return false;
  const { node, verdict, now } = due;
  const { instanceId } = j.member;
  const reboot = verdict.action === RepairAction.REBOOT;
  const record: RepairRecord = {
    action: reboot ? 'reboot' : 'replace',
    instanceId,
    condition: verdict.bad.condition,
    reason: verdict.bad.reason,
    decidedAtMs: now,
    cordoned: reboot && !node.unschedulable,
  };
  if ((await deps.cluster.markRepair(node, record, deps.config.deploymentName)) !== 'patched') {
    report.changedMind.push(node.name);
    return false;
  }
  if (reboot) {
    deps.log.warn('node auto repair: rebooting', { node: node.name, instanceId, ...verdict.bad });
    report.rebooting.push(node.name);
    await deps.cluster.record(repairRebooting(node, verdict.bad));
    return true;
  }
  try {
    await deps.repairs.setUnhealthy(instanceId);
  } catch (error) {
    // Nothing happened: the record goes, and a later pass decides again.
    deps.log.warn('could not mark the instance Unhealthy; the repair is decided again next pass', {
      node: node.name,
      instanceId,
      error: asError(error),
    });
    const marked = await deps.cluster.getNodeHealth(node.name);
    if (marked !== undefined) await deps.cluster.unmarkRepair(marked, record);
    return false;
  }
  deps.log.warn('node auto repair: replacing', { node: node.name, instanceId, ...verdict.bad });
  report.replacing.push(node.name);
  await deps.cluster.record(repairReplacing(node, verdict.bad, instanceId));
  return true;
}

type Due = Extract<Verdict, { kind: 'due' }>;

/** Auto Scaling still has the instance in service in a served group, and the node read again is still due. */
async function confirmDue(
  deps: RepairDeps,
  j: Judged,
  report: RepairReport,
): Promise<{ readonly node: NodeInfo; readonly verdict: Due; readonly now: number } | undefined> {
  const { instanceId } = j.member;
  const state = (await deps.instances.describe([instanceId])).get(instanceId);
  if (
    state === undefined ||
    state.lifecycleState !== 'InService' ||
    !deps.config.autoScalingGroupNames.has(state.group)
  ) {
    deps.log.info('not repairing: Auto Scaling no longer has the instance in service in a served group', {
      node: j.node.name,
      instanceId,
      state: state?.lifecycleState,
    });
    report.changedMind.push(j.node.name);
    return undefined;
  }
  const now = deps.clock.now();
  const node = await deps.cluster.getNodeHealth(j.node.name);
  const verdict = node === undefined ? undefined : judge(node, deps.settings, now);
  if (
    node === undefined ||
    node.repair !== undefined ||
    node.uid !== j.node.uid ||
    verdict?.kind !== 'due' ||
    verdict.action === RepairAction.NO_ACTION
  ) {
    deps.log.info('not repairing: the node changed since it was listed (recovered, repaired or gone)', {
      node: j.node.name,
      verdict: verdict?.kind,
    });
    report.changedMind.push(j.node.name);
    return undefined;
  }
  return { node, verdict, now };
}
