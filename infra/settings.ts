// The construct's props with every default applied and every rule checked, once, before any
// resource exists. Each error names the bad value and the way out.
import { createHash } from 'node:crypto';
import { Duration, RemovalPolicy, Stack, Token, aws_lambda as lambda, aws_logs as logs } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { DeadlinePolicy, Mode, configVariables, longestWaits, type RepairSettings } from '../lambda/shared/config.js';
import { deploymentNamePattern, rbacName } from '../lambda/installer/rbac.js';
import {
  defaultInterval,
  defaultIntervalMinutes,
  latestResumeSeconds,
  longestIntervalMinutes,
  shortestHeartbeatSeconds,
  staleAfterSeconds,
} from '../lambda/shared/resume-window.js';
import type { GracefulNodeTerminationProps } from './props.js';
import { validateTerminationPolicy } from './termination-policy.js';
import { repairSettingsOf } from './repair-props.js';

export type VpcPlacement = Partial<Pick<lambda.FunctionProps, 'vpc' | 'vpcSubnets' | 'securityGroups'>>;

/** What the parts of the construct are built from. */
export interface Settings {
  readonly clusterName: string;
  readonly deploymentName: string;
  readonly hookNames: { readonly launch: string; readonly terminate: string };
  readonly kubernetesGroup: string;
  readonly deadlinePolicy: DeadlinePolicy;
  readonly mode: Mode;
  readonly retentionSetOutside: boolean;
  readonly heartbeatTimeout: Duration;
  readonly drainTimeout: Duration;
  readonly loadBalancerDelay: Duration;
  readonly waitForTargets: boolean;
  readonly launchTimeout: Duration;
  readonly batchWait: Duration;
  readonly cordonDoomedSiblings: boolean;
  readonly markOutdatedOnRefresh: boolean;
  readonly reconcileMarks: boolean;
  readonly reconcileInterval: Duration;
  /** Node auto repair; undefined: off. */
  readonly repair: RepairSettings | undefined;
  readonly spotInterruptions: boolean;
  readonly manageKubernetesAccess: boolean;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  readonly vpcPlacement: VpcPlacement;
}

/** The handler keeps this much of an invocation free to complete the action. */
export const invocationMarginSeconds = configVariables.invocationMarginSeconds.default!;

export function resolveSettings(scope: Construct, props: GracefulNodeTerminationProps): Settings {
  validateProps(props);
  const clusterName = resolveClusterName(props);
  const deploymentName = props.deploymentName ?? defaultDeploymentName(scope);
  const heartbeatTimeout = props.heartbeatTimeout ?? defaultSeconds(configVariables.heartbeatTimeoutSeconds);
  const settings: Settings = {
    clusterName,
    deploymentName,
    hookNames: { launch: `${deploymentName}-launch`, terminate: `${deploymentName}-terminate` },
    kubernetesGroup: props.kubernetesGroup ?? deploymentName,
    deadlinePolicy: props.deadlinePolicy ?? DeadlinePolicy.FORCE,
    mode: props.mode ?? Mode.ENFORCE,
    retentionSetOutside: props.retentionSetOutside ?? false,
    heartbeatTimeout,
    drainTimeout: props.drainTimeout ?? defaultSeconds(configVariables.drainTimeoutSeconds),
    loadBalancerDelay: props.loadBalancerDelay ?? defaultSeconds(configVariables.loadBalancerDelaySeconds),
    waitForTargets: props.waitForTargets ?? configVariables.waitForTargets.default!,
    // The launch wait runs on the timer Auto Scaling starts at the notification and does not
    // heartbeat: it must end (ABANDON or CONTINUE) before the hook's DefaultResult would.
    launchTimeout: props.launchTimeout ?? Duration.seconds(Math.min(configVariables.launchTimeoutSeconds.default!, heartbeatTimeout.toSeconds() - invocationMarginSeconds)),
    batchWait: props.batchWait ?? defaultSeconds(configVariables.batchWaitSeconds),
    cordonDoomedSiblings: props.cordonDoomedSiblings ?? configVariables.cordonDoomedSiblings.default!,
    markOutdatedOnRefresh: props.markOutdatedOnRefresh ?? configVariables.markOutdatedOnRefresh.default!,
    reconcileMarks: props.reconcileMarks ?? configVariables.reconcileMarks.default!,
    // Five minutes, or the longest schedule that still resumes a lost hand-off in time.
    reconcileInterval:
      props.reconcileInterval ?? Duration.minutes(defaultInterval({ heartbeatTimeoutSeconds: heartbeatTimeout.toSeconds(), invocationMarginSeconds }) || defaultIntervalMinutes),
    repair: props.repair !== undefined ? repairSettingsOf(props.repair) : undefined,
    spotInterruptions: props.spotInterruptions ?? false,
    manageKubernetesAccess: props.manageKubernetesAccess ?? true,
    logRetention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.DESTROY,
    vpcPlacement: props.vpc ? { vpc: props.vpc, vpcSubnets: props.vpcSubnets, securityGroups: props.securityGroups ? [...props.securityGroups] : undefined } : {},
  };
  checkTimesFit(settings);
  checkResumeFits(settings);
  return settings;
}

