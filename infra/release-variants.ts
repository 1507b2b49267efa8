// What the release template is synthesized from: sentinel values for every parameter that is a
// value (two sets, each value found nowhere else in a template), and the dimensions, each a
// setting the base (the construct's defaults) changes under one condition.
import { DrainBehavior } from './drain-rule-props.js';
import { join } from 'node:path';
import {
  App,
  DefaultStackSynthesizer,
  Duration,
  Stack,
  Validations,
  aws_ec2 as ec2,
  aws_iam as iam,
  aws_logs as logs,
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

export interface Sentinels {
  readonly clusterName: string;
  readonly deploymentName: string;
  readonly groups: readonly [string, string];
  readonly heartbeatTimeout: number;
  readonly drainTimeout: number;
  readonly loadBalancerDelay: number;
  readonly launchTimeout: number;
  readonly batchWait: number;
  readonly loadBalancerMinWait: number;
  readonly loadBalancerMaxWait: number;
  readonly reconcileIntervalMinutes: number;
  readonly memorySize: number;
  readonly logRetention: logs.RetentionDays;
  readonly subnets: readonly [string, string];
  readonly securityGroups: readonly [string, string];
  readonly permissionsBoundary: string;
  readonly rolePath: string;
  readonly alarmTopicArn: string;
  readonly alarmEmail: string;
  readonly runbookUrl: string;
  readonly terminationDeferral: number;
  readonly maintenanceWindow: string;
  readonly maintenanceTimeZone: string;
  readonly drainRule: string;
}

export const sentinelSets: readonly [Sentinels, Sentinels] = [
  {
    clusterName: 'gntclusteralpha',
    deploymentName: 'gntdeployalpha',
    groups: ['gntgroupalpha', 'gntgroupbravo'],
    heartbeatTimeout: 3517,
    drainTimeout: 1213,
    loadBalancerDelay: 47,
    launchTimeout: 613,
    batchWait: 7211,
    loadBalancerMinWait: 23,
    loadBalancerMaxWait: 277,
    reconcileIntervalMinutes: 37,
    memorySize: 389,
    logRetention: logs.RetentionDays.EIGHTEEN_MONTHS,
    subnets: ['subnet-0a1a0000000000a01', 'subnet-0a1a0000000000a02'],
    securityGroups: ['sg-0a1a0000000000a01', 'sg-0a1a0000000000a02'],
    permissionsBoundary: 'arn:aws:iam::111111111111:policy/gntboundaryalpha',
    rolePath: '/gntpathalpha/',
    alarmTopicArn: 'arn:aws:sns:us-east-1:111111111111:gntalarmsalpha',
    alarmEmail: 'gntalpha@example.com',
    runbookUrl: 'https://gntrunbookalpha.example/ops',
    terminationDeferral: 293,
    maintenanceWindow: '17 3 * * TUE for 97m',
    maintenanceTimeZone: 'Pacific/Chatham',
    drainRule: 'gntrulealpha',
  },
  {
    clusterName: 'gntclustercharlie',
    deploymentName: 'gntdeploycharlie',
    groups: ['gntgroupcharlie', 'gntgroupdelta'],
    // Long enough for a reconciler every 41 minutes (the cold start and the synth check the pair).
    heartbeatTimeout: 3601,
    drainTimeout: 1109,
    loadBalancerDelay: 53,
    launchTimeout: 587,
    batchWait: 7307,
    loadBalancerMinWait: 29,
    loadBalancerMaxWait: 281,
    reconcileIntervalMinutes: 41,
    memorySize: 421,
    logRetention: logs.RetentionDays.SEVEN_YEARS,
    subnets: ['subnet-0c4c0000000000c01', 'subnet-0c4c0000000000c02'],
    securityGroups: ['sg-0c4c0000000000c01', 'sg-0c4c0000000000c02'],
    permissionsBoundary: 'arn:aws:iam::222222222222:policy/gntboundarycharlie',
    rolePath: '/gntpathcharlie/',
    alarmTopicArn: 'arn:aws:sns:us-east-1:222222222222:gntalarmscharlie',
    alarmEmail: 'gntcharlie@example.com',
    runbookUrl: 'https://gntrunbookcharlie.example/ops',
    terminationDeferral: 307,
    maintenanceWindow: '19 5 * * THU for 83m',
    maintenanceTimeZone: 'America/St_Johns',
    drainRule: 'gntrulecharlie',
  },
];

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
];

/** The two alarm destinations exclude each other (HasAlarmEmail requires no topic), and so do the two ways repair is off. */
export const exclusive = (a: string, b: string): boolean =>
  [
    [c.alarmEmail, c.alarmTopic],
    [c.withoutReconciler, c.withoutRepair],
  ].some((pair) => [a, b].sort().join() === [...pair].sort().join());

function inVpc(stack: Stack, s: Sentinels): Partial<GracefulNodeTerminationProps> {
  const vpc = ec2.Vpc.fromVpcAttributes(stack, 'Vpc', {
    vpcId: 'vpc-0release',
    availabilityZones: ['az-a', 'az-b'],
    privateSubnetIds: [...s.subnets],
  });
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
    runbookUrl: s.runbookUrl,
    terminationPolicy: {
      maximumDeferral: Duration.seconds(s.terminationDeferral),
      maintenanceWindows: [s.maintenanceWindow],
      maintenanceTimeZone: s.maintenanceTimeZone,
    },
    drainRules: [{ name: s.drainRule, behavior: DrainBehavior.SKIP }],
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
