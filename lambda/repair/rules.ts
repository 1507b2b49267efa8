// Judging one node against the repair rules, from its conditions alone: which monitored
// condition is bad, since when (its lastTransitionTime), what its rule says (an override for
// its condition and reason, else the condition's wait) and whether that wait is over. A node
// that recovers before its rule fires is healthy again: its condition's status is True.
// https://docs.aws.amazon.com/eks/latest/userguide/node-repair.html
import type { NodeCondition, NodeInfo } from '../cluster/model.js';
import type { BadCondition } from '../cluster/events/repair-events.js';
import { RepairAction, type RepairSettings } from '../shared/repair-settings.js';

export type Verdict =
  | { readonly kind: 'healthy' }
  /** Bad, but its wait is not over (or it has no lastTransitionTime to measure it from). */
  | { readonly kind: 'waiting'; readonly bad: BadCondition; readonly dueAtMs: number }
  | { readonly kind: 'due'; readonly bad: BadCondition; readonly action: RepairAction; readonly sinceMs: number };

interface Rule {
  readonly minutes: number;
  readonly action: RepairAction;
}

/** An override for exactly this condition and reason, else the condition's wait (Replace); none: not judged. */
export function ruleFor(settings: RepairSettings, condition: string, reason: string): Rule | undefined {
  const o = settings.overrides.find((x) => x.nodeMonitoringCondition === condition && x.nodeUnhealthyReason === reason);
  if (o !== undefined) return { minutes: o.minRepairWaitTimeMins, action: o.repairAction };
  // Own keys only: a condition type named like what every object inherits (constructor, toString) is monitored
  // only when the settings name it.
  if (!Object.hasOwn(settings.repairAfterMinutes, condition)) return undefined;
  return { minutes: settings.repairAfterMinutes[condition]!, action: RepairAction.REPLACE };
}

/** True is healthy for every monitored condition (the agent's and the kubelet's Ready); False and Unknown are not. */
const isBad = (c: NodeCondition) => c.status !== 'True';

/** A stronger action wins when several conditions are due: a replacement also cures what a reboot would. */
const strength: Record<RepairAction, number> = {
  [RepairAction.REPLACE]: 2,
  [RepairAction.REBOOT]: 1,
  [RepairAction.NO_ACTION]: 0,
};

export function judge(node: Pick<NodeInfo, 'conditions'>, settings: RepairSettings, nowMs: number): Verdict {
  let due: Extract<Verdict, { kind: 'due' }> | undefined;
  let waiting: Extract<Verdict, { kind: 'waiting' }> | undefined;
  for (const c of node.conditions ?? []) {
    if (!isBad(c)) continue;
    const rule = ruleFor(settings, c.type, c.reason);
    if (rule === undefined) continue;
    // No lastTransitionTime: nothing to measure the wait from, so never due on a guess.
    const sinceMs = Number.isNaN(c.sinceMs) ? nowMs : c.sinceMs;
    const bad: BadCondition = {
      condition: c.type,
      status: c.status,
      reason: c.reason,
      minutes: Math.floor((nowMs - sinceMs) / 60_000),
      ruleMinutes: rule.minutes,
    };
    const dueAtMs = sinceMs + rule.minutes * 60_000;
    if (dueAtMs <= nowMs && !Number.isNaN(c.sinceMs)) {
      if (due === undefined || strength[rule.action] > strength[due.action])
        due = { kind: 'due', bad, action: rule.action, sinceMs };
    } else if (waiting === undefined || dueAtMs < waiting.dueAtMs) waiting = { kind: 'waiting', bad, dueAtMs };
  }
  return due ?? waiting ?? { kind: 'healthy' };
}
