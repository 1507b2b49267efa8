// The `repair` prop: node auto repair with managed node groups' knobs (NodeRepairConfig), as
// the handler's REPAIR variable carries them. Defaults as managed groups': accelerated hardware
// after 10 min, the other conditions and Ready after 30 min, held when more than 5 nodes and
// more than 20 % of a group are unhealthy. docs/repair.md.
// https://docs.aws.amazon.com/eks/latest/userguide/node-repair.html
import type { Duration } from 'aws-cdk-lib';
import { parseRepairSettings, RepairAction, type RepairSettings } from '../lambda/shared/config.js';

export { RepairAction };

/** One rule for a condition and reason the node monitoring agent reports (NodeRepairConfigOverrides). */
export interface RepairOverride {
  /** The condition type, e.g. AcceleratedHardwareReady. */
  readonly condition: string;
  /** The reason the agent reports with it, e.g. NvidiaXID64Error (exact match). */
  readonly reason: string;
  /** What to do once it has lasted `minRepairWait`. */
  readonly action: RepairAction;
  /** How long the condition must last first (whole minutes). */
  readonly minRepairWait: Duration;
}

export interface RepairProps {
  /**
   * How long each condition must stay bad (False or Unknown) before its node is replaced, by
   * condition type; the ones not named keep their default.
   * @default - AcceleratedHardwareReady 10 minutes; Ready, KernelReady, NetworkingReady, ContainerRuntimeReady,
   * StorageReady 30 minutes
   */
  readonly repairAfter?: Record<string, Duration>;
  /**
   * Repair stops in a group with more unhealthy nodes than this (storm control: a Warning
   * Event, the RepairsHeld alarm). Not with `maxUnhealthyPercentage`.
   * @default - more than 20 % of a group of more than 5 nodes
   */
  readonly maxUnhealthyCount?: number;
  /**
   * As `maxUnhealthyCount`, as a percentage of the group's nodes.
   * @default - more than 20 % of a group of more than 5 nodes
   */
  readonly maxUnhealthyPercentage?: number;
  /**
   * At most this many nodes of a group are repaired at once. Not with `maxParallelPercentage`.
   * @default 1
   */
  readonly maxParallelCount?: number;
  /**
   * As `maxParallelCount`, as a percentage of the group's unhealthy nodes (at least one).
   * @default - maxParallelCount 1
   */
  readonly maxParallelPercentage?: number;
  /**
   * Rules for a condition and reason: another wait, or Reboot or NoAction instead of Replace.
   * A Reboot rule grants ec2:RebootInstances on the served groups' instances.
   * @default - none
   */
  readonly overrides?: RepairOverride[];
  /**
   * A label selector for the one node list each pass makes (the served groups' nodes' label):
   * fewer bytes in a large cluster. Only nodes of the served groups are ever judged either way.
   * @default - every node is listed
   */
  readonly nodeSelector?: string;
}

/** The settings REPAIR carries, checked as the handler checks them; a bad prop fails the synth with its reason. */
export function repairSettingsOf(props: RepairProps): RepairSettings {
  const minutes = (d: Duration) => d.toMinutes({ integral: false });
  const raw = JSON.stringify({
    ...(props.repairAfter
      ? { repairAfterMinutes: Object.fromEntries(Object.entries(props.repairAfter).map(([k, d]) => [k, minutes(d)])) }
      : {}),
    maxUnhealthyNodeThresholdCount: props.maxUnhealthyCount,
    maxUnhealthyNodeThresholdPercentage: props.maxUnhealthyPercentage,
    maxParallelNodesRepairedCount: props.maxParallelCount,
    maxParallelNodesRepairedPercentage: props.maxParallelPercentage,
    ...(props.overrides
      ? {
          nodeRepairConfigOverrides: props.overrides.map((o) => ({
            nodeMonitoringCondition: o.condition,
            nodeUnhealthyReason: o.reason,
            minRepairWaitTimeMins: minutes(o.minRepairWait),
            repairAction: o.action,
          })),
        }
      : {}),
    nodeSelector: props.nodeSelector,
  });
  const settings = parseRepairSettings(raw);
  if (settings === 'off' || 'problem' in settings)
    throw new Error(`repair: ${settings === 'off' ? 'off' : settings.problem} (docs/repair.md)`);
  return settings;
}
