// The handler's configuration: parsed and validated once, at cold start, from the variables
// defined in config-variables.ts (the construct writes the same definitions).
import { actionCapSeconds, longestWaits, timeoutProblems, type CheckedValues } from './config-checks.js';
import type { ChoiceConfig, ChoiceConfigInput } from './choice-variables.js';
import { drainRuleProblems, type DrainRuleConfig, type DrainRuleConfigInput } from './drain-rule-variables.js';
import type { ReleaseConfig, ReleaseConfigInput } from './release-variables.js';
import { surgeSettings, type SurgeConfig, type SurgeConfigInput, type SurgeSettings } from './surge-variables.js';
import { configVariables, type Variable } from './config-variables.js';
import { DeadlinePolicy } from './deadline-policy.js';
import { Mode } from './mode.js';
import { ConfigError } from './errors.js';
import { parseWindows, type Window } from './maintenance-windows.js';
import { defaultInterval, defaultIntervalMinutes } from './resume-window.js';
import {
  defaultRepairSettings,
  formatRepairSettings,
  parseRepairSettings,
  RepairAction,
  rebootsAny,
  type RepairSettings,
} from './repair-settings.js';

export type { DrainRuleSpec } from './drain-rule-variables.js';
export {
  actionCapSeconds,
  configVariables,
  DeadlinePolicy,
  defaultRepairSettings,
  formatRepairSettings,
  longestWaits,
  Mode,
  parseRepairSettings,
  RepairAction,
  rebootsAny,
  type RepairSettings,
};

/** The CloudWatch namespace of our metrics (EMF lines and the log metric filters). */
export const metricsNamespace = 'GracefulNodeTermination';

export interface Config extends ChoiceConfig, ReleaseConfig, DrainRuleConfig, SurgeConfig {
  /** Surge before evict as the drain reads it, derived once from the SURGE_* variables; undefined: off. */
  readonly surge: SurgeSettings | undefined;
  /** EKS cluster name: the token's x-k8s-aws-id and the DescribeCluster target. */
  readonly clusterName: string;
  /** Auto Scaling groups this deployment acts for; anything else is refused. */
  readonly autoScalingGroupNames: ReadonlySet<string>;
  /** Lifecycle hook names this deployment acts for. */
  readonly lifecycleHookNames: ReadonlySet<string>;
  /** Upper bound on evicting and waiting for pods. */
  readonly drainTimeoutSeconds: number;
  /** Wait after the drain so load balancers stop sending traffic (EKS waits 60 s). */
  readonly loadBalancerDelaySeconds: number;
  /** Read the load balancers and release once none holds the instance (else the fixed delay). */
  readonly waitForTargets: boolean;
  /** With waitForTargets: the shortest and longest wait after the drain. */
  readonly loadBalancerMinWaitSeconds: number;
  readonly loadBalancerMaxWaitSeconds: number;
  /** More tags that make a target group or Classic Load Balancer the cluster's (undefined value: any). */
  readonly loadBalancerTags: ReadonlyMap<string, string | undefined> | undefined;
  /** Wait for the departed pods' VolumeAttachments to be gone, within the drain deadline. */
  readonly waitForVolumeDetach: boolean;
  /** Kept free at the end of an invocation to complete the lifecycle action. */
  readonly invocationMarginSeconds: number;
  /** Evictions in flight at once per node. */
  readonly evictionConcurrency: number;
  /** How long a new node has to join Ready before its launch is abandoned. */
  readonly launchTimeoutSeconds: number;
  /** How long Job and do-not-disrupt pods may run on before they are evicted anyway. */
  readonly batchWaitSeconds: number;
  /** What happens to pods still there at the drain deadline. */
  readonly deadlinePolicy: DeadlinePolicy;
  /** observe: verify and say what would be done, change nothing, complete CONTINUE (observe.ts). */
  readonly mode: Mode;
  /** No pod is force-deleted before it had this long from when the drain first saw the node. */
  readonly minEvictionWindowSeconds: number;
  /** Cordon the group's other terminating instances before evicting (Terminating:Wait). */
  readonly cordonDoomedSiblings: boolean;
  /** Taint (or cordon, strategy minimal) the outdated nodes when an instance refresh starts. */
  readonly markOutdatedOnRefresh: boolean;
  /** A budget refusing a pod this long is reported again, with pending replacements. */
  readonly blockedReportSeconds: number;
  /** The hooks' HeartbeatTimeout: heartbeats and hand-offs are paced by it. */
  readonly heartbeatTimeoutSeconds: number;
  /** Topic that carries hand-offs to a fresh invocation; unset: a drain ends with its invocation. */
  readonly handOffTopicArn: string | undefined;
  /** Drain on Spot interruption warnings. */
  readonly spotInterruptions: boolean;
  /** This deployment's name: the owner named on every mark it sets. */
  readonly deploymentName: string;
  /** Take back orphaned marks and resume lost drains on scheduled events. */
  readonly reconcileMarks: boolean;
  /** The reconciler's schedule (resume-window.ts): as given, else 5 or the longest that fits. */
  readonly reconcileIntervalMinutes: number;
  /** Node auto repair on the reconciler's schedule (repair/); undefined: off. */
  readonly repair: RepairSettings | undefined;
  /** Use this kubeconfig instead of EKS (tests, the local demo, non-EKS clusters). */
  readonly kubeconfigPath: string | undefined;
  /** Context in that kubeconfig; its current context when unset. */
  readonly kubeconfigContext: string | undefined;
}

