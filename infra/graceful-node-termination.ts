// The construct: launch and terminate lifecycle hooks on existing self-managed node groups,
// one encrypted SNS topic, the drainer Lambda, its Kubernetes access, and alarms.
import { createHash } from 'node:crypto';
import {
  ArnFormat,
  AssetHashType,
  CfnElement,
  CustomResource,
  DockerImage,
  Duration,
  Annotations,
  Lazy,
  RemovalPolicy,
  Stack,
  Token,
  Validations,
  aws_autoscaling as autoscaling,
  aws_cloudwatch as cloudwatch,
  aws_cloudwatch_actions as cloudwatchActions,
  aws_ec2 as ec2,
  aws_eks as eks,
  aws_events as events,
  aws_events_targets as eventTargets,
  aws_iam as iam,
  aws_kms as kms,
  aws_lambda as lambda,
  aws_lambda_destinations as destinations,
  aws_lambda_event_sources as sources,
  aws_logs as logs,
  aws_sns as sns,
  aws_sns_subscriptions as subscriptions,
  aws_sqs as sqs,
  type ILocalBundling,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configVariables, toEnvironment, type DeadlinePolicy } from '../lambda/config.js';
import { deploymentNamePattern, rbacName, renderRbacYaml } from '../lambda/rbac.js';
import { drainTimedOutMessage, instanceRetainedMessage } from '../lambda/termination/drain.js';
import { launchAbandonedMessage, launchUncheckedMessage } from '../lambda/admit-node.js';
import { bundleLambda, lambdaHandlers } from './bundling.js';
import { actionCapSeconds } from '../lambda/handler.js';
import { metricsNamespace } from '../lambda/adapters/emf-metrics.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');


