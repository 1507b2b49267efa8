// The smallest interfaces the use cases need from AWS. Only adapters/aws/ implements them;
// the use cases own them and test against fakes.
import type { ServedLoadBalancers } from './served-load-balancers.js';

/**
 * One lifecycle action. Auto Scaling accepts the token or the instance id: a hand-off the
 * reconciler starts knows no token (none is kept anywhere but in the notification) and
 * names the action by its instance.
 */
export interface LifecycleActionRef {
  readonly autoScalingGroupName: string;
  readonly lifecycleHookName: string;
  readonly lifecycleActionToken?: string | undefined;
  readonly instanceId: string;
}

export type LifecycleResult = 'CONTINUE' | 'ABANDON';

export interface LifecycleActions {
  /** 'already-completed' when Auto Scaling has no active action (completed twice, timed out). */
  complete(action: LifecycleActionRef, result: LifecycleResult): Promise<'completed' | 'already-completed'>;
  /** Restarts the hook's heartbeat timer; 'no-active-action' when it is already over. */
  heartbeat(action: LifecycleActionRef): Promise<'recorded' | 'no-active-action'>;
}

/** Auto Scaling's view of one instance (DescribeAutoScalingInstances). */
export interface InstanceState {
  readonly instanceId: string;
  readonly group: string;
  /** InService, Pending:Wait, Terminating:Wait, Terminating:Retained, Warmed:Pending:Wait, ... */
  readonly lifecycleState: string;
  /** HEALTHY or UNHEALTHY, as DescribeAutoScalingInstances says (undefined: not read). */
  readonly healthStatus?: string | undefined;
}

/** One group as the reconciler needs it: the strategy tag `upgrade` sets. */
export interface GroupView {
  readonly name: string;
  readonly tags: Readonly<Record<string, string>>;
}

export interface AutoScalingInstances {
  /** The instances Auto Scaling knows, in batches of 50; an instance in no group is absent. */
  describe(instanceIds: readonly string[]): Promise<ReadonlyMap<string, InstanceState>>;
  /** Instances of the group on their way out of it (terminating, or returning to the warm pool). */
  leavingGroup(group: string): Promise<readonly string[]>;
  /** The statuses of instance refreshes of a group (Pending, InProgress, Successful, ...); unknown ids are absent. */
  refreshStatuses(group: string, refreshIds: readonly string[]): Promise<ReadonlyMap<string, string>>;
  /**
   * An instance refresh of the group, while it is pending or in progress: which instances it
   * will replace (those not on its desired launch template version) and the group's strategy
   * tag. Undefined once over.
   */
  refresh(group: string, refreshId: string): Promise<RefreshView | undefined>;
  /** The groups with their tags (DescribeAutoScalingGroups, 100 names a call). */
  describeGroups(names: readonly string[]): Promise<readonly GroupView[]>;
  /** Removes one of our tags from a group (the reconciler, when the refresh it names is over). */
  removeTag(group: string, key: string): Promise<void>;
}

export interface RefreshView {
  /** The group's strategy tag as `upgrade` left it (refresh/strategy-tag.ts reads it). */
  readonly strategyTag: string | undefined;
  readonly outdated: readonly string[];
  /** The desired configuration, for messages: "lt-0abc version 7". */
  readonly desired: string;
}

/**
 * EC2's view of instances: the private DNS name is what the kubelet registers as the node's name on EKS; whether it is
 * Spot.
 */
export interface InstanceDirectory {
  /** Private DNS names by instance id; an instance EC2 does not know (or has no name yet) is absent. */
  privateDnsNames(instanceIds: readonly string[]): Promise<ReadonlyMap<string, string>>;
  /** How the instance is bought, and for Spot by which request; undefined when EC2 does not know the instance. */
  purchase(instanceId: string): Promise<Purchase | undefined>;
  /**
   * A Spot request's status code (DescribeSpotInstanceRequests): `fulfilled` while EC2 means to
   * keep the instance; `marked-for-termination`, `instance-terminated-no-capacity`, ... once it
   * has given notice. Undefined when EC2 no longer knows the request.
   */
  spotRequestStatus(requestId: string): Promise<string | undefined>;
  /**
   * EC2's state of each instance (`running`, `shutting-down`, `terminated`, ...) and its Auto Scaling group tag;
   * unknown ids absent.
   */
  runStates?(instanceIds: readonly string[]): Promise<ReadonlyMap<string, InstanceRunState>>;
  /** A launch template's latest and default version numbers ($Latest and $Default resolved). */
  launchTemplateVersions?(template: {
    readonly id?: string | undefined;
    readonly name?: string | undefined;
  }): Promise<{ readonly latest: string; readonly default: string } | undefined>;
}

