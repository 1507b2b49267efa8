// What the release template is synthesized from: the sentinels (release-sentinels.ts) over the
// base, and the dimensions, each a setting the base (the construct's defaults) changes under one
// condition.
import { DrainBehavior } from './drain-rule-props.js';
import { join } from 'node:path';
import {
  App,
  DefaultStackSynthesizer,
  Duration,
  RemovalPolicy,
  Stack,
  Validations,
  aws_ec2 as ec2,
  aws_iam as iam,
  aws_sns as sns,
} from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { addOutputs } from './app.js';
import {
  DeadlinePolicy,
  GracefulNodeTermination,
  type GracefulNodeTerminationProps,
} from './graceful-node-termination.js';
import { conditionNames as c } from './release-names.js';
import type { JsonObject } from './release-rewrite.js';
import type { Sentinels } from './release-sentinels.js';
import { subnetsOnlyVpc } from './options/operations-options.js';
import type { SurgeBeforeEvictProps } from './surge-props.js';
import type { TerminationPolicyOptions } from './termination-policy.js';

/**
 * A setting the release offers as a condition: the props that differ from the base's. The base
 * is the construct's defaults but for DeadlinePolicy.RETAIN and repair, whose InstancesRetained
 * and RepairsHeld alarms must be in the base so that the alarm-destination variants give them
 * their actions too.
 */
export const baseProps: Partial<GracefulNodeTerminationProps> = { deadlinePolicy: DeadlinePolicy.RETAIN, repair: {} };

export interface Dimension {
  /** Holds where the variant applies (release-parameters.ts defines it). */
  readonly condition: string;
  /** Holds where it does not, for resources only the base has. */
  readonly inverse?: string;
  /** Dimensions that never hold where `inverse` does (release-merge.ts). */
  readonly covers?: readonly string[];
  props(stack: Stack, s: Sentinels): Partial<GracefulNodeTerminationProps>;
}

/** Settings that change one or two things each: a variable, a statement, a rule, a resource attribute. */
const settingDimensions: readonly Dimension[] = [
  { condition: c.kubernetesGroup, props: (_, s) => ({ kubernetesGroup: s.kubernetesGroup }) },
  { condition: c.evictsDaemonSetPods, props: () => ({ evictDaemonSetPods: true }) },
  { condition: c.withoutSiblingCordon, props: () => ({ cordonDoomedSiblings: false }) },
  { condition: c.withoutOutOfService, inverse: c.outOfService, props: () => ({ outOfServiceAfterRelease: false }) },
  { condition: c.surges, props: (_, s) => ({ surgeBeforeEvict: surgeOf(s) }) },
  { condition: c.withoutRefreshMarks, inverse: c.marksRefreshes, props: () => ({ markOutdatedOnRefresh: false }) },
  { condition: c.reservedConcurrency, props: (_, s) => ({ reservedConcurrency: s.reservedConcurrency }) },
  { condition: c.retainsData, props: () => ({ removalPolicy: RemovalPolicy.RETAIN }) },
  {
    condition: c.serviceLinkedRole,
    props: (_, s) => ({ terminationPolicy: { ...terminationPolicyOf(s), serviceLinkedRoleArn: s.serviceLinkedRole } }),
  },
  { condition: c.runbook, props: (_, s) => ({ runbookUrl: s.runbookUrl }) },
];

/** Surge before evict over the sentinels: every sub-setting a parameter. */
export const surgeOf = (s: Sentinels): SurgeBeforeEvictProps => ({
  namespaces: [s.surgeNamespace],
  podSelector: s.surgePodSelector,
  timeout: Duration.seconds(s.surgeTimeout),
  untouchableManagers: [s.surgeManager],
});

export const terminationPolicyOf = (s: Sentinels): TerminationPolicyOptions => ({
  maximumDeferral: Duration.seconds(s.terminationDeferral),
  maintenanceWindows: [s.maintenanceWindow],
  maintenanceTimeZone: s.maintenanceTimeZone,
});

