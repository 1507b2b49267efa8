// The drainer: its log group, role and function, built in the construct's own scope (their
// logical IDs are the construct's oldest public contract), with the environment the handler
// parses and the least it needs from IAM.
import { drainRuleSpecs } from './drain-rule-props.js';
import {
  Duration,
  Lazy,
  Stack,
  aws_iam as iam,
  aws_lambda as lambda,
  aws_lambda_destinations as destinations,
  aws_lambda_event_sources as sources,
  aws_logs as logs,
  aws_sns as sns,
  aws_sqs as sqs,
} from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { toEnvironment } from '../lambda/shared/config.js';
import { lambdaHandlers } from './handlers.js';
import { acknowledgeNag, kmsGrantReason, vpcAccessReason, vpcAccessRule } from './nag.js';
import type { GracefulNodeTerminationProps } from './props.js';
import type { Settings, VpcPlacement } from './settings.js';
import { allowTerminationPolicyCalls, terminationPolicyEnvironment } from './termination-policy.js';
import { surgeEnvironment } from './surge-props.js';

export interface DrainerOptions {
  readonly settings: Settings;
  readonly props: GracefulNodeTerminationProps;
  /** The hooks' topic: notifications arrive through it, hand-offs go back into it. */
  readonly topic: sns.ITopic;
  readonly failedNotifications: sqs.IQueue;
  /** The served groups; read at synthesis, after every addAutoScalingGroup. */
  readonly groupNames: readonly string[];
  readonly clusterArn: string;
  readonly code: lambda.Code;
}

export interface Drainer {
  readonly logGroup: logs.LogGroup;
  readonly role: iam.Role;
  readonly function: lambda.Function;
}

export function createDrainer(scope: Construct, o: DrainerOptions): Drainer {
  const { settings } = o;
  const logGroup = new logs.LogGroup(scope, 'Logs', {
    retention: settings.logRetention,
    removalPolicy: settings.removalPolicy,
  });
  const role = new iam.Role(scope, 'Role', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: `Graceful node termination for ${settings.clusterName}: completes lifecycle actions, reads the cluster endpoint`,
  });
  grantLogs(role, logGroup);
  grantVpcAccess(role, settings.vpcPlacement);
  // Hand-offs: a drain longer than one invocation continues through the topic, and the
  // reconciler resumes a drain whose hand-off was lost the same way.
  o.topic.grantPublish(role);
  role.addToPolicy(new iam.PolicyStatement({ actions: ['eks:DescribeCluster'], resources: [o.clusterArn] }));
  const fn = new lambda.Function(scope, 'Function', {
    description: `Drains nodes of ${settings.clusterName} before Auto Scaling terminates them`,
    runtime: lambda.Runtime.NODEJS_24_X,
    architecture: lambda.Architecture.ARM_64,
    code: o.code,
    handler: lambdaHandlers.drainer,
    role,
    logGroup,
    // A drain may take minutes; the handler keeps a margin to complete the action itself.
    timeout: Duration.minutes(15),
    memorySize: o.props.memorySizeMiB ?? 256,
    environment: drainerEnvironment(o),
    // SNS invokes asynchronously: two retries, then the notification is kept in the queue.
    retryAttempts: 2,
    // A notification still queued after the hooks' heartbeatTimeout is moot: Auto Scaling has
    // applied DefaultResult already (every invocation heartbeats first, hand-offs included).
    // It goes to the failed-notifications queue instead of running late. Lambda: 60 s to 6 h.
    maxEventAge: Duration.seconds(Math.min(21_600, Math.max(60, settings.heartbeatTimeout.toSeconds()))),
    reservedConcurrentExecutions: o.props.reservedConcurrency,
    onFailure: new destinations.SqsDestination(o.failedNotifications),
    ...settings.vpcPlacement,
  });
  fn.addEventSource(new sources.SnsEventSource(o.topic));
  allowTerminationPolicyCalls(fn, o.props.terminationPolicy);
  grantUnscopedReads(role, settings);
  acknowledgeNag(role, 'IAM5[Action::kms:GenerateDataKey*]', kmsGrantReason);
  acknowledgeNag(role, 'IAM5[Action::kms:ReEncrypt*]', kmsGrantReason);
  return { logGroup, role, function: fn };
}

