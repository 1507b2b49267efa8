// What else invokes the drainer than the hooks: Spot warnings, instance refreshes, the
// reconciler's schedule (and node auto repair on it), and Auto Scaling asking it which instance a
// scale-in should take (the custom termination policy).
import { Duration } from 'aws-cdk-lib';
import { configVariables as v, parseRepairSettings, type RepairSettings } from '../../lambda/shared/config.js';
import type { RepairProps } from '../repair-props.js';
import { reconcileIntervalChoices } from '../release-names.js';
import { flag, secondsOf, text, type Kind } from './kinds.js';
import { option, type OptionGroup } from './option.js';

/** Whole minutes from 1 to 1440 as the construct takes them; the template offers the intervals its mapping has. */
const reconcileInterval: Kind<number> = {
  parameter: { Type: 'Number', Default: 5, AllowedValues: [...reconcileIntervalChoices] },
  accepts: `a whole number of minutes from 1 to 1440 (the template: ${reconcileIntervalChoices.join(', ')})`,
  parse: (t) => (/^\d+$/.test(t) && Number(t) >= 1 && Number(t) <= 1440 ? Number(t) : undefined),
};

/** REPAIR's settings (as managed node groups write them) as the construct's repair prop. */
function repairPropsOf(s: RepairSettings): RepairProps {
  const minutes = (m: number): Duration => Duration.minutes(m);
  const limit = (l: RepairSettings['maxUnhealthy'], count: string, percentage: string) =>
    l === undefined ? {} : 'count' in l ? { [count]: l.count } : { [percentage]: l.percentage };
  return {
    repairAfter: Object.fromEntries(Object.entries(s.repairAfterMinutes).map(([c, m]) => [c, minutes(m)])),
    ...limit(s.maxUnhealthy, 'maxUnhealthyCount', 'maxUnhealthyPercentage'),
    ...limit(s.maxParallel, 'maxParallelCount', 'maxParallelPercentage'),
    overrides: s.overrides.map((o) => ({
      condition: o.nodeMonitoringCondition,
      reason: o.nodeUnhealthyReason,
      action: o.repairAction,
      minRepairWait: minutes(o.minRepairWaitTimeMins),
    })),
    ...(s.nodeSelector !== undefined ? { nodeSelector: s.nodeSelector } : {}),
  };
}

export const triggerOptions: OptionGroup = {
  label: 'Spot, refreshes, the reconciler and repair',
  options: [
    option({
      name: 'SpotInterruptions',
      label: 'Drain on Spot interruption warnings',
      description: 'Drain on EC2 Spot interruption warnings for instances of the groups (EventBridge rules).',
      kind: flag(false),
      props: (spotInterruptions) => ({ spotInterruptions }),
    }),
    option({
      name: 'MarkOutdatedOnRefresh',
      label: 'Mark outdated nodes on a refresh',
      description:
        'When an instance refresh of a served group starts, taint the nodes it will replace PreferNoSchedule, ' +
        'and take the marks back when it ends (an EventBridge rule for the refresh events).',
      kind: flag(v.markOutdatedOnRefresh.default!),
      props: (markOutdatedOnRefresh) => ({ markOutdatedOnRefresh }),
    }),
    option({
      name: 'ReconcileMarks',
      label: 'Run the reconciler',
      description: 'Run the reconciler: takes back marks whose owner is gone, resumes drains whose hand-off was lost.',
      kind: flag(v.reconcileMarks.default!),
      props: (reconcileMarks) => ({ reconcileMarks }),
    }),
    option({
      name: 'ReconcileIntervalMinutes',
      label: 'Reconciler interval (minutes)',
      description: 'How often the reconciler runs, in minutes.',
      kind: reconcileInterval,
      props: (m) => ({ reconcileInterval: Duration.minutes(m) }),
    }),
    option({
      name: 'Repair',
      label: 'Node auto repair',
      description: 'Node auto repair: off, on or a JSON object of its knobs; no Reboot rules (docs/repair.md).',
      kind: text({ accepts: v.repair.accepts, default: 'off', check: (t) => v.repair.parse(t) !== undefined }),
      props: (t) => {
        const settings = parseRepairSettings(t);
        return settings === 'off' || 'problem' in settings ? {} : { repair: repairPropsOf(settings) };
      },
    }),
  ],
};

const serviceLinkedRole = /^arn:aws[a-z-]*:iam::[0-9]{12}:role\/aws-service-role\/autoscaling\.amazonaws\.com\/\S+$/;

export const terminationPolicyOptions: OptionGroup = {
  label: 'Termination policy',
  options: [
    option({
      name: 'TerminationDeferralMaxSeconds',
      label: 'Longest deferral (seconds)',
      description: 'Termination policy: longest deferral of one scale-in (costly candidates, window closed).',
      kind: secondsOf(v.terminationDeferralMaxSeconds),
      props: (d) => ({ terminationPolicy: { maximumDeferral: Duration.seconds(d) } }),
    }),
    option({
      name: 'MaintenanceWindows',
      label: 'Maintenance windows',
      description: "Termination policy: only inside these windows, e.g. '0 22 * * MON-FRI for 6h'. Empty: any time.",
      kind: text({
        accepts: v.maintenanceWindows.accepts,
        default: '',
        check: (t) => v.maintenanceWindows.parse(t) !== undefined,
      }),
      props: (t) => ({ terminationPolicy: { maintenanceWindows: t.split(';').map((w) => w.trim()) } }),
    }),
    option({
      name: 'MaintenanceTimeZone',
      label: 'Maintenance time zone',
      description: 'IANA time zone of MaintenanceWindows.',
      kind: text({
        accepts: v.maintenanceTimeZone.accepts,
        default: v.maintenanceTimeZone.default!,
        check: (t) => v.maintenanceTimeZone.parse(t) !== undefined,
      }),
      props: (maintenanceTimeZone) => ({ terminationPolicy: { maintenanceTimeZone } }),
    }),
    option({
      name: 'TerminationPolicyServiceLinkedRoleArn',
      label: "Auto Scaling's service-linked role",
      description:
        "The service-linked role the groups use, when it has a custom suffix. Empty: the account's " +
        'AWSServiceRoleForAutoScaling.',
      kind: text({ accepts: 'an ARN of an Auto Scaling service-linked role', default: '', pattern: serviceLinkedRole }),
      props: (serviceLinkedRoleArn) => ({ terminationPolicy: { serviceLinkedRoleArn } }),
    }),
  ],
};