/** The settings a deployer chooses; names are the camelCase twins of the variables. */
export type ConfigInput = ChoiceConfigInput &
  DrainRuleConfigInput &
  ReleaseConfigInput &
  SurgeConfigInput & {
    readonly clusterName: string;
    readonly autoScalingGroupNames: readonly string[];
    readonly lifecycleHookNames: readonly string[];
    readonly drainTimeoutSeconds?: number;
    readonly loadBalancerDelaySeconds?: number;
    readonly waitForTargets?: boolean;
    readonly loadBalancerMinWaitSeconds?: number;
    readonly loadBalancerMaxWaitSeconds?: number;
    readonly loadBalancerTags?: Readonly<Record<string, string>>;
    readonly waitForVolumeDetach?: boolean;
    readonly invocationMarginSeconds?: number;
    readonly evictionConcurrency?: number;
    readonly launchTimeoutSeconds?: number;
    readonly batchWaitSeconds?: number;
    readonly deadlinePolicy?: DeadlinePolicy;
    readonly mode?: Mode;
    readonly minEvictionWindowSeconds?: number;
    readonly cordonDoomedSiblings?: boolean;
    readonly markOutdatedOnRefresh?: boolean;
    readonly blockedReportSeconds?: number;
    readonly heartbeatTimeoutSeconds?: number;
    readonly handOffTopicArn?: string;
    readonly spotInterruptions?: boolean;
    readonly deploymentName?: string;
    readonly reconcileMarks?: boolean;
    readonly reconcileIntervalMinutes?: number;
    readonly repair?: RepairSettings | false;
    readonly kubeconfigPath?: string;
    readonly kubeconfigContext?: string;
  };

const required: ReadonlySet<keyof typeof configVariables> = new Set([
  'clusterName',
  'autoScalingGroupNames',
  'lifecycleHookNames',
]);

/**
 * Parses and validates the whole environment at once. Throws one ConfigError naming
 * every bad variable and what it accepts, so a deployer fixes them in one go.
 */