export interface InstanceRunState {
  /** instanceState.name: pending, running, shutting-down, terminated, stopping, stopped. */
  readonly state: string;
  /** The aws:autoscaling:groupName tag Auto Scaling put on the instance. */
  readonly group?: string | undefined;
}

export interface Purchase {
  /** DescribeInstances instanceLifecycle: `spot`, `capacity-block`, ...; `on-demand` where EC2 leaves it out. */
  readonly lifecycle: string;
  /** The Spot request the instance was launched by (Spot only). */
  readonly spotRequestId: string | undefined;
}

/** One metric data point set, with the dimensions that classify it (EMF in production). */
export interface MetricsSink {
  emit(
    dimensions: Readonly<Record<string, string>>,
    values: Readonly<Record<string, { readonly unit: 'Count' | 'Seconds'; readonly value: number }>>,
  ): void;
}

/** Where the remaining work goes when one invocation cannot finish it. */
export interface HandOffs {
  send(message: Readonly<Record<string, unknown>>): Promise<void>;
}

/** A load balancer that still holds an instance: registered, or draining its connections. */
export interface TargetHold {
  /** An ELBv2 target group (by ARN) or a Classic Load Balancer (by name). */
  readonly kind: 'target-group' | 'classic';
  readonly id: string;
  /** For messages: the target group's or load balancer's name. */
  readonly name: string;
  /** As the API says it: healthy, draining, initial, ... (ELBv2); InService, ... (Classic); `unknown` when unread. */
  readonly state: string;
  /** The port the instance is registered on, when known (a TargetGroupBinding's NodePort): only that target is read. */
  readonly port?: number | undefined;
}

/**
 * One reading of the cluster's load balancers; a reading that failed says why, never throws.
 * `unread`: those that could not be read this time (a 5xx, a timeout): neither held nor let go.
 */
export type TargetReading =
  | {
      readonly read: true;
      readonly holds: readonly TargetHold[];
      readonly unread: readonly TargetHold[];
      readonly calls: number;
    }
  | { readonly read: false; readonly denied: boolean; readonly error: Error; readonly calls: number };

/** Which load balancers a reading looks at. */
export interface TargetScope {
  /** What the cluster serves (its TargetGroupBindings and in-tree Services): a first look. */
  readonly served?: ServedLoadBalancers | undefined;
  /** Only these, read again (a later look at the same wait). */
  readonly among?: readonly TargetHold[] | undefined;
}

/** The cluster's load balancers as the settle phase needs them (ELBv2 and the Classic ELB API). */
export interface LoadBalancerTargets {
  /** Which of them still hold the instance. */
  holding(instanceId: string, scope?: TargetScope): Promise<TargetReading>;
}

/** Every instance one load balancer has registered and its state; a reading that failed says why. */
export type Registered =
  | { readonly read: true; readonly targets: ReadonlyMap<string, string>; readonly calls: number }
  | {
      readonly read: false;
      readonly denied: boolean;
      readonly throttled: boolean;
      readonly error: Error;
      readonly calls: number;
    };

/** The load balancers read once for every instance they hold: what a shared reading publishes (shared-targets.ts). */
export interface LoadBalancerRegistry {
  /** The load balancers that can hold the cluster's instances, each `unknown`. */
  candidates(served: ServedLoadBalancers | undefined): Promise<readonly TargetHold[]>;
  /** Every instance one of them has registered: one call, whatever the instances waiting. */
  registered(lb: TargetHold): Promise<Registered>;
}

/** One instance of a group, as DescribeAutoScalingGroups lists it. */
export interface GroupMember {
  readonly instanceId: string;
  readonly group: string;
  readonly lifecycleState: string;
  /**
   * Healthy or Unhealthy (DescribeAutoScalingInstances says HEALTHY, UNHEALTHY): Auto Scaling replaces an Unhealthy
   * instance.
   */
  readonly healthStatus: string;
  /**
   * The group's suspended processes (DescribeAutoScalingGroups' SuspendedProcesses): with ReplaceUnhealthy,
   * Terminate or Launch among them, an instance marked Unhealthy is not replaced, or not replaced in full.
   */
  readonly suspendedProcesses: readonly string[];
}

/** What node auto repair asks of Auto Scaling and EC2 (repair/). */
export interface InstanceRepairs {
  /** Every instance of these groups: one DescribeAutoScalingGroups per 100 groups. */
  members(groups: readonly string[]): Promise<readonly GroupMember[]>;
  /** SetInstanceHealth Unhealthy, respecting the group's health check grace period: the group replaces it. */
  setUnhealthy(instanceId: string): Promise<void>;
  /** SetInstanceHealth Healthy: our Unhealthy mark taken back, so a resumed process replaces nothing on our word. */
  setHealthy(instanceId: string): Promise<void>;
  /** EC2 RebootInstances. */
  reboot(instanceId: string): Promise<void>;
}
