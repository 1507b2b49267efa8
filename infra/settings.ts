// The construct's props with every default applied and every rule checked, once, before any
// resource exists. Each error names the bad value and the way out.
import { createHash } from 'node:crypto';
import { Duration, RemovalPolicy, Stack, aws_lambda as lambda, aws_logs as logs } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { DeadlinePolicy, Mode, configVariables, longestWaits, type RepairSettings } from '../lambda/shared/config.js';
import { rbacName } from '../lambda/installer/rbac.js';
import {
  defaultInterval,
  defaultIntervalMinutes,
  latestResumeSeconds,
  longestIntervalMinutes,
  shortestHeartbeatSeconds,
  staleAfterSeconds,
} from '../lambda/shared/resume-window.js';
import type { GracefulNodeTerminationProps } from './props.js';
import { invocationMarginSeconds, resolveClusterName, validateProps } from './prop-checks.js';
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
    launchTimeout:
      props.launchTimeout ??
      Duration.seconds(
        Math.min(configVariables.launchTimeoutSeconds.default!, heartbeatTimeout.toSeconds() - invocationMarginSeconds),
      ),
    batchWait: props.batchWait ?? defaultSeconds(configVariables.batchWaitSeconds),
    cordonDoomedSiblings: props.cordonDoomedSiblings ?? configVariables.cordonDoomedSiblings.default!,
    markOutdatedOnRefresh: props.markOutdatedOnRefresh ?? configVariables.markOutdatedOnRefresh.default!,
    reconcileMarks: props.reconcileMarks ?? configVariables.reconcileMarks.default!,
    // Five minutes, or the longest schedule that still resumes a lost hand-off in time.
    reconcileInterval:
      props.reconcileInterval ??
      Duration.minutes(
        defaultInterval({ heartbeatTimeoutSeconds: heartbeatTimeout.toSeconds(), invocationMarginSeconds }) ||
          defaultIntervalMinutes,
      ),
    repair: props.repair !== undefined ? repairSettingsOf(props.repair) : undefined,
    spotInterruptions: props.spotInterruptions ?? false,
    manageKubernetesAccess: props.manageKubernetesAccess ?? true,
    logRetention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.DESTROY,
    vpcPlacement: props.vpc
      ? {
          vpc: props.vpc,
          vpcSubnets: props.vpcSubnets,
          securityGroups: props.securityGroups ? [...props.securityGroups] : undefined,
        }
      : {},
  };
  checkTimesFit(
    settings,
    props.loadBalancerMinWait?.toSeconds() ?? configVariables.loadBalancerMinWaitSeconds.default!,
  );
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
    `a drain whose hand-off chain was lost is taken for lost after ${staleAfterSeconds(times)} s without a write, ` +
    `and ` +
    `the pass that resumes it ` +
    `comes up to one interval and 60 s later: after Auto Scaling ended the action`;
  const longest = longestIntervalMinutes(times);
  if (longest < 1) {
    throw new Error(
      `heartbeatTimeout ${heartbeat} s is too short for any reconcile schedule: ${why}. ` +
        `Use a heartbeatTimeout of at least ` +
        `Duration.seconds(${shortestHeartbeatSeconds(1, invocationMarginSeconds)}), or reconcileMarks: false (no ` +
        `resume, no reconciling of marks).`,
    );
  }
  throw new Error(
    `reconcileInterval ${minutes} min is too long for heartbeatTimeout ${heartbeat} s: ${why}. ` +
      `Use a reconcileInterval of at most Duration.minutes(${longest}), a heartbeatTimeout of at least ` +
      `Duration.seconds(${shortestHeartbeatSeconds(minutes, invocationMarginSeconds) ?? 7200}), or reconcileMarks: ` +
      `false.`,
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
function checkTimesFit(s: Settings, loadBalancerMinWaitSeconds: number): void {
  const heartbeat = s.heartbeatTimeout.toSeconds();
  const longest = longestWaits({
    heartbeatTimeoutSeconds: heartbeat,
    invocationMarginSeconds,
    drainTimeoutSeconds: s.drainTimeout.toSeconds(),
    loadBalancerDelaySeconds: s.loadBalancerDelay.toSeconds(),
    waitForTargets: s.waitForTargets,
    loadBalancerMinWaitSeconds,
  });
  // The settle reserve the deadlines keep after the drain: the minimum wait when it is the longer (waitForTargets).
  const reserve =
    s.waitForTargets && loadBalancerMinWaitSeconds > s.loadBalancerDelay.toSeconds()
      ? 'the load-balancer minimum wait (loadBalancerMinWait)'
      : 'the load-balancer delay';
  if (s.launchTimeout.toSeconds() > longest.launch) {
    throw new Error(
      `launchTimeout ${s.launchTimeout.toSeconds()} s does not fit in the hooks' heartbeatTimeout ${heartbeat} s ` +
        `(the launch wait needs ${invocationMarginSeconds} s more to complete the action): shorten launchTimeout or ` +
        `lengthen heartbeatTimeout.`,
    );
  }
  if (s.drainTimeout.toSeconds() > longest.drain) {
    throw new Error(
      `drainTimeout ${s.drainTimeout.toSeconds()} s plus ${reserve} exceeds what Auto Scaling lets a ` +
        `lifecycle action live ` +
        `(min(48 h, 100 x heartbeatTimeout) = ${longest.cap} s): shorten drainTimeout or lengthen heartbeatTimeout.`,
    );
  }
  if (s.batchWait.toSeconds() > longest.batch) {
    throw new Error(
      `batchWait ${s.batchWait.toSeconds()} s plus drainTimeout and ${reserve} exceeds what Auto ` +
        `Scaling ` +
        `lets a lifecycle action live ` +
        `(${longest.cap} s): shorten batchWait or lengthen heartbeatTimeout.`,
    );
  }
}