export interface GracefulNodeTerminationProps {
  /** Name of the EKS cluster the node groups join. */
  readonly clusterName: string;
  /**
   * Existing Auto Scaling groups, by name (eksctl, Terraform, CloudFormation groups).
   * @default - none; pass groups here, in `autoScalingGroups`, or with `addAutoScalingGroup`
   */
  readonly autoScalingGroupNames?: readonly string[];
  /**
   * Auto Scaling groups defined in or imported into this CDK app.
   * @default - none
   */
  readonly autoScalingGroups?: readonly autoscaling.IAutoScalingGroup[];
  /**
   * How long Auto Scaling waits for the handler before applying CONTINUE on its own.
   * EKS managed node groups use 30 minutes. Between 30 seconds and 2 hours. The handler
   * heartbeats and hands long drains on before it runs out; a lifecycle action lives at most
   * min(48 h, 100 x heartbeatTimeout).
   * @default Duration.minutes(30)
   */
  readonly heartbeatTimeout?: Duration;
  /**
   * Longest time spent evicting and waiting for pods before completing anyway, measured
   * from the notification. Drains longer than one invocation continue in fresh ones.
   * @default Duration.minutes(15)
   */
  readonly drainTimeout?: Duration;
  /**
   * Wait after the drain so load balancers deregister the node. EKS waits 60 seconds.
   * @default Duration.seconds(60)
   */
  readonly loadBalancerDelay?: Duration;
  /**
   * With `deadlinePolicy: 'retain'` and groups given by name: their instance lifecycle policy
   * is already set to retain on ABANDON (the construct cannot set it on a group it does not
   * define). Without that policy an ABANDON terminates the instance like CONTINUE.
   * @default false
   */
  readonly retentionSetOutside?: boolean;
  /**
   * What happens to pods still on the node at the drain deadline: 'force' deletes each at
   * the deadline minus its grace period (bypassing its PodDisruptionBudget, grace clamped to
   * the deadline), as managed node groups and Karpenter do; 'leave' lets them die with the
   * instance; 'retain' deletes nothing and completes with ABANDON, so the group keeps the
   * instance cordoned (its instance lifecycle policy must retain on ABANDON: set here for groups
   * of this app, see retentionSetOutside; without it ABANDON terminates like CONTINUE).
   * @default 'force'
   */
  readonly deadlinePolicy?: DeadlinePolicy;
  /**
   * How long pods of Jobs and pods annotated `karpenter.sh/do-not-disrupt: "true"` (or
   * `graceful-node-termination/wait-for-completion: "true"`) may run to completion before
   * they are evicted. Zero evicts them at once, as managed node groups do.
   * @default Duration.hours(1)
   */
  readonly batchWait?: Duration;
  /**
   * Every pod gets at least this long to be evicted, from when the drain first saw the node,
   * before the 'force' policy may delete it; the drain deadline moves out to fit it (a
   * notification that waited in Lambda's queue still gets a fair drain), within the action's cap.
   * @default Duration.seconds(60)
   */
  readonly minEvictionWindow?: Duration;
  /**
   * Before the first eviction, label and cordon the nodes of the group's other instances in
   * Terminating or Terminating:Wait, so a pod evicted from one doomed node never lands on
   * another (each sibling's own drain adopts those marks). Needs
   * autoscaling:DescribeAutoScalingGroups, which IAM cannot scope to groups.
   * @default true
   */
  readonly cordonDoomedSiblings?: boolean;
  /**
   * When an instance refresh of a served group starts, taint the nodes not on its desired
   * launch template version PreferNoSchedule (cordon them when `upgrade --strategy minimal`
   * started it) so each pod moves once, and take exactly those marks back when it ends. Adds
   * an EventBridge rule for the groups' refresh events and the reads it needs.
   * @default true
   */
  readonly markOutdatedOnRefresh?: boolean;
  /**
   * How long a new node has to join Ready without startup taints before its launch is
   * abandoned (the group then replaces the instance). At most the function timeout minus
   * the invocation margin, and it must fit in the hooks' heartbeatTimeout (the launch wait
   * does not heartbeat).
   * @default - Duration.minutes(10), or the heartbeatTimeout less 20 s when that is shorter
   */
  readonly launchTimeout?: Duration;
  /**
   * Reserved concurrency for the drainer. A mass termination then neither waits for other
   * functions of the account (notifications queue while concurrency is exhausted) nor starves
   * them. Size it for the most instances terminating at once, plus launches.
   * @default - unreserved: the account's shared pool
   */
  readonly reservedConcurrency?: number;
  /**
   * Evictions in flight at once for one node.
   * @default 32
   */
  readonly evictionConcurrency?: number;
  /**
   * Memory of the drainer function, in MiB. A 110-pod drain peaks at about 88 MiB resident
   * (`npm run bench`); 256 also buys twice the CPU of 128 for the cold start.
   * @default 256
   */
  readonly memorySizeMiB?: number;
  /**
   * This deployment's name: its ClusterRole, ClusterRoleBinding, default Kubernetes group,
   * hook names (`<name>-launch`, `<name>-terminate`) and the `service` of its logs and metrics.
   * Two deployments for one cluster (two teams, two stacks) then never share or delete each
   * other's objects. A DNS label.
   * @default - `graceful-node-termination-` and 8 hex digits of a hash of the stack name and this construct's path
   */
  readonly deploymentName?: string;
  /**
   * Kubernetes group the drainer's role is mapped to; this deployment's ClusterRole is bound to it.
   * @default - the deployment name
   */
  readonly kubernetesGroup?: string;
  /**
   * Create EKS access entries and install the ClusterRole and ClusterRoleBinding during
   * deployment. Requires the cluster's authentication mode to be API or
   * API_AND_CONFIG_MAP. Set to false for aws-auth clusters and apply
   * infra/kubernetes/rbac.yaml yourself (README, "Clusters on aws-auth").
   * @default true
   */
  readonly manageKubernetesAccess?: boolean;
  /**
   * Where alarms are sent.
   * @default - alarms are created without actions
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * Where alarms are sent by email: the construct creates an encrypted alarm topic with this
   * subscription (confirm the email AWS sends). Without this or `alarmTopic`, the synth warns:
   * alarms nobody receives protect nobody.
   * @default - none
   */
  readonly alarmEmail?: string;
  /**
   * Drain on EC2 Spot interruption warnings (two minutes' notice, no lifecycle action) and
   * count rebalance recommendations: EventBridge rules for `EC2 Spot Instance Interruption
   * Warning` and `EC2 Instance Rebalance Recommendation` invoke the function. Only instances of
   * the configured groups are drained (the function asks Auto Scaling which group an instance
   * is in). Off by default: groups without Spot capacity need none of it.
   * @default false
   */
  readonly spotInterruptions?: boolean;
  /**
   * Place the functions in this VPC (private cluster endpoints). The subnets then need a
   * route to the cluster endpoint and to the autoscaling, eks and sns APIs (NAT or VPC
   * endpoints; sns carries the hand-offs of long drains; the README lists every route), and the
   * cluster security group must admit the functions' security group on 443.
   * @default - not in a VPC
   */
  readonly vpc?: ec2.IVpc;
  /**
   * Subnets for the functions, when `vpc` is set.
   * @default - the VPC's private subnets
   */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /**
   * Security groups for the functions, when `vpc` is set.
   * @default - one security group with all outbound traffic allowed
   */
  readonly securityGroups?: readonly ec2.ISecurityGroup[];
  /**
   * How long the functions' logs are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
}


/**
 * Gives self-managed node groups the graceful termination of EKS managed node groups:
 * label, cordon, evict (PodDisruptionBudgets hold), wait for load balancers, then let the
 * instance go.
 */
export class GracefulNodeTermination extends Construct {
  /** The topic both lifecycle hooks of every group notify. */
  readonly topic: sns.Topic;
  /** The drainer. */
  readonly function: lambda.Function;
  /** The drainer's role: the IAM principal mapped to the Kubernetes group. */
  readonly role: iam.Role;
  /** Notifications the function could not process after its retries. */
  readonly failedNotifications: sqs.Queue;
  /** Alarms: function errors, failed notifications, drains that hit their deadline. */
  readonly alarms: readonly cloudwatch.Alarm[];

