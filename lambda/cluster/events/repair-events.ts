// The Events of node auto repair (repair/).
import { type NodeRef, onNode } from './event-shapes.js';

// --- repair (repair/) ----------------------------------------------------------------------

/** A condition as Events name it: `NetworkingReady False (IPAMDNotReady) for 31 min`. */
export interface BadCondition {
  readonly condition: string;
  readonly status: string;
  readonly reason: string;
  readonly minutes: number;
  readonly ruleMinutes: number;
}

const badText = (b: BadCondition) =>
  `${b.condition} ${b.status}${b.reason ? ` (${b.reason})` : ''} for ${b.minutes} min (rule: ${b.ruleMinutes} min)`;

export const repairReplacing = (node: NodeRef, bad: BadCondition, instanceId: string) =>
  onNode(
    node,
    'Warning',
    'RepairReplacing',
    `${badText(bad)}: instance ${instanceId} marked Unhealthy in Auto Scaling, which replaces it; the terminate ` +
      `hook drains this node first.`,
  );

export const repairRebooting = (node: NodeRef, bad: BadCondition) =>
  onNode(
    node,
    'Warning',
    'RepairRebooting',
    `${badText(bad)}: cordoned and draining; the instance is rebooted once its pods are gone or the drain ` +
      `deadline passes.`,
  );

export const repairRebooted = (node: NodeRef, instanceId: string, left: number) =>
  onNode(
    node,
    'Normal',
    'RepairRebooted',
    `Instance ${instanceId} rebooted (${left} pod(s) were still on the node); the cordon is taken back once the ` +
      `node is healthy again.`,
  );

export const repairRecovered = (node: NodeRef, seconds: number) =>
  onNode(
    node,
    'Normal',
    'RepairRecovered',
    `Healthy again ${seconds} s after the reboot: the cordon of the repair is taken back.`,
  );

export const repairDeferred = (node: NodeRef, bad: BadCondition, o: { inFlight: number; limit: number }) =>
  onNode(
    node,
    'Normal',
    'RepairDeferred',
    `${badText(bad)}: waiting, ${o.inFlight} repair(s) in flight in its group and at most ${o.limit} in parallel.`,
  );

export const repairHeld = (node: NodeRef, bad: BadCondition, why: string) =>
  onNode(node, 'Warning', 'RepairHeld', `${badText(bad)}: not repaired, ${why}.`);

export const repairNoAction = (node: NodeRef, bad: BadCondition) =>
  onNode(node, 'Normal', 'RepairNoAction', `${badText(bad)}: its rule's repair action is NoAction.`);

export const repairMarksRemoved = (node: NodeRef, why: string, uncordoned: boolean) =>
  onNode(
    node,
    'Normal',
    'RepairMarksRemoved',
    `The reconciler took back our repair record${uncordoned ? ' and its cordon' : ''}: ${why}.`,
  );
