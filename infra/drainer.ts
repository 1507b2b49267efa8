// The drainer: its log group, role and function, built in the construct's own scope (their
// logical IDs are the construct's oldest public contract), with the environment the handler
// parses and the least it needs from IAM.
import { drainRuleSpecs } from './drain-rule-props.js';
import {
  Duration,
  Lazy,
  aws_iam as iam,
  aws_kms as kms,
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
import {
  acknowledgeNag,
  checkovLambdaReasons,
  kmsGrantReason,
  skipCheckov,
  vpcAccessReason,
  vpcAccessRule,
} from './nag.js';
import type { GracefulNodeTerminationProps } from './props.js';
import type { Settings, VpcPlacement } from './settings.js';
import { allowTerminationPolicyCalls, terminationPolicyEnvironment } from './termination-policy.js';
import { surgeEnvironment } from './surge-props.js';
import { grantUnscopedReads } from './unscoped-reads.js';

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
  /** Encrypts the log group (notifications.ts lets CloudWatch Logs use it). */
  readonly key: kms.IKey;
}

export interface Drainer {
  readonly logGroup: logs.LogGroup;
  readonly role: iam.Role;
  readonly function: lambda.Function;
}

export function createDrainer(scope: Construct, o: DrainerOptions): Drainer {
  const { settings } = o;
  const logGroup = new logs.LogGroup(scope, 'Logs', {
    encryptionKey: o.key,
    retention: settings.logRetention,
    removalPolicy: settings.removalPolicy,
  });
  const role = new iam.Role(scope, 'Role', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description:
      `Graceful node termination for ${settings.clusterName}: completes lifecycle actions, reads the ` +
      `cluster endpoint`,
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
  skipDrainerChecks(fn);
  acknowledgeNag(role, 'IAM5[Action::kms:GenerateDataKey*]', kmsGrantReason);
  acknowledgeNag(role, 'IAM5[Action::kms:ReEncrypt*]', kmsGrantReason);
  return { logGroup, role, function: fn };
}

/** checkov's Lambda findings that do not apply to the drainer, each with its reason (docs/security.md). */
function skipDrainerChecks(fn: lambda.Function): void {
  skipCheckov(
    fn,
    'CKV_AWS_116',
    'Its asynchronous invocations (SNS, EventBridge) have an on-failure destination, the encrypted failed-' +
      'notifications queue (AWS::Lambda::EventInvokeConfig), which keeps the whole record where a DLQ keeps the event.',
  );
  skipCheckov(
    fn,
    'CKV_AWS_115',
    "Reserved concurrency is the deployer's (reservedConcurrency, ReservedConcurrency): unreserved by default, so " +
      "a mass termination draws on the account's pool instead of a reservation taken from every other function.",
  );
  for (const [id, comment] of Object.entries(checkovLambdaReasons)) skipCheckov(fn, id, comment);
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