  private readonly groupNames: string[] = [];
  /**
   * What must exist before a hook may fire: the topic's subscription, the access entries and
   * the RBAC custom resource. A termination during the first deploy must reach a drainer that
   * can act. Filled as the constructor builds them; every hook depends on all of them.
   */
  private readonly hookPrerequisites: Construct[] = [];
  private readonly hooks: autoscaling.CfnLifecycleHook[] = [];
  private readonly deadlinePolicy: DeadlinePolicy;
  private readonly retentionSetOutside: boolean;
  /** This deployment's name (see the deploymentName prop). */
  readonly deploymentName: string;
  private readonly hookNames: { readonly launch: string; readonly terminate: string };
  private readonly clusterName: string;
  private readonly heartbeatTimeout: Duration;
  private readonly hookRole: iam.Role;
  private readonly groupPolicy: iam.Policy;

  constructor(scope: Construct, id: string, props: GracefulNodeTerminationProps) {
    super(scope, id);
    const stack = Stack.of(this);
    validateProps(props);
    this.clusterName = props.clusterName;
    this.deadlinePolicy = props.deadlinePolicy ?? 'force';
    this.deploymentName =
      props.deploymentName ?? `${rbacName}-${createHash('sha256').update(`${stack.stackName}/${this.node.path}`).digest('hex').slice(0, 8)}`;
    this.hookNames = { launch: `${this.deploymentName}-launch`, terminate: `${this.deploymentName}-terminate` };
    this.retentionSetOutside = props.retentionSetOutside ?? false;
    this.heartbeatTimeout = props.heartbeatTimeout ?? defaultSeconds(configVariables.heartbeatTimeoutSeconds);
    const drainTimeout = props.drainTimeout ?? defaultSeconds(configVariables.drainTimeoutSeconds);
    const loadBalancerDelay = props.loadBalancerDelay ?? defaultSeconds(configVariables.loadBalancerDelaySeconds);
    const kubernetesGroup = props.kubernetesGroup ?? this.deploymentName;
    const functionTimeout = Duration.minutes(15);
    const retention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const batchWait = props.batchWait ?? defaultSeconds(configVariables.batchWaitSeconds);
    const capSeconds = actionCapSeconds(this.heartbeatTimeout.toSeconds());
    // The handler keeps this much of an invocation free to complete the action.
    const marginSeconds = configVariables.invocationMarginSeconds.default!;
    // The launch wait runs on the timer Auto Scaling starts at the notification and does not
    // heartbeat: it must end (ABANDON or CONTINUE) before the hook's DefaultResult would.
    const launchTimeout =
      props.launchTimeout ?? Duration.seconds(Math.min(configVariables.launchTimeoutSeconds.default!, this.heartbeatTimeout.toSeconds() - marginSeconds));
    if (launchTimeout.toSeconds() + marginSeconds > this.heartbeatTimeout.toSeconds()) {
      throw new Error(
        `launchTimeout ${launchTimeout.toSeconds()} s does not fit in the hooks' heartbeatTimeout ${this.heartbeatTimeout.toSeconds()} s ` +
          `(the launch wait needs ${marginSeconds} s more to complete the action): shorten launchTimeout or lengthen heartbeatTimeout.`,
      );
    }
    if (drainTimeout.toSeconds() + loadBalancerDelay.toSeconds() + marginSeconds > capSeconds) {
      throw new Error(
        `drainTimeout ${drainTimeout.toSeconds()} s plus the load-balancer delay exceeds what Auto Scaling lets a lifecycle action live ` +
          `(min(48 h, 100 x heartbeatTimeout) = ${capSeconds} s): shorten drainTimeout or lengthen heartbeatTimeout.`,
      );
    }
    if (batchWait.toSeconds() + drainTimeout.toSeconds() + loadBalancerDelay.toSeconds() + marginSeconds > capSeconds) {
      throw new Error(
        `batchWait ${batchWait.toSeconds()} s plus drainTimeout and the load-balancer delay exceeds what Auto Scaling lets a lifecycle action live ` +
          `(${capSeconds} s): shorten batchWait or lengthen heartbeatTimeout.`,
      );
    }

    const key = new kms.Key(this, 'Key', {
      description: `Encrypts the lifecycle notifications and failed notifications of ${id}`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.topic = new sns.Topic(this, 'Topic', { masterKey: key, enforceSSL: true, displayName: 'Node group lifecycle notifications' });

    // Auto Scaling assumes this role to publish the hooks' notifications.
    this.hookRole = new iam.Role(this, 'HookRole', {
      assumedBy: new iam.ServicePrincipal('autoscaling.amazonaws.com'),
      description: 'Lets the lifecycle hooks publish to the graceful node termination topic',
    });
    this.topic.grantPublish(this.hookRole);

    this.failedNotifications = new sqs.Queue(this, 'FailedNotifications', {
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });

    const logGroup = new logs.LogGroup(this, 'Logs', { retention, removalPolicy: RemovalPolicy.DESTROY });
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Graceful node termination for ${props.clusterName}: completes lifecycle actions, reads the cluster endpoint`,
    });
    grantLogs(this.role, logGroup);
    // Only the hook role (notifications) and the drainer (its own hand-offs) may publish: a
    // forged notification must not reach the drainer.
    this.topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'PublishOnlyByTheHookRole',
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: { ArnNotEquals: { 'aws:PrincipalArn': [this.hookRole.roleArn, this.role.roleArn] } },
      }),
    );
    this.topic.grantPublish(this.role);
    const clusterArn = stack.formatArn({ service: 'eks', resource: 'cluster', resourceName: props.clusterName });
    this.role.addToPolicy(new iam.PolicyStatement({ actions: ['eks:DescribeCluster'], resources: [clusterArn] }));
    this.groupPolicy = new iam.Policy(this, 'LifecyclePolicy', {
      statements: [
        new iam.PolicyStatement({
          actions: ['autoscaling:CompleteLifecycleAction', 'autoscaling:RecordLifecycleActionHeartbeat'],
          resources: Lazy.list({ produce: () => this.groupNames.map((name) => groupArn(stack, name)) }),
        }),
      ],
    });
    this.role.attachInlinePolicy(this.groupPolicy);

    const vpcConfig = props.vpc
      ? { vpc: props.vpc, vpcSubnets: props.vpcSubnets, securityGroups: props.securityGroups ? [...props.securityGroups] : undefined }
      : {};
    const code = lambdaCode();

    this.function = new lambda.Function(this, 'Function', {
      description: `Drains nodes of ${props.clusterName} before Auto Scaling terminates them`,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      code,
      handler: lambdaHandlers.drainer,
      role: this.role,
      logGroup,
      // A drain may take minutes; the handler keeps a margin to complete the action itself.
      timeout: functionTimeout,
      memorySize: props.memorySizeMiB ?? 256,
      environment: {
        ...toEnvironment({
          clusterName: props.clusterName,
          // Resolved at synthesis, after addAutoScalingGroup calls.
          autoScalingGroupNames: [Lazy.string({ produce: () => this.groupNames.join(',') })],
          lifecycleHookNames: [this.hookNames.launch, this.hookNames.terminate],
          drainTimeoutSeconds: drainTimeout.toSeconds(),
          loadBalancerDelaySeconds: loadBalancerDelay.toSeconds(),
          evictionConcurrency: props.evictionConcurrency,
          launchTimeoutSeconds: launchTimeout.toSeconds(),
          minEvictionWindowSeconds: props.minEvictionWindow?.toSeconds(),
          cordonDoomedSiblings: props.cordonDoomedSiblings,
          markOutdatedOnRefresh: props.markOutdatedOnRefresh,
          batchWaitSeconds: batchWait.toSeconds(),
          deadlinePolicy: this.deadlinePolicy,
          heartbeatTimeoutSeconds: this.heartbeatTimeout.toSeconds(),
          // Drains longer than one invocation continue through the same topic.
          handOffTopicArn: this.topic.topicArn,
        }),
        POWERTOOLS_SERVICE_NAME: this.deploymentName,
      },
      // SNS invokes asynchronously: two retries, then the notification is kept in the queue.
      retryAttempts: 2,
      // A notification still queued after the hooks' heartbeatTimeout is moot: Auto Scaling has
      // applied DefaultResult already (every invocation heartbeats first, hand-offs included).
      // It goes to the failed-notifications queue instead of running late. Lambda: 60 s to 6 h.
      maxEventAge: Duration.seconds(Math.min(21_600, Math.max(60, this.heartbeatTimeout.toSeconds()))),
      reservedConcurrentExecutions: props.reservedConcurrency,
      onFailure: new destinations.SqsDestination(this.failedNotifications),
      ...vpcConfig,
    });
    this.function.addEventSource(new sources.SnsEventSource(this.topic));
    this.requireBeforeHooks(...this.function.node.findAll().filter((c) => c instanceof sns.Subscription));

    for (const name of props.autoScalingGroupNames ?? []) this.addAutoScalingGroup(name);
    for (const group of props.autoScalingGroups ?? []) this.addAutoScalingGroup(group);
    this.node.addValidation({
      validate: () =>
        this.groupNames.length === 0
          ? ['GracefulNodeTermination has no Auto Scaling group: pass autoScalingGroupNames or autoScalingGroups, or call addAutoScalingGroup()']
          : [],
    });

    if (props.manageKubernetesAccess ?? true) {
      this.installKubernetesAccess({ clusterArn, kubernetesGroup, code, retention, vpcConfig });
    }

    // Reads that IAM cannot scope to a resource (the Service Authorization Reference lists
    // none for them), so "*", limited to this stack's region (aws:RequestedRegion, the only
    // condition they take). ec2:DescribeInstances: the instance's private DNS name, which
    // is its node's name, so a lookup is one GET and not a list of the cluster.
    // DescribeAutoScalingGroups: the group's other terminating instances (sibling cordoning).
    // DescribeAutoScalingInstances: Spot warnings name only the instance. The handler only
    // ever asks about its own groups and refuses instances of others.
    // DescribeInstanceRefreshes and DescribeLaunchTemplates: which nodes a refresh replaces.
    const refreshMarks = props.markOutdatedOnRefresh ?? true;
    const unscopedReads = [
      'ec2:DescribeInstances',
      ...(refreshMarks ? ['ec2:DescribeLaunchTemplates'] : []),
      ...((props.cordonDoomedSiblings ?? true) || refreshMarks ? ['autoscaling:DescribeAutoScalingGroups'] : []),
      ...(refreshMarks ? ['autoscaling:DescribeInstanceRefreshes'] : []),
      ...(props.spotInterruptions ? ['autoscaling:DescribeAutoScalingInstances'] : []),
    ];
    this.role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ReadsWithoutResourceScope',
        actions: unscopedReads,
        resources: ['*'],
        conditions: { StringEquals: { 'aws:RequestedRegion': stack.region } },
      }),
    );
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
      reason: `${unscopedReads.join(', ')}: read-only actions with no resource-level permissions in IAM, limited to this region; the handler asks only about its own groups and refuses instances of others.`,
    });

    if (refreshMarks) {
      new events.Rule(this, 'InstanceRefreshes', {
        description: 'Instance refresh events of the served groups, to the drainer (it marks the outdated nodes, then takes the marks back)',
        eventPattern: {
          source: ['aws.autoscaling'],
          detailType: [
            'EC2 Auto Scaling Instance Refresh Started',
            'EC2 Auto Scaling Instance Refresh Succeeded',
            'EC2 Auto Scaling Instance Refresh Failed',
            'EC2 Auto Scaling Instance Refresh Cancelled',
            'EC2 Auto Scaling Instance Refresh Rollback Started',
            'EC2 Auto Scaling Instance Refresh Rollback Succeeded',
            'EC2 Auto Scaling Instance Refresh Rollback Failed',
          ],
          detail: { AutoScalingGroupName: Lazy.list({ produce: () => this.groupNames }) },
        },
        targets: [new eventTargets.LambdaFunction(this.function, { retryAttempts: 2, maxEventAge: Duration.hours(1) })],
      });
    }

    if (props.spotInterruptions) {
      new events.Rule(this, 'SpotInterruptions', {
        description: 'Spot interruption warnings and rebalance recommendations, to the drainer',
        eventPattern: { source: ['aws.ec2'], detailType: ['EC2 Spot Instance Interruption Warning', 'EC2 Instance Rebalance Recommendation'] },
        // Two retries at most: a warning older than two minutes is moot.
        targets: [new eventTargets.LambdaFunction(this.function, { retryAttempts: 2, maxEventAge: Duration.minutes(2) })],
      });
    }

    const alarmTopic = props.alarmTopic ?? (props.alarmEmail !== undefined ? this.createAlarmTopic(props.alarmEmail, key) : undefined);
    if (alarmTopic === undefined) {
      Annotations.of(this).addWarningV2(
        'graceful-node-termination:alarms-unrouted',
        'The alarms notify no one: pass alarmEmail (cdk deploy -c alarmEmail=you@example.com) or alarmTopic.',
      );
    }
    this.alarms = this.createAlarms(logGroup, alarmTopic);
    this.acknowledgeNagFindings(props);
  }

  /** Puts a launch and a terminate hook on one more group and lets the function complete them. */
  addAutoScalingGroup(group: autoscaling.IAutoScalingGroup | string): void {
    const name = typeof group === 'string' ? group : group.autoScalingGroupName;
    if (this.deadlinePolicy === 'retain') this.retainOnAbandon(group, name);
    if (!Token.isUnresolved(name)) validateGroupName(name);
    if (this.groupNames.includes(name)) throw new Error(`Auto Scaling group ${name} was added twice`);
    this.groupNames.push(name);
    const id = Token.isUnresolved(name) ? `Group${this.groupNames.length}` : `Group-${name}`;
    // Group ARNs carry a generated id we cannot know for groups created elsewhere: "*" stands
    // only in that position, the name is exact. cdk-nag names the finding by the flattened ARN.
    const nagName = Token.isUnresolved(name) && typeof group !== 'string' && group.node.defaultChild instanceof CfnElement
      ? `<${Stack.of(this).getLogicalId(group.node.defaultChild)}>`
      : name;
    Validations.of(this.groupPolicy).acknowledge({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:autoscaling:<AWS::Region>:<AWS::AccountId>:autoScalingGroup:*:autoScalingGroupName/${nagName}]`,
      reason: 'Auto Scaling group ARNs contain a generated id: the group is matched by its exact name with "*" only in the id position.',
    });
    const scope = new Construct(this, id);
    for (const [transition, hookName] of [
      ['autoscaling:EC2_INSTANCE_LAUNCHING', this.hookNames.launch],
      ['autoscaling:EC2_INSTANCE_TERMINATING', this.hookNames.terminate],
    ] as const) {
      const hook = new autoscaling.CfnLifecycleHook(scope, transition.endsWith('LAUNCHING') ? 'Launch' : 'Terminate', {
        autoScalingGroupName: name,
        lifecycleHookName: hookName,
        lifecycleTransition: transition,
        heartbeatTimeout: this.heartbeatTimeout.toSeconds(),
        // Explicit: the API default is ABANDON, and a broken handler must never hold or
        // fail a node for nothing.
        defaultResult: 'CONTINUE',
        notificationTargetArn: this.topic.topicArn,
        roleArn: this.hookRole.roleArn,
        // The handler refuses notifications naming another cluster.
        notificationMetadata: JSON.stringify({ clusterName: this.clusterName }),
      });
      // The role must be able to publish before Auto Scaling sends the test notification.
      const publishGrant = this.hookRole.node.tryFindChild('DefaultPolicy');
      if (publishGrant) hook.node.addDependency(publishGrant);
      if (typeof group !== 'string' && group.node.defaultChild) hook.node.addDependency(group);
      hook.node.addDependency(...this.hookPrerequisites);
      this.hooks.push(hook);
    }
  }

