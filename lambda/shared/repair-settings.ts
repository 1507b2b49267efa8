// Node auto repair's settings (REPAIR), with the defaults and the knobs of managed node groups'
// NodeRepairConfig, so a rule written for a managed group reads the same here. Defaults:
// accelerated hardware repaired after 10 min, every other condition (and Ready) after 30 min;
// repair held when a group has more than 5 nodes and more than 20 % of them are unhealthy.
// https://docs.aws.amazon.com/eks/latest/userguide/node-repair.html
// https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-eks-nodegroup-noderepairconfig.html
// No import: the construct shares this file with the handler (scripts/check-structure.ts).

/** What a rule does to a node whose condition stayed bad past its wait. */
export enum RepairAction {
  /** Auto Scaling replaces the instance (SetInstanceHealth Unhealthy); our terminate hook drains the node first. */
  REPLACE = 'Replace',
  /** Cordon, drain, EC2 RebootInstances, uncordon once healthy again. */
  REBOOT = 'Reboot',
  /** Only say so (an Event and a metric). */
  NO_ACTION = 'NoAction',
}

/** The conditions the EKS node monitoring agent publishes, and the kubelet's Ready. */
export const monitoredConditions = [
  'Ready',
  'KernelReady',
  'NetworkingReady',
  'ContainerRuntimeReady',
  'StorageReady',
  'AcceleratedHardwareReady',
] as const;

/** Managed groups' waits, in minutes. */
export const defaultRepairAfterMinutes: Readonly<Record<string, number>> = {
  Ready: 30,
  KernelReady: 30,
  NetworkingReady: 30,
  ContainerRuntimeReady: 30,
  StorageReady: 30,
  AcceleratedHardwareReady: 10,
};

/** A count, or a percentage (of the group's nodes for the threshold, of its unhealthy nodes for the parallel limit). */
export type Limit = { readonly count: number } | { readonly percentage: number };

export interface RepairOverride {
  readonly nodeMonitoringCondition: string;
  readonly nodeUnhealthyReason: string;
  readonly minRepairWaitTimeMins: number;
  readonly repairAction: RepairAction;
}

export interface RepairSettings {
  /** Per condition; a condition not named here is not judged. */
  readonly repairAfterMinutes: Readonly<Record<string, number>>;
  /** Unset: managed groups' rule (more than 5 nodes and more than 20 % unhealthy). */
  readonly maxUnhealthy: Limit | undefined;
  readonly maxParallel: Limit;
  readonly overrides: readonly RepairOverride[];
  /** A label selector narrowing the one node list (the served groups' nodes label); unset: every node. */
  readonly nodeSelector: string | undefined;
}

export const defaultRepairSettings: RepairSettings = {
  repairAfterMinutes: defaultRepairAfterMinutes,
  maxUnhealthy: undefined,
  maxParallel: { count: 1 },
  overrides: [],
  nodeSelector: undefined,
};

const knownKeys = new Set([
  'repairAfterMinutes',
  'maxUnhealthyNodeThresholdCount',
  'maxUnhealthyNodeThresholdPercentage',
  'maxParallelNodesRepairedCount',
  'maxParallelNodesRepairedPercentage',
  'nodeRepairConfigOverrides',
  'nodeSelector',
]);

const whole = (v: unknown, min: number, max: number): v is number =>
  Number.isInteger(v) && (v as number) >= min && (v as number) <= max;

/** Why a REPAIR value is refused, or the settings; never throws. */
export function parseRepairSettings(raw: string): RepairSettings | 'off' | { readonly problem: string } {
  const text = raw.trim();
  if (text === 'off' || text === 'false') return 'off';
  if (text === 'on' || text === 'true') return defaultRepairSettings;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { problem: 'neither on, off nor a JSON object' };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { problem: 'not a JSON object' };
  const o = v as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !knownKeys.has(k));
  if (unknown.length > 0) return { problem: `unknown key(s) ${unknown.join(', ')}` };
  const after = parseAfter(o['repairAfterMinutes']);
  if (typeof after === 'string') return { problem: after };
  const maxUnhealthy = limitOf(o, 'maxUnhealthyNodeThresholdCount', 'maxUnhealthyNodeThresholdPercentage');
  const maxParallel = limitOf(o, 'maxParallelNodesRepairedCount', 'maxParallelNodesRepairedPercentage');
  if (typeof maxUnhealthy === 'string') return { problem: maxUnhealthy };
  if (typeof maxParallel === 'string') return { problem: maxParallel };
  const overrides = parseOverrides(o['nodeRepairConfigOverrides']);
  if (typeof overrides === 'string') return { problem: overrides };
  const selector = o['nodeSelector'];
  if (selector !== undefined && (typeof selector !== 'string' || selector.trim() === ''))
    return { problem: 'nodeSelector must be a non-empty label selector' };
  return {
    repairAfterMinutes: after,
    maxUnhealthy,
    maxParallel: maxParallel ?? defaultRepairSettings.maxParallel,
    overrides,
    nodeSelector: selector?.trim(),
  };
}