export function parseConfig(env: Readonly<Record<string, string | undefined>>): Config {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(configVariables) as [keyof typeof configVariables, Variable<unknown>][]) {
    const raw = env[v.name];
    if (raw === undefined || raw.trim() === '') {
      if (required.has(key)) problems.push(`${v.name} is required (${v.accepts})`);
      values[key] = v.default;
      continue;
    }
    const parsed = v.parse(raw);
    if (parsed === undefined) problems.push(`${v.name}=${JSON.stringify(raw)} is invalid: expected ${v.accepts}`);
    values[key] = parsed;
  }
  const min = values['loadBalancerMinWaitSeconds'] as number | undefined;
  const max = values['loadBalancerMaxWaitSeconds'] as number | undefined;
  if (min !== undefined && max !== undefined && min > max)
    problems.push(`LOAD_BALANCER_MIN_WAIT_SECONDS (${min}) must not exceed LOAD_BALANCER_MAX_WAIT_SECONDS (${max})`);
  problems.push(...timeoutProblems(values as CheckedValues), ...repairProblems(env, values), ...drainRulesDetail(env));
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    ...values,
    surge: surgeSettings(values as unknown as SurgeConfig),
    repair: values['repair'] || undefined,
    reconcileIntervalMinutes: values['reconcileIntervalMinutes'] ?? derivedInterval(values),
  } as unknown as Config;
}

/** What exactly is wrong with DRAIN_RULES, each rule said where it is. */
function drainRulesDetail(env: Readonly<Record<string, string | undefined>>): string[] {
  const raw = env[configVariables.drainRules.name];
  if (raw === undefined || raw.trim() === '') return [];
  try {
    return drainRuleProblems(JSON.parse(raw)).map((p) => `DRAIN_RULES: ${p}`);
  } catch (error) {
    return [`DRAIN_RULES is not JSON: ${(error as Error).message}`];
  }
}

/** What exactly is wrong with REPAIR, and repair without the schedule it runs on. */
function repairProblems(env: Readonly<Record<string, string | undefined>>, values: Record<string, unknown>): string[] {
  const raw = env[configVariables.repair.name];
  const parsed = raw === undefined || raw.trim() === '' ? 'off' : parseRepairSettings(raw);
  if (typeof parsed === 'object' && 'problem' in parsed) return [`REPAIR: ${parsed.problem}`];
  if (parsed !== 'off' && values['reconcileMarks'] === false)
    return ["REPAIR runs on the reconciler's schedule: it needs RECONCILE_MARKS=true"];
  return [];
}

/** Unset: five minutes, or the longest that still resumes in time (0 only where nothing resumes anyway). */
function derivedInterval(values: Record<string, unknown>): number {
  const times = {
    heartbeatTimeoutSeconds: values['heartbeatTimeoutSeconds'] as number,
    invocationMarginSeconds: values['invocationMarginSeconds'] as number,
  };
  return defaultInterval(times) || defaultIntervalMinutes;
}