/** What the handler parses at cold start (lambda/shared/config.ts), from the same definitions. */
function drainerEnvironment({ settings: s, props, topic, groupNames }: DrainerOptions): Record<string, string> {
  return {
    ...toEnvironment({
      clusterName: s.clusterName,
      // Resolved at synthesis, after addAutoScalingGroup calls.
      autoScalingGroupNames: [Lazy.string({ produce: () => groupNames.join(',') })],
      lifecycleHookNames: [s.hookNames.launch, s.hookNames.terminate],
      drainTimeoutSeconds: s.drainTimeout.toSeconds(),
      loadBalancerDelaySeconds: s.loadBalancerDelay.toSeconds(),
      waitForTargets: s.waitForTargets,
      loadBalancerMinWaitSeconds: props.loadBalancerMinWait?.toSeconds(),
      loadBalancerMaxWaitSeconds: props.loadBalancerMaxWait?.toSeconds(),
      loadBalancerTags: props.loadBalancerTags,
      waitForVolumeDetach: props.waitForVolumeDetach,
      evictionConcurrency: props.evictionConcurrency,
      launchTimeoutSeconds: s.launchTimeout.toSeconds(),
      minEvictionWindowSeconds: props.minEvictionWindow?.toSeconds(),
      cordonDoomedSiblings: s.cordonDoomedSiblings,
      markOutdatedOnRefresh: s.markOutdatedOnRefresh,
      // Written either way: a deployment that did not ask for Spot draining refuses warnings.
      spotInterruptions: s.spotInterruptions,
      batchWaitSeconds: s.batchWait.toSeconds(),
      deadlinePolicy: s.deadlinePolicy,
      mode: s.mode,
      heartbeatTimeoutSeconds: s.heartbeatTimeout.toSeconds(),
      // Drains longer than one invocation continue through the same topic.
      handOffTopicArn: topic.topicArn,
      // The owner named on every mark, so the reconciler takes back only its own.
      deploymentName: s.deploymentName,
      reconcileMarks: s.reconcileMarks,
      // The cold start checks the schedule against the heartbeat timeout, as the synth did.
      reconcileIntervalMinutes: s.reconcileMarks ? s.reconcileInterval.toMinutes() : undefined,
      ...terminationPolicyEnvironment(props.terminationPolicy),
      ...surgeEnvironment(props.surgeBeforeEvict),
      outOfServiceAfterRelease: props.outOfServiceAfterRelease,
      repair: s.repair,
      drainRules: drainRuleSpecs(props.drainRules),
      evictDaemonSetPods: props.evictDaemonSetPods,
    }),
    // The `service` of every log line and metric: the alarms count only this deployment's.
    POWERTOOLS_SERVICE_NAME: s.deploymentName,
  };
}

/**
 * Reads that IAM cannot scope to a resource (the Service Authorization Reference lists none
 * for them), so "*", limited to this stack's region (aws:RequestedRegion, the only condition
 * they take). The handler only ever asks about its own groups and refuses instances of others.
 * - ec2:DescribeInstances: the instance's private DNS name, its node's name, so a lookup is one
 *   GET and not a list of the cluster.
 * - ec2:DescribeLaunchTemplates (refresh marks): which nodes a refresh replaces.
 * - ec2:DescribeSpotInstanceRequests (Spot interruptions): whether EC2 gave the instance notice;
 *   a Spot warning is believed only then (DescribeInstances says whether it is Spot at all).
 * - autoscaling:DescribeAutoScalingGroups: the group's other terminating instances (sibling
 *   cordoning), a refresh's launch template (refresh marks), the groups' tags (reconciler).
 * - autoscaling:DescribeInstanceRefreshes: whether a refresh is still on (refresh marks, reconciler).
 * - autoscaling:DescribeAutoScalingInstances: always; a launch checks whether its instance is on
 *   its way back, a Spot warning names only the instance, the reconciler asks who owns a mark.
 * - elasticloadbalancing:Describe* (waitForTargets), five of them: which target groups and
 *   Classic Load Balancers are the cluster's (DescribeTargetGroups, DescribeLoadBalancers,
 *   DescribeTags) and whether they still hold the instance (DescribeTargetHealth,
 *   DescribeInstanceHealth). Nothing that registers or deregisters.
 */
function grantUnscopedReads(role: iam.Role, s: Settings): void {
  const refreshReads = s.markOutdatedOnRefresh || s.reconcileMarks;
  const actions = [
    'ec2:DescribeInstances',
    ...(s.markOutdatedOnRefresh ? ['ec2:DescribeLaunchTemplates'] : []),
    ...(s.spotInterruptions ? ['ec2:DescribeSpotInstanceRequests'] : []),
    ...(refreshReads || s.cordonDoomedSiblings ? ['autoscaling:DescribeAutoScalingGroups'] : []),
    ...(refreshReads ? ['autoscaling:DescribeInstanceRefreshes'] : []),
    'autoscaling:DescribeAutoScalingInstances',
    ...(s.waitForTargets
      ? [
          'elasticloadbalancing:DescribeTargetGroups',
          'elasticloadbalancing:DescribeTargetHealth',
          'elasticloadbalancing:DescribeLoadBalancers',
          'elasticloadbalancing:DescribeInstanceHealth',
          'elasticloadbalancing:DescribeTags',
        ]
      : []),
  ];
  role.addToPolicy(
    new iam.PolicyStatement({
      sid: 'ReadsWithoutResourceScope',
      actions,
      resources: ['*'],
      conditions: { StringEquals: { 'aws:RequestedRegion': Stack.of(role).region } },
    }),
  );
  acknowledgeNag(
    role,
    'IAM5[Resource::*]',
    `${actions.join(', ')}: read-only actions with no resource-level permissions in IAM, limited to this region; the handler asks only about its own groups and refuses instances of others.`,
  );
}

export function grantLogs(role: iam.Role, logGroup: logs.ILogGroup): void {
  role.addToPolicy(
    new iam.PolicyStatement({
      actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      resources: [logGroup.logGroupArn],
    }),
  );
}

/**
 * In a VPC, Lambda manages the function's network interfaces with its execution role, and
 * CreateFunction fails without these rights. CDK adds them only to roles it creates itself, so
 * our own roles get them here, only with `vpc`: on the role itself (ManagedPolicyArns), which
 * the function references, so CloudFormation attaches it before it creates the function.
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-vpc.html#configuration-vpc-permissions
 */
export function grantVpcAccess(role: iam.Role, placement: VpcPlacement): void {
  if (!placement.vpc) return;
  role.addManagedPolicy(iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaVPCAccessExecutionRole'));
  acknowledgeNag(role, vpcAccessRule, vpcAccessReason);
}
