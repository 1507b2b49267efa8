// The construct's properties: flat, strongly typed, each optional one with its default.
import type {
  Duration,
  RemovalPolicy,
  aws_autoscaling as autoscaling,
  aws_ec2 as ec2,
  aws_eks as eks,
  aws_iam as iam,
  aws_logs as logs,
} from 'aws-cdk-lib';
import { DeadlinePolicy, Mode } from '../lambda/shared/config.js';
import type { TerminationPolicyOptions } from './termination-policy.js';
import type { RepairProps } from './repair-props.js';
import type { DrainRuleProps } from './drain-rule-props.js';
import type { SurgeProps } from './surge-props.js';
import type { SettleProps } from './settle-props.js';
import type { ObservabilityProps } from './observability-props.js';

export { DeadlinePolicy, Mode };
export type { TerminationPolicyOptions };

export interface GracefulNodeTerminationProps extends SettleProps, DrainRuleProps, SurgeProps, ObservabilityProps {
  /** Name of the EKS cluster the node groups join. Pass this or `cluster`. @default - the name of `cluster` */
  readonly clusterName?: string;
  /**
   * The EKS cluster the node groups join, defined in or imported into this CDK app; only its
   * name is used. Pass this or `clusterName`.
   * @default - the cluster named by `clusterName`
   */
  readonly cluster?: eks.ICluster;
  /**
   * Existing Auto Scaling groups, by name (eksctl, Terraform, CloudFormation groups). @default - none; or
   * `autoScalingGroups`, `addAutoScalingGroupName`
   */
  readonly autoScalingGroupNames?: string[];
  /**
   * Auto Scaling groups defined in or imported into this CDK app. @default - none; or `autoScalingGroupNames`,
   * `addAutoScalingGroup`
   */
  readonly autoScalingGroups?: autoscaling.IAutoScalingGroup[];
  /**
   * How long Auto Scaling waits for the handler before applying CONTINUE on its own.
   * EKS managed node groups use 30 minutes. Between 30 seconds and 2 hours; with
   * `reconcileMarks`, at least 750 seconds, so the reconciler can resume a drain whose
   * hand-off was lost before it runs out (docs/limits.md). The handler heartbeats and hands
   * long drains on before it runs out; a lifecycle action lives at most
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
   * With `deadlinePolicy: DeadlinePolicy.RETAIN` and groups given by name: their instance lifecycle policy
   * is already set to retain on ABANDON (the construct cannot set it on a group it does not
   * define). Without that policy an ABANDON terminates the instance like CONTINUE.
   * @default false
   */
  readonly retentionSetOutside?: boolean;
  /**
   * What happens to pods still on the node at the drain deadline. FORCE deletes each at the
   * deadline minus its grace period (bypassing its PodDisruptionBudget, grace clamped to the
   * deadline), as managed node groups and Karpenter do; LEAVE lets them die with the instance;
   * RETAIN deletes nothing and completes with ABANDON, so the group keeps the instance cordoned
   * (its instance lifecycle policy must retain on ABANDON: set here for groups of this app, see
   * retentionSetOutside; without it ABANDON terminates like CONTINUE). With RETAIN the terminate
   * hooks' DefaultResult is ABANDON too: a notification that never reaches the drainer retains
   * the instance instead of terminating it undrained.
   * @default DeadlinePolicy.FORCE
   */
  readonly deadlinePolicy?: DeadlinePolicy;
  /**
   * `Mode.OBSERVE` for a careful first rollout: every notification is verified as usual, what
   * would be done (the node, the pods in eviction order, the budgets that would hold them up,
   * the siblings, the waits) is written as Events and a log line, nothing else changes in the
   * cluster or the groups, and each lifecycle action completes CONTINUE at once. Adds `list` on
   * PodDisruptionBudgets to nothing: the ClusterRole has it either way.
   * @default Mode.ENFORCE
   */
  readonly mode?: Mode;
  /**
   * After an undrained release, taint the node out-of-service once EC2 says it is terminated
   * (OUT_OF_SERVICE_AFTER_RELEASE). @default true
   */
  readonly outOfServiceAfterRelease?: boolean;
  /** The custom termination policy (Auto Scaling may invoke the function; docs/termination-policy.md). */
  readonly terminationPolicy?: TerminationPolicyOptions;
  /**
   * How long pods of Jobs and pods annotated `karpenter.sh/do-not-disrupt: "true"` (or
   * `graceful-node-termination/wait-for-completion: "true"`) may run to completion before
   * they are evicted. Zero evicts them at once, as managed node groups do.
   * @default Duration.hours(1)
   */
  readonly batchWait?: Duration;
  /**
   * Every pod gets at least this long to be evicted, from when the drain first saw the node,
   * before DeadlinePolicy.FORCE may delete it; the drain deadline moves out to fit it (a
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
   * Run the reconciler on a schedule: it takes back every mark (label, cordon, taint) and
   * refresh strategy tag whose owner is gone (lifecycle action over, refresh ended) and resumes
   * drains whose hand-off chain was lost. Adds an EventBridge schedule, the reads it needs and
   * autoscaling:DeleteTags for that one tag on the served groups.
   * @default true
   */
  readonly reconcileMarks?: boolean;
  /**
   * Node auto repair as managed node groups have it (docs/repair.md): a node of a served group whose condition stays
   * bad past
   * its rule is replaced through Auto Scaling (its terminate hook drains it) or rebooted. Needs `reconcileMarks`;
   * grants autoscaling:SetInstanceHealth on the served groups (ec2:RebootInstances with a Reboot rule).
   * @default - off
   */
  readonly repair?: RepairProps;
  /**
   * How often the reconciler runs, when `reconcileMarks` is on. Whole minutes, from one minute
   * to the longest with which a pass still resumes a drain whose hand-off was lost before
   * `heartbeatTimeout` runs out: (heartbeatTimeout - min(880 s, 0.8 x heartbeatTimeout) - 90 s),
   * 13 minutes with the default (docs/limits.md). A longer one fails the synth.
   * @default - Duration.minutes(5), or the longest that fits when heartbeatTimeout is shorter
   */
  readonly reconcileInterval?: Duration;
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
   * infra/kubernetes/rbac.yaml yourself (docs/deploy.md, "Clusters on aws-auth").
   * @default true
   */
  readonly manageKubernetesAccess?: boolean;
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
   * route to the cluster endpoint and to the APIs the functions call: autoscaling, ec2, eks,
   * elasticloadbalancing and sns (NAT or VPC endpoints; sns carries the hand-offs of long drains),
   * and s3 for the installer's answer to CloudFormation: docs/deploy.md lists every route, from
   * the policies. The cluster security group must admit the functions' security group on 443.
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
  readonly securityGroups?: ec2.ISecurityGroup[];
  /**
   * How long the functions' logs are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Permissions boundary set on every IAM role the construct creates (the drainer's, the hook
   * role, the RBAC installer's), for accounts that require one on every role.
   * @default - no permissions boundary
   */
  readonly permissionsBoundary?: iam.IManagedPolicy;
  /**
   * IAM path of every role the construct creates (`/` or `/a/b/`: starts and ends with `/`).
   * Note that aws-auth's mapRoles matches role ARNs without their path.
   * @default "/"
   */
  readonly rolePath?: string;
  /**
   * What happens to the key, the log groups and the failed-notifications queue when they leave
   * the stack. RETAIN keeps the logs and failed notifications of a deleted deployment readable
   * (the key they are encrypted with stays too).
   * @default RemovalPolicy.DESTROY
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** Options of `addAutoScalingGroup` and `addAutoScalingGroupName`. */
export interface AddAutoScalingGroupOptions {
  /**
   * The construct ID of the group's hooks (their logical IDs derive from it). Pass `Group<n>`
   * (n: the group's position among all groups added, from 1) to keep the hooks a version before
   * 0.2 made for a group whose name is a token.
   * @default - `Group-<name>`; for a name that is a token, `Group<hash of what it stands for>`
   */
  readonly id?: string;
}
