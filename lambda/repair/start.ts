// Starting one repair, confirmed first: Auto Scaling must still have the instance InService in
// a served group (DescribeAutoScalingInstances), and the node read again must still be due
// (one that recovered meanwhile is left alone). Then our record goes on the node, conditional
// on the node as read, so two passes never both decide, and a pass that finds another's decision
// there (a duplicated schedule) counts it as a repair in flight; only then is the instance marked
// Unhealthy (Replace) or the node cordoned for its reboot (reboot.ts carries it on). A replacement
// Auto Scaling would not carry out (a process it needs suspended on the group) is not decided.
import type { NodeInfo, RepairRecord } from '../cluster/model.js';
import { repairHeld, repairRebooting, repairReplacing } from '../cluster/events/repair-events.js';
import { repairSuspendedMessage } from '../cluster/events/log-messages.js';
import { replacementHeld } from './limits.js';
import { asError } from '../shared/log.js';
import { RepairAction } from '../shared/repair-settings.js';
import type { Judged, RepairDeps, RepairReport } from './repair-ports.js';
import { judge, type Verdict } from './rules.js';

/**
 * Whether a repair started here ('started'), another pass started it meanwhile ('taken': it is in flight all the
 * same), or none did ('none'). The first two take a parallel slot.
 */
export type Start = 'started' | 'taken' | 'none';

export async function startRepair(deps: RepairDeps, j: Judged, report: RepairReport): Promise<Start> {
  const due = await confirmDue(deps, j, report);
  if (due === 'taken' || due === undefined) return due ?? 'none';
  const { node, verdict, now } = due;
  const { instanceId } = j.member;
  const reboot = verdict.action === RepairAction.REBOOT;
  const held = reboot ? undefined : replacementHeld(j.member.suspendedProcesses);
  if (held !== undefined) {
    deps.log.warn(repairSuspendedMessage, { node: node.name, instanceId, why: held });
    report.held.push(j.member.group);
    await deps.cluster.record(repairHeld(node, verdict.bad, held));
    return 'none';
  }
  const record: RepairRecord = {
    action: reboot ? 'reboot' : 'replace',
    instanceId,
    condition: verdict.bad.condition,
    reason: verdict.bad.reason,
    decidedAtMs: now,
    cordoned: reboot && !node.unschedulable,
  };
  if ((await deps.cluster.markRepair(node, record, deps.config.deploymentName)) !== 'patched') {
    // Conditional on the node as read: the write lost to another pass's decision, or to a change.
    const after = await deps.cluster.getNodeHealth(node.name);
    if (after?.repair !== undefined) return 'taken';
    report.changedMind.push(node.name);
    return 'none';
  }
  if (reboot) {
    deps.log.warn('node auto repair: rebooting', { node: node.name, instanceId, ...verdict.bad });
    report.rebooting.push(node.name);
    await deps.cluster.record(repairRebooting(node, verdict.bad));
    return 'started';
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
    return 'none';
  }
  deps.log.warn('node auto repair: replacing', { node: node.name, instanceId, ...verdict.bad });
  report.replacing.push(node.name);
  await deps.cluster.record(repairReplacing(node, verdict.bad, instanceId));
  return 'started';
}

type Due = Extract<Verdict, { kind: 'due' }>;

/** Auto Scaling still has the instance in service in a served group, and the node read again is still due. */
async function confirmDue(
  deps: RepairDeps,
  j: Judged,
  report: RepairReport,
): Promise<{ readonly node: NodeInfo; readonly verdict: Due; readonly now: number } | 'taken' | undefined> {
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
  // Decided by another pass since the list (a duplicated schedule): in flight, not a second one.
  if (node !== undefined && node.uid === j.node.uid && node.repair !== undefined) return 'taken';
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