export const dimensions: readonly Dimension[] = [
  { condition: c.releases, inverse: c.retain, props: () => ({ deadlinePolicy: DeadlinePolicy.FORCE }) },
  {
    condition: c.alarmTopic,
    props: (stack, s) => ({ alarmTopic: sns.Topic.fromTopicArn(stack, 'AlarmTopic', s.alarmTopicArn) }),
  },
  { condition: c.alarmEmail, props: (_, s) => ({ alarmEmail: s.alarmEmail }) },
  { condition: c.inVpc, props: inVpc },
  { condition: c.withoutAccess, inverse: c.managesAccess, props: () => ({ manageKubernetesAccess: false }) },
  { condition: c.spot, props: () => ({ spotInterruptions: true }) },
  // Repair runs on the reconciler's schedule: without it, without repair (a rule says so).
  {
    condition: c.withoutReconciler,
    inverse: c.reconciles,
    props: () => ({ reconcileMarks: false, repair: undefined }),
  },
  // RepairsNodes holds only with the reconciler: what both drop is there under it.
  {
    condition: c.withoutRepair,
    inverse: c.repairs,
    covers: [c.withoutReconciler],
    props: () => ({ repair: undefined }),
  },
  { condition: c.withoutTargetWait, props: () => ({ waitForTargets: false }) },
  { condition: c.withoutVolumeWait, props: () => ({ waitForVolumeDetach: false }) },
  { condition: c.dashboard, props: () => ({ dashboard: true }) },
  {
    condition: c.boundary,
    props: (stack, s) => ({
      permissionsBoundary: iam.ManagedPolicy.fromManagedPolicyArn(stack, 'Boundary', s.permissionsBoundary),
    }),
  },
  ...settingDimensions,
];

/**
 * The two alarm destinations exclude each other (HasAlarmEmail requires no topic), and so do the two ways repair is
 * off.
 */
export const exclusive = (a: string, b: string): boolean =>
  [
    [c.alarmEmail, c.alarmTopic],
    [c.withoutReconciler, c.withoutRepair],
  ].some((pair) => [a, b].sort().join() === [...pair].sort().join());

function inVpc(stack: Stack, s: Sentinels): Partial<GracefulNodeTerminationProps> {
  const vpc = subnetsOnlyVpc(stack, s.subnets);
  const securityGroups = s.securityGroups.map((id, i) =>
    ec2.SecurityGroup.fromSecurityGroupId(stack, `SecurityGroup${i}`, id),
  );
  return { vpc, securityGroups };
}

export interface Synthesized {
  readonly template: JsonObject;
  /** The staged Lambda asset: the directory the release zips. */
  readonly assetDirectory: string;
  /** Its hash (CDK's, of the bundled output). */
  readonly assetHash: string;
}

/** The construct in a stack of its own, as `cdk synth` makes it, through cdk-nag, with `extra` over the sentinels. */
export function synthesize(s: Sentinels, extra: (stack: Stack) => Partial<GracefulNodeTerminationProps>): Synthesized {
  const app = new App({
    analyticsReporting: false,
    context: { 'aws:cdk:enable-path-metadata': false, 'aws:cdk:enable-asset-metadata': false },
  });
  const stack = new Stack(app, 'GracefulNodeTermination', {
    synthesizer: new DefaultStackSynthesizer({ generateBootstrapVersionRule: false }),
  });
  const construct = new GracefulNodeTermination(stack, 'GracefulNodeTermination', {
    clusterName: s.clusterName,
    autoScalingGroupNames: [...s.groups],
    deploymentName: s.deploymentName,
    heartbeatTimeout: Duration.seconds(s.heartbeatTimeout),
    drainTimeout: Duration.seconds(s.drainTimeout),
    loadBalancerDelay: Duration.seconds(s.loadBalancerDelay),
    launchTimeout: Duration.seconds(s.launchTimeout),
    batchWait: Duration.seconds(s.batchWait),
    loadBalancerMinWait: Duration.seconds(s.loadBalancerMinWait),
    loadBalancerMaxWait: Duration.seconds(s.loadBalancerMaxWait),
    reconcileInterval: Duration.minutes(s.reconcileIntervalMinutes),
    memorySizeMiB: s.memorySize,
    logRetention: s.logRetention,
    rolePath: s.rolePath,
    terminationPolicy: terminationPolicyOf(s),
    drainRules: [{ name: s.drainRule, behavior: DrainBehavior.SKIP }],
    minEvictionWindow: Duration.seconds(s.minEvictionWindow),
    evictionConcurrency: s.evictionConcurrency,
    loadBalancerTags: { [s.loadBalancerTag[0]]: s.loadBalancerTag[1] },
    // The template's users set the groups' instance lifecycle policy themselves (docs/cloudformation.md).
    retentionSetOutside: true,
    ...baseProps,
    ...extra(stack),
  });
  addOutputs(stack, construct);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const assembly = app.synth();
  const template = assembly.getStackByName(stack.stackName).template as JsonObject;
  const key = JSON.stringify(template).match(/"S3Key":"([0-9a-f]{64})\.zip"/)?.[1];
  if (key === undefined) throw new Error('release: the synthesized template references no Lambda asset');
  return { template, assetDirectory: join(assembly.directory, `asset.${key}`), assetHash: key };
}
