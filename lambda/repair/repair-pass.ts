// One node auto repair pass, on the reconciler's schedule. One DescribeAutoScalingGroups (per
// 100 groups) says which served group each instance is in and what Auto Scaling is doing
// there; one paged list reads the nodes with their conditions (label-selected with REPAIR's
// nodeSelector), each judged as it is read and kept only if unhealthy or ours. Each
// group is judged on its own, as managed node groups are: storm control first (too many
// unhealthy, or Auto Scaling already replacing instances we did not mark: nothing is
// repaired, a Warning Event and the alarmed log line), then at most the parallel limit of
// due nodes, oldest first, each confirmed again before anything is written (start.ts). The
// decision is our repair record on the node, written conditionally: exactly once across passes.
import { repairDeferred, repairHeld, repairNoAction } from '../cluster/events/repair-events.js';
import { repairHeldMessage } from '../cluster/events/log-messages.js';
import { instanceIdOf } from '../cluster/rules/provider-id.js';
import type { GroupMember } from '../shared/aws-ports.js';
import { leavingStates } from '../shared/lifecycle-states.js';
import { asError } from '../shared/log.js';
import { RepairAction } from '../shared/repair-settings.js';
import { parallelLimit, stormOf } from './limits.js';
import { followUp } from './reboot.js';
import { type Judged, type RepairDeps, type RepairReport, emptyReport } from './repair-ports.js';

import { judge, type Verdict } from './rules.js';
import { startRepair } from './start.js';

/** RepairHeld Events per group and pass, at most. */
export const heldEventsPerGroup = 10;

export async function repairPass(deps: RepairDeps): Promise<RepairReport> {
  const members = await deps.repairs.members([...deps.config.autoScalingGroupNames]);
  const { byGroup, nodes } = await judgeNodes(deps, members);
  const report = emptyReport(nodes);
  for (const [group, judged] of byGroup) {
    try {
      await repairGroup(
        deps,
        judged,
        members.filter((m) => m.group === group),
        report,
      );
    } catch (error) {
      deps.log.warn('could not finish the repair pass of a group; the next pass carries on', {
        group: group.slice(0, 255),
        error: asError(error),
      });
    }
  }
  emitMetrics(deps, report);
  return report;
}

/**
 * Every node judged as it is read; kept only when the pass may act on it (unhealthy, or
 * carrying our record), so the pass holds the bad nodes, not the cluster.
 */
async function judgeNodes(
  deps: RepairDeps,
  members: readonly GroupMember[],
): Promise<{ byGroup: Map<string, Judged[]>; nodes: number }> {
  const memberOf = new Map(members.map((m) => [m.instanceId, m]));
  const now = deps.clock.now();
  const { picked, listed } = await deps.cluster.listNodeHealth(deps.settings.nodeSelector, (node) => {
    const member = memberOf.get(instanceIdOf(node.providerId) ?? '');
    // Only nodes of the groups we serve, as Auto Scaling says: never a name or label's word.
    if (member === undefined || !deps.config.autoScalingGroupNames.has(member.group)) return undefined;
    const verdict = judge(node, deps.settings, now);
    return verdict.kind === 'healthy' && node.repair === undefined ? undefined : { node, member, verdict };
  });
  const byGroup = new Map<string, Judged[]>();
  for (const j of picked) {
    const group = byGroup.get(j.member.group) ?? [];
    group.push(j);
    byGroup.set(j.member.group, group);
  }
  return { byGroup, nodes: listed };
}

async function repairGroup(
  deps: RepairDeps,
  judged: readonly Judged[],
  members: readonly GroupMember[],
  report: RepairReport,
): Promise<void> {
  for (const j of judged) if (j.node.repair !== undefined) await followUp(deps, j, report);
  const ours = new Set(judged.flatMap((j) => (j.node.repair !== undefined ? [j.member.instanceId] : [])));
  const unhealthy = judged.filter((j) => j.verdict.kind !== 'healthy' || j.node.repair !== undefined).length;
  report.unhealthy += unhealthy;
  const due = judged
    .filter(
      (j): j is Judged & { verdict: Extract<Verdict, { kind: 'due' }> } =>
        j.verdict.kind === 'due' && j.node.repair === undefined,
    )
    // Oldest first, by name on a tie: two passes of one schedule (a duplicated event) pick the same node.
    .sort((a, b) => a.verdict.sinceMs - b.verdict.sinceMs || a.node.name.localeCompare(b.node.name));
  if (due.length === 0) return;
  for (const j of due.filter((d) => d.verdict.action === RepairAction.NO_ACTION)) {
    report.noAction.push(j.node.name);
    await deps.cluster.record(repairNoAction(j.node, j.verdict.bad));
  }
  const acting = due.filter((d) => d.verdict.action !== RepairAction.NO_ACTION);
  if (acting.length === 0) return;
  const held = holdReason(members, ours, unhealthy, deps);
  if (held !== undefined) {
    deps.log.warn(repairHeldMessage, {
      group: members[0]?.group.slice(0, 255),
      why: held,
      due: acting.map((j) => j.node.name),
    });
    report.held.push(members[0]?.group ?? '');
    // A storm is many nodes: Events on the first few (longest bad), the log line names them all.
    for (const j of acting.slice(0, heldEventsPerGroup))
      await deps.cluster.record(repairHeld(j.node, j.verdict.bad, held));
    return;
  }
  // Ours still on their way out, and the replacements Auto Scaling is launching.
  const inFlight = ours.size + members.filter((m) => m.lifecycleState.startsWith('Pending')).length;
  const limit = parallelLimit(unhealthy, deps.settings.maxParallel);
  let slots = limit - inFlight;
  for (const j of acting) {
    if (slots <= 0) {
      report.deferred.push(j.node.name);
      await deps.cluster.record(repairDeferred(j.node, j.verdict.bad, { inFlight: limit - slots, limit }));
      continue;
    }
    if ((await startRepair(deps, j, report)) !== 'none') slots--;
  }
}

/** Storm control: too many unhealthy, or Auto Scaling replacing instances of ours it was not asked to. */
function holdReason(
  members: readonly GroupMember[],
  ours: ReadonlySet<string>,
  unhealthy: number,
  deps: RepairDeps,
): string | undefined {
  const storm = stormOf(members.length, unhealthy, deps.settings.maxUnhealthy);
  if (storm !== undefined) return `storm control: ${storm}`;
  const replacing = members.filter(
    (m) =>
      !ours.has(m.instanceId) && (leavingStates.has(m.lifecycleState) || m.healthStatus.toUpperCase() === 'UNHEALTHY'),
  );
  if (replacing.length > 0)
    return (
      `Auto Scaling is already replacing or terminating ${replacing.length} instance(s) of the group ` +
      `(${replacing[0]!.instanceId} ${replacing[0]!.lifecycleState})`
    );
  return undefined;
}

function emitMetrics(deps: RepairDeps, r: RepairReport): void {
  deps.metrics?.emit(
    // One dimension set for every pass: the RepairsHeld alarm watches RepairStorms in it.
    { Transition: 'repair', Outcome: 'judged' },
    {
      NodesUnhealthy: { unit: 'Count', value: r.unhealthy },
      RepairsStarted: { unit: 'Count', value: r.replacing.length + r.rebooting.length },
      RepairsDeferred: { unit: 'Count', value: r.deferred.length },
      RepairStorms: { unit: 'Count', value: r.held.length },
      RepairsNoAction: { unit: 'Count', value: r.noAction.length },
      RepairsRecovered: { unit: 'Count', value: r.recovered.length },
    },
  );
}
