// Every mark of ours on a node, read off what the node carries: what `cleanup` shows with
// --dry-run and takes back (docs/marks.md is the table; the keys are mark-keys.ts's). Taking
// them back is the gateway's unmark (a drain's marks, exactly as its record says) and
// unmarkOutdated (a refresh's), the same writes the reconciler makes.
import type { NodeInfo } from '../model.js';
import {
  deferralAnnotation,
  outOfServiceAnnotation,
  outOfServiceTaintKey,
  drainAnnotation,
  excludeFromLoadBalancersLabel,
  handOffAnnotation,
  migratingTaintKey,
  migrationAnnotation,
  migrationLabel,
  outdatedTaintKey,
  ownerLabel,
  refreshCordonedLabel,
  refreshGroupAnnotation,
  refreshLabel,
} from './mark-keys.js';

/** Every key we write on nodes, for the documentation and the tests that set each one. */
export const nodeMarkKeys = {
  labels: [ownerLabel, excludeFromLoadBalancersLabel, refreshLabel, refreshCordonedLabel, migrationLabel],
  annotations: [
    drainAnnotation,
    handOffAnnotation,
    refreshGroupAnnotation,
    deferralAnnotation,
    outOfServiceAnnotation,
    migrationAnnotation,
  ],
  taints: [outdatedTaintKey, outOfServiceTaintKey, migratingTaintKey],
} as const;

/** The marks of ours on the node, each said as what taking it back does. */
export function marksOnNode(node: NodeInfo): string[] {
  const marks: string[] = [];
  const record = node.drain;
  if (record !== undefined) {
    if (record.set.includes('exclude-from-load-balancers')) {
      marks.push(
        record.priorLabel !== undefined
          ? `label ${excludeFromLoadBalancersLabel}: restored to "${record.priorLabel}"`
          : `label ${excludeFromLoadBalancersLabel}: removed`,
      );
    }
    if (record.set.includes('cordon')) marks.push('cordon (a drain of ours set it): lifted');
    marks.push(`annotation ${drainAnnotation}: removed`);
  }
  if (node.handOffClaim !== undefined) marks.push(`annotation ${handOffAnnotation}: removed`);
  if (node.deferral !== undefined) marks.push(`annotation ${deferralAnnotation}: removed`);
  if (node.outOfService !== undefined)
    marks.push(`taint ${outOfServiceTaintKey}:NoExecute and annotation ${outOfServiceAnnotation}: removed`);
  const refreshId = node.labels[refreshLabel];
  if (refreshId !== undefined) {
    marks.push(`label ${refreshLabel}=${refreshId}: removed`);
    if (node.refreshGroup !== undefined)
      marks.push(`annotation ${refreshGroupAnnotation}=${node.refreshGroup}: removed`);
    if (node.taints.some((t) => t.key === outdatedTaintKey))
      marks.push(`taint ${outdatedTaintKey}:PreferNoSchedule: removed`);
    if (node.labels[refreshCordonedLabel] !== undefined) {
      marks.push(`label ${refreshCordonedLabel}: removed`);
      // Lifted once the drain's marks are gone, unless the drain's record already lifts it.
      if (node.unschedulable && !record?.set.includes('cordon'))
        marks.push('cordon (a refresh of ours set it): lifted');
    }
  }
  const migrationId = node.labels[migrationLabel];
  if (migrationId !== undefined) {
    marks.push(`label ${migrationLabel}=${migrationId}: removed`);
    if (node.migration !== undefined) marks.push(`annotation ${migrationAnnotation}: removed`);
    if (node.taints.some((t) => t.key === migratingTaintKey))
      marks.push(`taint ${migratingTaintKey}:PreferNoSchedule: removed`);
    if (node.migration?.cordoned === true && node.unschedulable && record === undefined)
      marks.push('cordon (a migration of ours set it): lifted');
  }
  if (node.labels[ownerLabel] !== undefined) marks.push(`label ${ownerLabel}=${node.labels[ownerLabel]}: removed`);
  return marks;
}