function parseAfter(v: unknown): Readonly<Record<string, number>> | string {
  if (v === undefined) return defaultRepairAfterMinutes;
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return 'repairAfterMinutes must map conditions to minutes';
  const merged: Record<string, number> = { ...defaultRepairAfterMinutes };
  for (const [condition, minutes] of Object.entries(v)) {
    if (!/^[A-Za-z][A-Za-z0-9]{0,62}$/.test(condition))
      return `repairAfterMinutes: ${JSON.stringify(condition)} is not a condition type`;
    if (!whole(minutes, 1, 10_080)) return `repairAfterMinutes.${condition} must be whole minutes from 1 to 10080`;
    merged[condition] = minutes;
  }
  return merged;
}

function limitOf(o: Record<string, unknown>, countKey: string, percentageKey: string): Limit | undefined | string {
  const count = o[countKey];
  const percentage = o[percentageKey];
  if (count !== undefined && percentage !== undefined) return `${countKey} and ${percentageKey} exclude each other`;
  if (count !== undefined) return whole(count, 1, 10_000) ? { count } : `${countKey} must be a whole number from 1`;
  if (percentage !== undefined)
    return whole(percentage, 1, 100) ? { percentage } : `${percentageKey} must be a whole number from 1 to 100`;
  return undefined;
}

function parseOverrides(v: unknown): readonly RepairOverride[] | string {
  if (v === undefined) return [];
  if (!Array.isArray(v)) return 'nodeRepairConfigOverrides must be a list';
  const actions = Object.values(RepairAction) as string[];
  const out: RepairOverride[] = [];
  for (const [i, item] of v.entries()) {
    const x = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
    const at = `nodeRepairConfigOverrides[${i}]`;
    // As in NodeRepairConfigOverrides, every field is required.
    if (typeof x['nodeMonitoringCondition'] !== 'string' || typeof x['nodeUnhealthyReason'] !== 'string')
      return `${at} needs nodeMonitoringCondition and nodeUnhealthyReason`;
    if (!whole(x['minRepairWaitTimeMins'], 0, 10_080))
      return `${at}.minRepairWaitTimeMins must be whole minutes from 0 to 10080`;
    if (typeof x['repairAction'] !== 'string' || !actions.includes(x['repairAction']))
      return `${at}.repairAction must be one of ${actions.join(', ')}`;
    out.push({
      nodeMonitoringCondition: x['nodeMonitoringCondition'],
      nodeUnhealthyReason: x['nodeUnhealthyReason'],
      minRepairWaitTimeMins: x['minRepairWaitTimeMins'],
      repairAction: x['repairAction'] as RepairAction,
    });
  }
  return out;
}

/** The REPAIR value that parses back to these settings. */
export function formatRepairSettings(s: RepairSettings): string {
  const limit = (l: Limit | undefined, countKey: string, percentageKey: string) =>
    l === undefined ? {} : 'count' in l ? { [countKey]: l.count } : { [percentageKey]: l.percentage };
  const after = Object.fromEntries(
    Object.entries(s.repairAfterMinutes).filter(([k, m]) => defaultRepairAfterMinutes[k] !== m),
  );
  return JSON.stringify({
    ...(Object.keys(after).length > 0 ? { repairAfterMinutes: after } : {}),
    ...limit(s.maxUnhealthy, 'maxUnhealthyNodeThresholdCount', 'maxUnhealthyNodeThresholdPercentage'),
    ...limit(s.maxParallel, 'maxParallelNodesRepairedCount', 'maxParallelNodesRepairedPercentage'),
    ...(s.overrides.length > 0 ? { nodeRepairConfigOverrides: s.overrides } : {}),
    ...(s.nodeSelector !== undefined ? { nodeSelector: s.nodeSelector } : {}),
  });
}

/** Whether any rule reboots: only then is ec2:RebootInstances granted. */
export const rebootsAny = (s: RepairSettings): boolean =>
  s.overrides.some((o) => o.repairAction === RepairAction.REBOOT);