/**
 * A drain whose hand-off chain was lost must be resumed before the hook's timer runs out
 * (lambda/shared/resume-window.ts): the schedule fits the heartbeat timeout, or the reconciler
 * is off and nothing is promised.
 */
function checkResumeFits(s: Settings): void {
  if (!s.reconcileMarks) return;
  const heartbeat = s.heartbeatTimeout.toSeconds();
  const times = { heartbeatTimeoutSeconds: heartbeat, invocationMarginSeconds };
  const minutes = s.reconcileInterval.toMinutes();
  if (latestResumeSeconds(times, minutes) <= heartbeat) return;
  const why =
    `a drain whose hand-off chain was lost is taken for lost after ${staleAfterSeconds(times)} s without a write, and the pass that resumes it ` +
    `comes up to one interval and 60 s later: after Auto Scaling ended the action`;
  const longest = longestIntervalMinutes(times);
  if (longest < 1) {
    throw new Error(
      `heartbeatTimeout ${heartbeat} s is too short for any reconcile schedule: ${why}. ` +
        `Use a heartbeatTimeout of at least Duration.seconds(${shortestHeartbeatSeconds(1, invocationMarginSeconds)}), or reconcileMarks: false (no resume, no reconciling of marks).`,
    );
  }
  throw new Error(
    `reconcileInterval ${minutes} min is too long for heartbeatTimeout ${heartbeat} s: ${why}. ` +
      `Use a reconcileInterval of at most Duration.minutes(${longest}), a heartbeatTimeout of at least Duration.seconds(${shortestHeartbeatSeconds(minutes, invocationMarginSeconds) ?? 7200}), or reconcileMarks: false.`,
  );
}

/** `graceful-node-termination-` and 8 hex digits of a hash of the stack name and the construct's path. */
function defaultDeploymentName(scope: Construct): string {
  return `${rbacName}-${createHash('sha256')
    .update(`${Stack.of(scope).stackName}/${scope.node.path}`)
    .digest('hex')
    .slice(0, 8)}`;
}

/** The handler's own default for a variable, so the construct's defaults cannot drift from it. */
function defaultSeconds(variable: { readonly default?: number }): Duration {
  return Duration.seconds(variable.default!);
}