/** The environment that makes parseConfig return these settings (used by the CDK construct). */
export function toEnvironment(input: ConfigInput): Record<string, string> {
  const env: Record<string, string> = {};
  const set = <T>(v: Variable<T>, value: T | undefined): void => {
    if (value !== undefined) env[v.name] = v.format(value);
  };
  set(configVariables.clusterName, input.clusterName);
  set(configVariables.autoScalingGroupNames, new Set(input.autoScalingGroupNames));
  set(configVariables.lifecycleHookNames, new Set(input.lifecycleHookNames));
  set(configVariables.drainTimeoutSeconds, input.drainTimeoutSeconds);
  set(configVariables.loadBalancerDelaySeconds, input.loadBalancerDelaySeconds);
  set(configVariables.waitForTargets, input.waitForTargets);
  set(configVariables.loadBalancerMinWaitSeconds, input.loadBalancerMinWaitSeconds);
  set(configVariables.loadBalancerMaxWaitSeconds, input.loadBalancerMaxWaitSeconds);
  // A tag given with an empty value matches any value (as `key` alone does).
  set(
    configVariables.loadBalancerTags,
    input.loadBalancerTags &&
      new Map(Object.entries(input.loadBalancerTags).map(([k, v]) => [k, v === '' ? undefined : v])),
  );
  set(configVariables.waitForVolumeDetach, input.waitForVolumeDetach);
  set(configVariables.invocationMarginSeconds, input.invocationMarginSeconds);
  set(configVariables.evictionConcurrency, input.evictionConcurrency);
  set(configVariables.launchTimeoutSeconds, input.launchTimeoutSeconds);
  set(configVariables.batchWaitSeconds, input.batchWaitSeconds);
  set(configVariables.deadlinePolicy, input.deadlinePolicy);
  set(configVariables.mode, input.mode);
  set(configVariables.minEvictionWindowSeconds, input.minEvictionWindowSeconds);
  set(configVariables.cordonDoomedSiblings, input.cordonDoomedSiblings);
  set(configVariables.markOutdatedOnRefresh, input.markOutdatedOnRefresh);
  set(configVariables.blockedReportSeconds, input.blockedReportSeconds);
  set(configVariables.heartbeatTimeoutSeconds, input.heartbeatTimeoutSeconds);
  set(configVariables.handOffTopicArn, input.handOffTopicArn);
  set(configVariables.spotInterruptions, input.spotInterruptions);
  set(configVariables.deploymentName, input.deploymentName);
  set(configVariables.reconcileMarks, input.reconcileMarks);
  set(configVariables.reconcileIntervalMinutes, input.reconcileIntervalMinutes);
  set(configVariables.repair, input.repair);
  set(configVariables.kubeconfigPath, input.kubeconfigPath);
  set(configVariables.kubeconfigContext, input.kubeconfigContext);
  set(configVariables.terminationDeferralMaxSeconds, input.terminationDeferralMaxSeconds);
  set(configVariables.maintenanceWindows, input.maintenanceWindows && parseWindowsOrThrow(input.maintenanceWindows));
  set(configVariables.maintenanceTimeZone, input.maintenanceTimeZone);
  set(configVariables.outOfServiceAfterRelease, input.outOfServiceAfterRelease);
  const ruleProblems = input.drainRules === undefined ? [] : drainRuleProblems(input.drainRules);
  if (ruleProblems.length > 0) throw new ConfigError(ruleProblems.map((p) => `drainRules: ${p}`));
  set(configVariables.drainRules, input.drainRules);
  set(configVariables.evictDaemonSetPods, input.evictDaemonSetPods);
  setSurge(input, set);
  return env;
}

/** Windows as the construct takes them (one text each): a malformed one is a configuration error. */
function parseWindowsOrThrow(texts: readonly string[]): readonly Window[] {
  const windows = parseWindows(texts.join('; '));
  if (windows === undefined || texts.some((t) => t.includes(';'))) {
    throw new ConfigError([
      `maintenanceWindows ${JSON.stringify(texts)} is invalid: expected ${configVariables.maintenanceWindows.accepts}`,
    ]);
  }
  return windows;
}

/** The surge variables (surge-variables.ts); a malformed selector is a configuration error. */
function setSurge(input: SurgeConfigInput, set: <T>(v: Variable<T>, value: T | undefined) => void): void {
  set(configVariables.surgeBeforeEvict, input.surgeBeforeEvict);
  set(configVariables.surgeNamespaces, input.surgeNamespaces);
  const selector =
    input.surgePodSelector === undefined ? undefined : configVariables.surgePodSelector.parse(input.surgePodSelector);
  if (input.surgePodSelector !== undefined && selector === undefined) {
    throw new ConfigError([
      `surgeBeforeEvict.podSelector ${JSON.stringify(input.surgePodSelector)} is invalid: expected ` +
        `${configVariables.surgePodSelector.accepts}`,
    ]);
  }
  set(configVariables.surgePodSelector, selector);
  set(configVariables.surgeTimeoutSeconds, input.surgeTimeoutSeconds);
  set(configVariables.surgeUntouchableManagers, input.surgeUntouchableManagers);
}