  /**
   * DEADLINE_POLICY=retain only keeps an instance when the group's instance lifecycle policy
   * retains on a terminate hook's ABANDON. Set it on groups this app defines; for groups by
   * name, refuse unless the deployer says it is set (we will not change, and then have to
   * restore, a setting of a group we do not own).
   * https://docs.aws.amazon.com/autoscaling/ec2/userguide/instance-lifecycle-policy.html
   */
  private retainOnAbandon(group: autoscaling.IAutoScalingGroup | string, name: string): void {
    const cfn = typeof group === 'string' ? undefined : group.node.defaultChild;
    if (cfn instanceof autoscaling.CfnAutoScalingGroup) {
      cfn.instanceLifecyclePolicy = { retentionTriggers: { terminateHookAbandon: 'retain' } };
      return;
    }
    if (this.retentionSetOutside) return;
    throw new Error(
      `deadlinePolicy 'retain' needs group ${name} to retain instances on ABANDON, and this construct cannot set that on a group it does not define. ` +
        `Set it (aws autoscaling update-auto-scaling-group --auto-scaling-group-name ${name} --instance-lifecycle-policy 'RetentionTriggers={TerminateHookAbandon=retain}') ` +
        `and pass retentionSetOutside: true, or define the group in this app.`,
    );
  }