/** The waits must fit in what one lifecycle action may last (the rule the cold start checks too). */
function checkTimesFit(s: Settings): void {
  const heartbeat = s.heartbeatTimeout.toSeconds();
  const longest = longestWaits({
    heartbeatTimeoutSeconds: heartbeat,
    invocationMarginSeconds,
    drainTimeoutSeconds: s.drainTimeout.toSeconds(),
    loadBalancerDelaySeconds: s.loadBalancerDelay.toSeconds(),
  });
  if (s.launchTimeout.toSeconds() > longest.launch) {
    throw new Error(
      `launchTimeout ${s.launchTimeout.toSeconds()} s does not fit in the hooks' heartbeatTimeout ${heartbeat} s ` +
        `(the launch wait needs ${invocationMarginSeconds} s more to complete the action): shorten launchTimeout or lengthen heartbeatTimeout.`,
    );
  }
  if (s.drainTimeout.toSeconds() > longest.drain) {
    throw new Error(
      `drainTimeout ${s.drainTimeout.toSeconds()} s plus the load-balancer delay exceeds what Auto Scaling lets a lifecycle action live ` +
        `(min(48 h, 100 x heartbeatTimeout) = ${longest.cap} s): shorten drainTimeout or lengthen heartbeatTimeout.`,
    );
  }
  if (s.batchWait.toSeconds() > longest.batch) {
    throw new Error(
      `batchWait ${s.batchWait.toSeconds()} s plus drainTimeout and the load-balancer delay exceeds what Auto Scaling lets a lifecycle action live ` +
        `(${longest.cap} s): shorten batchWait or lengthen heartbeatTimeout.`,
    );
  }
}

const clusterNamePattern = /^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/;

/** The cluster's name, from `cluster` or `clusterName`: one of them, or both naming the same cluster. */
function resolveClusterName(props: GracefulNodeTerminationProps): string {
  const fromCluster = props.cluster?.clusterName;
  const name = fromCluster ?? props.clusterName;
  if (name === undefined) throw new Error('GracefulNodeTermination needs its cluster: pass clusterName (the EKS cluster name) or cluster (an eks.ICluster)');
  const given = props.clusterName;
  if (fromCluster !== undefined && given !== undefined && !Token.isUnresolved(fromCluster) && !Token.isUnresolved(given) && fromCluster !== given) {
    throw new Error(`clusterName ${JSON.stringify(given)} is not the name of cluster ${JSON.stringify(fromCluster)}: pass one of them`);
  }
  if (!Token.isUnresolved(name) && !clusterNamePattern.test(name)) {
    throw new Error(`clusterName ${JSON.stringify(name)} is not an EKS cluster name: use 1 to 100 letters, digits, "-" or "_", starting with a letter or digit`);
  }
  return name;
}

function validateProps(props: GracefulNodeTerminationProps): void {
  const heartbeat = props.heartbeatTimeout?.toSeconds();
  if (heartbeat !== undefined && (heartbeat < 30 || heartbeat > 7200)) {
    throw new Error(`heartbeatTimeout ${heartbeat} s is outside what Auto Scaling accepts: use between Duration.seconds(30) and Duration.hours(2)`);
  }
  checkSeconds(props.drainTimeout, 'drainTimeout', configVariables.drainTimeoutSeconds);
  checkSeconds(props.loadBalancerDelay, 'loadBalancerDelay', configVariables.loadBalancerDelaySeconds);
  checkSeconds(props.loadBalancerMinWait, 'loadBalancerMinWait', configVariables.loadBalancerMinWaitSeconds);
  checkSeconds(props.loadBalancerMaxWait, 'loadBalancerMaxWait', configVariables.loadBalancerMaxWaitSeconds);
  const [min, max] = [props.loadBalancerMinWait?.toSeconds() ?? 5, props.loadBalancerMaxWait?.toSeconds() ?? 300];
  if (min > max) throw new Error(`loadBalancerMinWait ${min} s is longer than loadBalancerMaxWait ${max} s: the minimum must not exceed the maximum`);
  checkSeconds(props.launchTimeout, 'launchTimeout', configVariables.launchTimeoutSeconds);
  checkSeconds(props.minEvictionWindow, 'minEvictionWindow', configVariables.minEvictionWindowSeconds);
  if (props.launchTimeout !== undefined && props.launchTimeout.toSeconds() > 15 * 60 - invocationMarginSeconds) {
    throw new Error(`launchTimeout ${props.launchTimeout.toSeconds()} s is longer than one invocation allows (880 s): use at most Duration.seconds(880)`);
  }
  validateReconcileInterval(props.reconcileInterval);
  validateTerminationPolicy(props.terminationPolicy);
  if (props.repair !== undefined && props.reconcileMarks === false) throw new Error("repair runs on the reconciler's schedule: it needs reconcileMarks (leave it on, the default)");
  validateFunctionProps(props);
  if (props.deploymentName !== undefined && !deploymentNamePattern.test(props.deploymentName)) {
    throw new Error(
      `deploymentName ${JSON.stringify(props.deploymentName)} is invalid: use a DNS label (lowercase letters, digits and "-", at most 63, starting and ending alphanumeric)`,
    );
  }
  const group = props.kubernetesGroup;
  if (group !== undefined && (group.trim() === '' || group.startsWith('system:'))) {
    throw new Error(`kubernetesGroup ${JSON.stringify(group)} is invalid: EKS access entries need a non-empty group that does not start with "system:"`);
  }
  if (!props.vpc && (props.vpcSubnets || props.securityGroups)) {
    throw new Error('vpcSubnets and securityGroups need vpc: pass the VPC the subnets belong to');
  }
}

