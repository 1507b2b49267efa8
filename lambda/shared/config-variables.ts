// Every environment variable the handler reads, defined once: the handler parses them at
// cold start (config.ts), the CDK construct writes them, and the docs' table is generated
// from this list, so the three can never drift apart.
import { DeadlinePolicy } from './deadline-policy.js';
import { Mode } from './mode.js';
import { choiceVariables } from './choice-variables.js';
import { drainRuleVariables } from './drain-rule-variables.js';
import { releaseVariables } from './release-variables.js';
import { settleVariables } from './settle-variables.js';
import { surgeVariables } from './surge-variables.js';
import { flag, integer, variable } from './variable.js';
import { formatRepairSettings, parseRepairSettings, type RepairSettings } from './repair-settings.js';

export type { Variable } from './variable.js';

const names = (raw: string): Set<string> | undefined => {
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return list.length > 0 ? new Set(list) : undefined;
};

/** `key=value,key`: a key alone matches any value. Keys and values as AWS tags allow them (no comma, key no `=`). */
const text = (raw: string): string | undefined => (raw.trim().length > 0 ? raw.trim() : undefined);

/** Every variable the handler reads, in the order docs/configuration.md shows them. */
export const configVariables = {
  clusterName: variable<string>({
    name: 'CLUSTER_NAME',
    description: 'EKS cluster the node groups belong to.',
    accepts: 'a non-empty cluster name',
    parse: text,
    format: String,
  }),
  autoScalingGroupNames: variable<ReadonlySet<string>>({
    name: 'AUTO_SCALING_GROUP_NAMES',
    description: 'Auto Scaling groups to act for; notifications for others are refused.',
    accepts: 'a comma-separated list of group names',
    parse: names,
    format: (v) => [...v].join(','),
  }),
  lifecycleHookNames: variable<ReadonlySet<string>>({
    name: 'LIFECYCLE_HOOK_NAMES',
    description: 'Lifecycle hook names to act for; notifications from others are refused.',
    accepts: 'a comma-separated list of hook names',
    parse: names,
    format: (v) => [...v].join(','),
  }),
  drainTimeoutSeconds: variable<number>({
    name: 'DRAIN_TIMEOUT_SECONDS',
    description: 'Longest time spent evicting and waiting for pods before completing anyway.',
    accepts: 'an integer from 0 to 172800',
    default: 900,
    parse: integer(0, 172_800),
    format: String,
  }),
  ...settleVariables,
  invocationMarginSeconds: variable<number>({
    name: 'INVOCATION_MARGIN_SECONDS',
    description: 'Time kept free before the Lambda timeout to complete the lifecycle action.',
    accepts: 'an integer from 1 to 300',
    default: 20,
    parse: integer(1, 300),
    format: String,
  }),
  evictionConcurrency: variable<number>({
    name: 'EVICTION_CONCURRENCY',
    description: 'Evictions in flight at once for one node.',
    accepts: 'an integer from 1 to 256',
    default: 32,
    parse: integer(1, 256),
    format: String,
  }),
  launchTimeoutSeconds: variable<number>({
    name: 'LAUNCH_TIMEOUT_SECONDS',
    description:
      'Time a new node has to join Ready without startup taints; then the launch is abandoned and the group ' +
      'replaces it.',
    accepts: 'an integer from 30 to 3600',
    default: 600,
    parse: integer(30, 3600),
    format: String,
  }),
  batchWaitSeconds: variable<number>({
    name: 'BATCH_WAIT_SECONDS',
    description:
      'How long pods of Jobs and pods annotated karpenter.sh/do-not-disrupt or ' +
      'graceful-node-termination/wait-for-completion may run to completion before they are evicted.',
    accepts: 'an integer from 0 to 172800',
    default: 3600,
    parse: integer(0, 172_800),
    format: String,
  }),
  mode: variable<Mode>({
    name: 'MODE',
    description:
      'enforce drains as documented; observe verifies every notification as usual and works out what it would do ' +
      '(the node, the pods in eviction order, what would block them, the siblings it would cordon, how long it ' +
      'would wait), writes that as Events and log lines, changes nothing else in the cluster or the groups, and ' +
      'completes each lifecycle action CONTINUE at once: a careful first rollout.',
    accepts: 'enforce or observe',
    default: Mode.ENFORCE,
    parse: (raw) => ((Object.values(Mode) as string[]).includes(raw.trim()) ? (raw.trim() as Mode) : undefined),
    format: String,
  }),
  deadlinePolicy: variable<DeadlinePolicy>({
    name: 'DEADLINE_POLICY',
    description:
      'At the drain deadline: force deletes each remaining pod at the deadline minus its grace period ' +
      '(PodDisruptionBudgets bypassed, never inside MIN_EVICTION_WINDOW_SECONDS, never before one eviction ' +
      'attempt); leave lets them die with the instance; retain deletes nothing and completes the action with ' +
      'ABANDON, so a group with an instance lifecycle policy that retains on ABANDON keeps the instance, cordoned ' +
      '(without that policy ABANDON terminates it like CONTINUE).',
    accepts: 'force, leave or retain',
    default: DeadlinePolicy.FORCE,
    parse: (raw) =>
      (Object.values(DeadlinePolicy) as string[]).includes(raw.trim()) ? (raw.trim() as DeadlinePolicy) : undefined,
    format: String,
  }),
  minEvictionWindowSeconds: variable<number>({
    name: 'MIN_EVICTION_WINDOW_SECONDS',
    description:
      'Every pod gets at least this long to be evicted, from when the drain first saw the node, before the force ' +
      'policy may delete it; the drain deadline moves out to fit it (a notification that waited in a queue still ' +
      "gets a fair drain), within the lifecycle action's cap.",
    accepts: 'an integer from 0 to 3600',
    default: 60,
    parse: integer(0, 3600),
    format: String,
  }),
  cordonDoomedSiblings: variable<boolean>({
    name: 'CORDON_DOOMED_SIBLINGS',
    description:
      'Before evicting anything, label and cordon the nodes of the other instances the group is terminating too ' +
      '(Terminating, Terminating:Wait), so a pod evicted from one doomed node never lands on another and moves ' +
      'twice.',
    accepts: 'true or false',
    default: true,
    parse: flag,
    format: String,
  }),
  markOutdatedOnRefresh: variable<boolean>({
    name: 'MARK_OUTDATED_ON_REFRESH',
    description:
      'When an instance refresh of a served group starts (EventBridge), taint every node not on its desired ' +
      'launch template version graceful-node-termination/outdated:PreferNoSchedule (cordon it with `upgrade ' +
      '--strategy minimal`), so each pod moves once; when it ends, remove exactly those marks.',
    accepts: 'true or false',
    default: true,
    parse: flag,
    format: String,
  }),
  blockedReportSeconds: variable<number>({
    name: 'BLOCKED_REPORT_SECONDS',
    description:
      'A PodDisruptionBudget that refuses a pod this long gets a Warning Event naming its pending replacements ' +
      "and the scheduler's reason.",
    accepts: 'an integer from 1 to 3600',
    default: 120,
    parse: integer(1, 3600),
    format: String,
  }),
  heartbeatTimeoutSeconds: variable<number>({
    name: 'HEARTBEAT_TIMEOUT_SECONDS',
    description: "The lifecycle hooks' HeartbeatTimeout; the handler heartbeats and hands on before it runs out.",
    accepts: 'an integer from 30 to 7200',
    default: 1800,
    parse: integer(30, 7200),
    format: String,
  }),
  handOffTopicArn: variable<string>({
    name: 'HAND_OFF_TOPIC_ARN',
    description:
      "SNS topic through which a drain longer than one invocation continues in a fresh one (the hooks' topic).",
    accepts: 'an SNS topic ARN',
    parse: (raw) =>
      /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/.test(raw.trim()) ? raw.trim() : undefined,
    format: String,
  }),
  kubeconfigPath: variable<string>({
    name: 'KUBECONFIG_PATH',
    description:
      'Use this kubeconfig file instead of EKS authentication (tests, clusters outside EKS); token, tokenFile or ' +
      'client certificate.',
    accepts: 'a file path',
    parse: text,
    format: String,
  }),
  kubeconfigContext: variable<string>({
    name: 'KUBECONFIG_CONTEXT',
    description: "Context to use from KUBECONFIG_PATH (default: the file's current context).",
    accepts: 'a context name',
    parse: text,
    format: String,
  }),
  spotInterruptions: variable<boolean>({
    name: 'SPOT_INTERRUPTIONS',
    description:
      'Drain on EC2 Spot interruption warnings (instances of the served groups only); false: every Spot warning ' +
      'is refused without a write. The construct sets it from its spotInterruptions prop, so a deployment that ' +
      'never asked for Spot draining cannot be made to drain by a forged warning.',
    accepts: 'true or false',
    default: true,
    parse: flag,
    format: String,
  }),
  deploymentName: variable<string>({
    name: 'DEPLOYMENT_NAME',
    description:
      "This deployment's name: every mark it sets on a node carries it (the graceful-node-termination/owner " +
      "label), so the reconciler finds its own marks with one list and never touches another deployment's.",
    accepts: 'a DNS label (lowercase letters, digits and "-", at most 63)',
    default: 'graceful-node-termination',
    parse: (raw) => (/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(raw.trim()) ? raw.trim() : undefined),
    format: String,
  }),
  reconcileMarks: variable<boolean>({
    name: 'RECONCILE_MARKS',
    description:
      "On a scheduled event (the construct's reconcile schedule), take back every mark whose owner is gone " +
      '(lifecycle action over, refresh ended) and resume drains whose hand-off chain was lost; false: scheduled ' +
      'events are ignored.',
    accepts: 'true or false',
    default: true,
    parse: flag,
    format: String,
  }),
  reconcileIntervalMinutes: variable<number>({
    name: 'RECONCILE_INTERVAL_MINUTES',
    description:
      "The reconciler's schedule, as the construct sets it (its reconcileInterval): with RECONCILE_MARKS and " +
      'HAND_OFF_TOPIC_ARN, a drain whose hand-off chain was lost must be resumed before HEARTBEAT_TIMEOUT_SECONDS ' +
      'runs out, and a schedule that cannot is refused at cold start (docs/limits.md, "Resuming a lost ' +
      'hand-off"). Unset: 5, or the longest that fits a shorter heartbeat timeout.',
    accepts: 'an integer from 1 to 1440',
    parse: integer(1, 1440),
    format: String,
  }),
  ...choiceVariables,
  ...drainRuleVariables,
  ...releaseVariables,
  ...surgeVariables,
  repair: variable<RepairSettings | false>({
    name: 'REPAIR',
    description:
      "Node auto repair on the reconciler's schedule (docs/repair.md): a node of a served group whose condition " +
      '(Ready, KernelReady, NetworkingReady, ContainerRuntimeReady, StorageReady, AcceleratedHardwareReady) stays ' +
      'bad past its rule is replaced through Auto Scaling (SetInstanceHealth Unhealthy, so the terminate hook ' +
      "drains it) or rebooted, paced and held in a storm as managed node groups' NodeRepairConfig; off: never.",
    accepts:
      "off, on (managed groups' defaults) or a JSON object of repairAfterMinutes, " +
      'maxUnhealthyNodeThreshold{Count,Percentage}, maxParallelNodesRepaired{Count,Percentage}, ' +
      'nodeRepairConfigOverrides, nodeSelector',
    default: false,
    parse: (raw) => {
      const s = parseRepairSettings(raw);
      return s === 'off' ? false : 'problem' in s ? undefined : s;
    },
    format: (v) => (v === false ? 'off' : formatRepairSettings(v)),
  }),
} as const;