  /** Adds a prerequisite to every hook made so far and every hook made later. */
  private requireBeforeHooks(...constructs: Construct[]): void {
    this.hookPrerequisites.push(...constructs);
    for (const hook of this.hooks) hook.node.addDependency(...constructs);
  }

  private installKubernetesAccess(options: {
    clusterArn: string;
    kubernetesGroup: string;
    code: lambda.Code;
    retention: logs.RetentionDays;
    vpcConfig: Partial<Pick<lambda.FunctionProps, 'vpc' | 'vpcSubnets' | 'securityGroups'>>;
  }): void {
    // The drainer: a STANDARD entry mapped to a group that only the shipped ClusterRole binds.
    const drainerEntry = new eks.CfnAccessEntry(this, 'AccessEntry', {
      clusterName: this.clusterName,
      principalArn: this.role.roleArn,
      type: 'STANDARD',
      kubernetesGroups: [options.kubernetesGroup],
    });

    // The installer needs cluster admin to create a ClusterRole; it is a separate role that
    // only CloudFormation invokes, and its code applies only the two RBAC objects.
    const installerLogs = new logs.LogGroup(this, 'RbacInstallerLogs', { retention: options.retention, removalPolicy: RemovalPolicy.DESTROY });
    const installerRole = new iam.Role(this, 'RbacInstallerRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Installs the graceful node termination ClusterRole in ${this.clusterName} during deployment`,
    });
    grantLogs(installerRole, installerLogs);
    installerRole.addToPolicy(new iam.PolicyStatement({ actions: ['eks:DescribeCluster'], resources: [options.clusterArn] }));
    const installerEntry = new eks.CfnAccessEntry(this, 'RbacInstallerAccessEntry', {
      clusterName: this.clusterName,
      principalArn: installerRole.roleArn,
      type: 'STANDARD',
      accessPolicies: [
        {
          policyArn: `arn:${Stack.of(this).partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy`,
          accessScope: { type: 'cluster' },
        },
      ],
    });
    const installer = new lambda.Function(this, 'RbacInstaller', {
      description: `Installs the graceful node termination RBAC in ${this.clusterName} (CloudFormation custom resource)`,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      code: options.code,
      handler: lambdaHandlers.rbacInstaller,
      role: installerRole,
      logGroup: installerLogs,
      timeout: Duration.minutes(5),
      memorySize: 256,
      // What it installs comes from here, never from the invoking event (rbac-installer.ts).
      environment: { RBAC_NAME: this.deploymentName, CLUSTER_NAME: this.clusterName, KUBERNETES_GROUP: options.kubernetesGroup, DEADLINE_POLICY: this.deadlinePolicy },
      ...options.vpcConfig,
    });
    const rbac = new CustomResource(this, 'Rbac', {
      serviceToken: installer.functionArn,
      resourceType: 'Custom::KubernetesRbac',
      // CloudFormation's own default wait is an hour; the installer gives up after 5 minutes.
      serviceTimeout: Duration.minutes(6),
      properties: {
        // Informational; a change (new rules, another group) triggers an Update that re-applies.
        ClusterName: this.clusterName,
        KubernetesGroup: options.kubernetesGroup,
        RbacDigest: createHash('sha256').update(renderRbacYaml(options.kubernetesGroup, this.deadlinePolicy, this.deploymentName)).digest('hex').slice(0, 16),
      },
    });
    rbac.node.addDependency(installerEntry, drainerEntry, installerRole);
    this.requireBeforeHooks(drainerEntry, rbac);
  }