function checkSeconds(value: Duration | undefined, field: string, variable: { accepts: string; parse(raw: string): unknown }): void {
  if (value !== undefined && variable.parse(String(value.toSeconds())) === undefined) {
    throw new Error(`${field} ${value.toSeconds()} s is invalid: expected ${variable.accepts} seconds`);
  }
}

/** EventBridge rates are whole minutes; more often than a minute or rarer than a day is no schedule we want. */
function validateReconcileInterval(interval: Duration | undefined): void {
  if (interval === undefined) return;
  const seconds = interval.toSeconds({ integral: false });
  if (seconds < 60 || seconds > 86_400 || seconds % 60 !== 0) {
    throw new Error(`reconcileInterval ${seconds} s is invalid: use whole minutes from Duration.minutes(1) to Duration.days(1)`);
  }
}

function validateFunctionProps(props: GracefulNodeTerminationProps): void {
  const reserved = props.reservedConcurrency;
  if (reserved !== undefined && (!Number.isInteger(reserved) || reserved < 1)) {
    throw new Error(`reservedConcurrency ${reserved} is invalid: use an integer >= 1 (0 would stop the drainer altogether)`);
  }
  if (props.evictionConcurrency !== undefined && configVariables.evictionConcurrency.parse(String(props.evictionConcurrency)) === undefined) {
    throw new Error(`evictionConcurrency ${props.evictionConcurrency} is invalid: expected ${configVariables.evictionConcurrency.accepts}`);
  }
  const memory = props.memorySizeMiB;
  if (memory !== undefined && (!Number.isInteger(memory) || memory < 128 || memory > 10240)) {
    throw new Error(`memorySizeMiB ${memory} is invalid: Lambda accepts an integer from 128 to 10240`);
  }
  const path = props.rolePath;
  if (path !== undefined && !Token.isUnresolved(path) && !rolePathPattern.test(path)) {
    throw new Error(`rolePath ${JSON.stringify(path)} is invalid: IAM paths are "/" or start and end with "/" (printable ASCII between), at most 512 characters`);
  }
}

/** IAM's path: `/`, or `/` + printable ASCII + `/`, at most 512 characters. */
export const rolePathPattern = /^(?=.{1,512}$)\/([!-~]*\/)?$/;

/** Names Auto Scaling accepts, and that fit in the comma-separated AUTO_SCALING_GROUP_NAMES. */
export function validateGroupName(name: string): void {
  if (name.trim() === '' || name.length > 255 || name.includes(',')) {
    throw new Error(`Auto Scaling group name ${JSON.stringify(name)} is invalid: use 1 to 255 characters without commas`);
  }
}