  /** An encrypted topic for the alarms, with one email subscription. */
  private createAlarmTopic(email: string, key: kms.IKey): sns.Topic {
    const topic = new sns.Topic(this, 'AlarmTopic', { masterKey: key, enforceSSL: true, displayName: 'Graceful node termination alarms' });
    topic.addSubscription(new subscriptions.EmailSubscription(email));
    // CloudWatch publishes the alarms: it must be able to use the key.
    key.grant(new iam.ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    return topic;
  }

  private createAlarms(logGroup: logs.ILogGroup, alarmTopic: sns.ITopic | undefined): cloudwatch.Alarm[] {
    const fiveMinutes = Duration.minutes(5);
    // Counts of one exact log message (Powertools JSON), as metrics, with this deployment's
    // name (the log line's `service`) as a dimension: two deployments never count each other.
    const logCount = (metricName: string, message: string) => {
      new logs.MetricFilter(this, `${metricName}Filter`, {
        logGroup,
        filterPattern: logs.FilterPattern.stringValue('$.message', '=', message),
        metricNamespace: metricsNamespace,
        metricName,
        metricValue: '1',
        dimensions: { service: '$.service' },
      });
      return new cloudwatch.Metric({ namespace: metricsNamespace, metricName, dimensionsMap: { service: this.deploymentName }, period: fiveMinutes, statistic: 'Sum' });
    };
    // Each alarm fires on the first occurrence: none of these should ever happen quietly.
    // Named after the deployment: `upgrade` puts DrainsTimedOut and LaunchesAbandoned in the
    // instance refresh's alarm specification by these names.
    const alarm = (id: string, alarmDescription: string, metric: cloudwatch.IMetric) =>
      new cloudwatch.Alarm(this, id, {
        alarmName: `${this.deploymentName}-${id}`,
        alarmDescription,
        metric,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    const alarms = [
      alarm(
        'FunctionErrors',
        'The drainer failed on a notification (it retries twice, then keeps it in the failed-notifications queue).',
        this.function.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
      ),
      alarm(
        'FailedNotificationsVisible',
        'Lifecycle notifications the drainer could not process are waiting in the queue.',
        this.failedNotifications.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }),
      ),
      alarm(
        'DrainsTimedOut',
        'A drain reached its deadline with pods still on the node (see the DrainTimedOut Event for the blocking PDBs).',
        logCount('DrainsTimedOut', drainTimedOutMessage),
      ),
      alarm(
        'LaunchesUnchecked',
        'A launch was admitted without a health check because the cluster could not be reached (access entry, RBAC, network, endpoint).',
        logCount('LaunchesUnchecked', launchUncheckedMessage),
      ),
      alarm(
        'LaunchesAbandoned',
        'A new node did not join Ready in time and its launch was abandoned (NodeCreationFailure): check the AMI, user data and bootstrap.',
        logCount('LaunchesAbandoned', launchAbandonedMessage),
      ),
    ];
    if (this.deadlinePolicy === 'retain') {
      alarms.push(
        alarm(
          'InstancesRetained',
          'A drain reached its deadline and the instance was retained (DEADLINE_POLICY=retain): it stays cordoned, outside desired capacity, until you fix what held its pods and terminate it (README, Operations).',
          logCount('InstancesRetained', instanceRetainedMessage),
        ),
      );
    }
    if (alarmTopic) for (const alarm of alarms) alarm.addAlarmAction(new cloudwatchActions.SnsAction(alarmTopic));
    return alarms;
  }

  /** Every cdk-nag finding we accept, with the reason; anything else fails the synth. */
  private acknowledgeNagFindings(props: GracefulNodeTerminationProps): void {
    const acknowledge = (construct: Construct, rule: string, reason: string) =>
      Validations.of(construct).acknowledge({ id: `AwsSolutions::AwsSolutions-${rule}`, reason });
    const kmsReason = 'Generated by CDK grants on the one customer managed key of this construct (the key policy and the resource are that key only); the wildcard is in the action name (GenerateDataKey*, ReEncrypt*), not the resource.';
    acknowledge(this.hookRole, 'IAM5[Action::kms:GenerateDataKey*]', kmsReason);
    acknowledge(this.role, 'IAM5[Action::kms:GenerateDataKey*]', kmsReason);
    acknowledge(this.role, 'IAM5[Action::kms:ReEncrypt*]', kmsReason);
    acknowledge(this.failedNotifications, 'SQS3', 'This queue is itself the on-failure (dead-letter) destination of the function.');
    if (props.vpc) {
      for (const role of [this.role, ...this.node.findAll().filter((c): c is iam.Role => c instanceof iam.Role && c.node.id === 'RbacInstallerRole')]) {
        acknowledge(role, 'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]', 'In a VPC, Lambda needs this AWS managed policy to manage its network interfaces; CDK adds it.');
      }
    }
  }
}

/** The handler's own default for a variable, so the construct's defaults cannot drift from it. */
function defaultSeconds(variable: { readonly default?: number }): Duration {
  return Duration.seconds(variable.default!);
}

function lambdaCode(): lambda.Code {
  // esbuild on the local machine; the image is never used (no Docker here or in CI).
  const local: ILocalBundling = {
    tryBundle(outputDir: string): boolean {
      bundleLambda(outputDir);
      return true;
    },
  };
  return lambda.Code.fromAsset(join(root, 'lambda'), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: { image: DockerImage.fromRegistry('unused-local-bundling-only'), local },
  });
}

function grantLogs(role: iam.Role, logGroup: logs.LogGroup): void {
  role.addToPolicy(new iam.PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [`${logGroup.logGroupArn}`] }));
}

function groupArn(stack: Stack, name: string): string {
  return stack.formatArn({
    service: 'autoscaling',
    resource: 'autoScalingGroup',
    resourceName: `*:autoScalingGroupName/${name}`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}

const clusterNamePattern = /^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/;

function validateProps(props: GracefulNodeTerminationProps): void {
  if (!Token.isUnresolved(props.clusterName) && !clusterNamePattern.test(props.clusterName)) {
    throw new Error(`clusterName ${JSON.stringify(props.clusterName)} is not an EKS cluster name: use 1 to 100 letters, digits, "-" or "_", starting with a letter or digit`);
  }
  const heartbeat = props.heartbeatTimeout?.toSeconds();
  if (heartbeat !== undefined && (heartbeat < 30 || heartbeat > 7200)) {
    throw new Error(`heartbeatTimeout ${heartbeat} s is outside what Auto Scaling accepts: use between Duration.seconds(30) and Duration.hours(2)`);
  }
  const checkSeconds = (value: Duration | undefined, field: string, variable: { accepts: string; parse(raw: string): unknown }) => {
    if (value !== undefined && variable.parse(String(value.toSeconds())) === undefined) {
      throw new Error(`${field} ${value.toSeconds()} s is invalid: expected ${variable.accepts} seconds`);
    }
  };
  checkSeconds(props.drainTimeout, 'drainTimeout', configVariables.drainTimeoutSeconds);
  checkSeconds(props.loadBalancerDelay, 'loadBalancerDelay', configVariables.loadBalancerDelaySeconds);
  checkSeconds(props.launchTimeout, 'launchTimeout', configVariables.launchTimeoutSeconds);
  checkSeconds(props.minEvictionWindow, 'minEvictionWindow', configVariables.minEvictionWindowSeconds);
  const reserved = props.reservedConcurrency;
  if (reserved !== undefined && (!Number.isInteger(reserved) || reserved < 1)) {
    throw new Error(`reservedConcurrency ${reserved} is invalid: use an integer >= 1 (0 would stop the drainer altogether)`);
  }
  if (props.launchTimeout !== undefined && props.launchTimeout.toSeconds() > 15 * 60 - 20) {
    throw new Error(`launchTimeout ${props.launchTimeout.toSeconds()} s is longer than one invocation allows (880 s): use at most Duration.seconds(880)`);
  }
  if (props.evictionConcurrency !== undefined && configVariables.evictionConcurrency.parse(String(props.evictionConcurrency)) === undefined) {
    throw new Error(`evictionConcurrency ${props.evictionConcurrency} is invalid: expected ${configVariables.evictionConcurrency.accepts}`);
  }
  const memory = props.memorySizeMiB;
  if (memory !== undefined && (!Number.isInteger(memory) || memory < 128 || memory > 10240)) {
    throw new Error(`memorySizeMiB ${memory} is invalid: Lambda accepts an integer from 128 to 10240`);
  }
  if (props.deploymentName !== undefined && !deploymentNamePattern.test(props.deploymentName)) {
    throw new Error(`deploymentName ${JSON.stringify(props.deploymentName)} is invalid: use a DNS label (lowercase letters, digits and "-", at most 63, starting and ending alphanumeric)`);
  }
  const group = props.kubernetesGroup;
  if (group !== undefined && (group.trim() === '' || group.startsWith('system:'))) {
    throw new Error(`kubernetesGroup ${JSON.stringify(group)} is invalid: EKS access entries need a non-empty group that does not start with "system:"`);
  }
  if (!props.vpc && (props.vpcSubnets || props.securityGroups)) {
    throw new Error('vpcSubnets and securityGroups need vpc: pass the VPC the subnets belong to');
  }
}

function validateGroupName(name: string): void {
  if (name.trim() === '' || name.length > 255 || name.includes(',')) {
    throw new Error(`Auto Scaling group name ${JSON.stringify(name)} is invalid: use 1 to 255 characters without commas`);
  }
}
