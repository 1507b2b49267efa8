// The smallest interfaces the use cases need. Only adapters/ import the AWS SDK or the
// Kubernetes client; everything else is plain functions over these.

export interface NodeInfo {
  readonly name: string;
  readonly uid: string;
  readonly providerId: string;
  readonly unschedulable: boolean;
  readonly labels: Readonly<Record<string, string>>;
  /** The Ready condition is True. */
  readonly ready: boolean;
  readonly taints: readonly { readonly key: string; readonly effect: string }[];
  /** Value of the hand-off annotation: which invocation claimed the drain's next hand-off. */
  readonly handOff?: string | undefined;
  /** Our drain record on the node (drainAnnotation), when a drain of ours marked it. */
  readonly drain?: DrainRecord | undefined;
  /** metadata.resourceVersion as read: a write can be made conditional on it. */
  readonly resourceVersion?: string | undefined;
}

/**
 * What a drain of ours wrote on the node: for which lifecycle action, when it first saw the
 * node (the fair eviction window runs from here, shared by retries and hand-offs), and which
 * marks it set itself (so only those are ever taken back).
 */
export interface DrainRecord {
  /** The lifecycle action's token; empty when the node was marked ahead of its own drain. */
  readonly token: string;
  readonly startedAtMs: number;
  readonly set: readonly ('exclude-from-load-balancers' | 'cordon')[];
  /** Marked ahead by the drain of this sibling instance (same group, also terminating). */
  readonly markedBy?: string | undefined;
}

/** The node marks one merge patch applies. */
export interface NodeMarks {
  readonly excludeFromLoadBalancers: boolean;
  readonly cordon: boolean;
  readonly drain: DrainRecord;
}

export interface Toleration {
  readonly key?: string | undefined;
  readonly operator?: string | undefined;
  readonly effect?: string | undefined;
}

export interface PodInfo {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly phase: string;
  /** Kind of the owner reference marked controller, if any (DaemonSet, ReplicaSet, Job...). */
  readonly controllerKind: string | undefined;
  /** UID of that controller: its other pods are this pod's replacements. */
  readonly controllerUid?: string | undefined;
  readonly annotations: Readonly<Record<string, string>>;
  readonly priorityClassName: string | undefined;
  readonly deletionTimestamp: Date | undefined;
  readonly tolerations: readonly Toleration[];
  /** spec.terminationGracePeriodSeconds (the server's default, 30, when unset). */
  readonly terminationGracePeriodSeconds?: number | undefined;
  /** metadata.finalizers: what a pod that cannot go away is waiting for. */
  readonly finalizers?: readonly string[] | undefined;
}

/** 'changed': the write was conditional on a resourceVersion and the node had moved on. */
export type PatchResult = 'patched' | 'node-gone' | 'changed';

export interface NodeGateway {
  /**
   * Finds the node whose spec.providerID ends in /<instanceId>. A name may be tried first
   * (EC2's private DNS name), but only the providerID decides: never by name alone.
   */
  findNodeByInstanceId(instanceId: string): Promise<NodeInfo | undefined>;
  /**
   * The nodes of several instances at once, by the same rule, in requests that do not grow
   * with the cluster: an instance whose node is not under its EC2 name is left out (no scan).
   */
  findNodesOfInstances(instanceIds: readonly string[]): Promise<ReadonlyMap<string, NodeInfo>>;
  /** Follows one instance's node (one list, then a watch) until closed: launch admission. */
  watchNodeOf(instanceId: string): Promise<NodeWatch>;
  /**
   * One merge patch: the load-balancer exclusion label and spec.unschedulable=true where
   * asked, and the drain record annotation.
   */
  mark(nodeName: string, marks: NodeMarks, ifResourceVersion?: string): Promise<PatchResult>;
  /**
   * Takes back exactly what our drain record says we set (the load-balancer label, the
   * cordon) and removes our drain record and hand-off annotations: the instance came back.
   */
  unmark(nodeName: string, record: DrainRecord): Promise<PatchResult>;
  /**
   * Compare-and-swap of the node's hand-off annotation (optimistic concurrency on the
   * node's resourceVersion): only the invocation that finds `expected` there moves it to
   * `next` (undefined removes it). Two deliveries of one hand-off therefore never both carry on.
   */
  claimHandOff(nodeName: string, expected: string | undefined, next: string | undefined): Promise<'claimed' | 'lost' | 'node-gone'>;
  /**
   * Marks an outdated node for an instance refresh (label, record, and the taint or cordon
   * asked for), conditional on the node as read; 'changed' when it moved on meanwhile.
   */
  markOutdated(node: NodeInfo, marks: OutdatedMarks): Promise<PatchResult>;
  /**
   * Takes back exactly what the refresh's records say it set, on every node still labelled
   * for it. A node a drain of ours is draining keeps its cordon (the drain owns it now).
   */
  unmarkOutdated(refreshId: string): Promise<readonly { readonly node: string; readonly uid: string; readonly removed: readonly string[] }[]>;
}

/** A live view of one instance's node. */
export interface NodeWatch {
  /**
   * The node as last seen (undefined: none with this instance has registered). Throws the
   * last error while the view cannot be kept current (our requests fail): no answer is not
   * "no node", and launch admission must not abandon an instance on our own failure.
   */
  current(): NodeInfo | undefined;
  /** Resolves when the node may have changed since the last call, or after timeoutMs. */
  changed(timeoutMs: number): Promise<void>;
  close(): void;
}

/** What a refresh of ours sets on an outdated node: only that is taken back. */
export interface OutdatedMarks {
  readonly refreshId: string;
  /** Our PreferNoSchedule taint (outdatedTaintKey): evicted pods prefer new nodes, capacity is never refused. */
  readonly taint: boolean;
  /** spec.unschedulable, with the `minimal` strategy (managed groups' MINIMAL: cordon all first). */
  readonly cordon: boolean;
}

export const outdatedTaintKey = 'graceful-node-termination/outdated';
/** Label on every node a refresh of ours marked (the refresh id), so the end finds them without a list of the cluster. */
export const refreshLabel = 'graceful-node-termination/refresh';
/** Beside it when that refresh cordoned the node (strategy minimal): the cordon is ours to take back. */
export const refreshCordonedLabel = 'graceful-node-termination/refresh-cordoned';

export const handOffAnnotation = 'graceful-node-termination/hand-off';
export const drainAnnotation = 'graceful-node-termination/drain';

/** https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-exclude-from-external-load-balancers */
export const excludeFromLoadBalancersLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';

/** A live view of the pods bound to one node: one list, then one watch. */
export interface PodWatch {
  /** The pods on the node as last seen. */
  current(): readonly PodInfo[];
  /**
   * Resolves once the node's pods changed since the previous call returned (or since the
   * watch opened), at once if that already happened, or after timeoutMs. A change that
   * lands while the caller is busy evicting must not be lost: that would stall the drain
   * until its next timeout.
   */
  changed(timeoutMs: number): Promise<void>;
  close(): void;
}

export type BlockReason =
  | 'disruption-budget'
  | 'multiple-budgets'
  | 'throttled'
  | 'namespace-terminating'
  /** An admission webhook, ValidatingAdmissionPolicy or policy engine denied this pod's eviction. */
  | 'admission-denied'
  /** 409 on the budget's status under concurrent evictions: the server gave up, we retry. */
  | 'conflict'
  /** 401 that persisted through a fresh token: access is still propagating, or the token is refused. */
  | 'unauthorized'
  | 'server-error';

export type EvictionResult =
  | { readonly kind: 'evicted' }
  /** 404 (already deleted) or 409 whose precondition names the UID (it is another pod now). */
  | { readonly kind: 'gone' }
  | {
      readonly kind: 'blocked';
      readonly reason: BlockReason;
      readonly message: string;
      readonly retryAfterSeconds: number | undefined;
      readonly budgetName: string | undefined;
    };

export interface PodGateway {
  watchPodsOnNode(nodeName: string): Promise<PodWatch>;
  /** policy/v1 Eviction with a UID precondition. Throws AccessDeniedError only on our own RBAC 403. */
  evictPod(pod: PodInfo): Promise<EvictionResult>;
  /**
   * Deletes the pod directly (no PodDisruptionBudget check) with a UID precondition and the
   * given grace period: the force policy at the drain deadline only. 'unchanged' when the
   * pod was already terminating and the DELETE moved nothing earlier.
   */
  deletePod(pod: PodInfo, gracePeriodSeconds: number): Promise<'deleted' | 'unchanged' | 'gone'>;
  /** Pending pods of the same controller, with the scheduler's reason (diagnosis only). */
  pendingReplacements(pod: PodInfo): Promise<readonly { readonly pod: string; readonly reason: string }[]>;
}

export interface ObjectRef {
  readonly kind: 'Node' | 'Pod';
  readonly name: string;
  readonly uid: string;
  readonly namespace?: string | undefined;
}

export interface ClusterEvent {
  readonly regarding: ObjectRef;
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

export interface EventRecorder {
  /** Best effort: never throws and never holds a drain up (queued, dropped on overload). */
  record(event: ClusterEvent): Promise<void>;
  /** Waits (bounded) until queued Events are written; called before an invocation returns. */
  flush?(timeoutMs: number): Promise<void>;
}

export interface LifecycleActionRef {
  readonly autoScalingGroupName: string;
  readonly lifecycleHookName: string;
  readonly lifecycleActionToken: string;
  readonly instanceId: string;
}

export type LifecycleResult = 'CONTINUE' | 'ABANDON';

export interface LifecycleActions {
  /** 'already-completed' when Auto Scaling has no active action (completed twice, timed out). ABANDON is for DEADLINE_POLICY=retain. */
  complete(action: LifecycleActionRef, result: LifecycleResult): Promise<'completed' | 'already-completed'>;
  /** Restarts the hook's heartbeat timer; 'no-active-action' when it is already over. */
  heartbeat(action: LifecycleActionRef): Promise<'recorded' | 'no-active-action'>;
}

/** Auto Scaling's view of one instance (Spot warnings name the instance, not its group). */
export interface AutoScalingInstances {
  /** The group the instance is in, or undefined when it is in none. */
  groupOf(instanceId: string): Promise<string | undefined>;
  /** Instances of the group on their way out (Terminating, Terminating:Wait): their nodes are doomed. */
  terminatingIn(group: string): Promise<readonly string[]>;
  /**
   * An instance refresh of the group, while it is pending or in progress: which instances it
   * will replace (those not on its desired launch template version) and whether it terminates
   * before launching (MaxHealthyPercentage 100: the `minimal` strategy). Undefined once over.
   */
  refresh(group: string, refreshId: string): Promise<RefreshView | undefined>;
}

export interface RefreshView {
  /** Terminate before launch: cordon the outdated nodes instead of only preferring others. */
  readonly minimal: boolean;
  readonly outdated: readonly string[];
  /** The desired configuration, for messages: "lt-0abc version 7". */
  readonly desired: string;
}

/** EC2's view of instances: the private DNS name is what the kubelet registers as the node's name on EKS. */
export interface InstanceDirectory {
  /** Private DNS names by instance id; an instance EC2 does not know (or has no name yet) is absent. */
  privateDnsNames(instanceIds: readonly string[]): Promise<ReadonlyMap<string, string>>;
  /** A launch template's latest and default version numbers ($Latest and $Default resolved). */
  launchTemplateVersions?(template: { readonly id?: string | undefined; readonly name?: string | undefined }): Promise<{ readonly latest: string; readonly default: string } | undefined>;
}

/** One metric data point set, with the dimensions that classify it (EMF in production). */
export interface MetricsSink {
  emit(dimensions: Readonly<Record<string, string>>, values: Readonly<Record<string, { readonly unit: 'Count' | 'Seconds'; readonly value: number }>>): void;
}

/** Where the remaining work goes when one invocation cannot finish it. */
export interface HandOffs {
  send(message: Readonly<Record<string, unknown>>): Promise<void>;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** What the use cases log through; Powertools Logger satisfies it. */
export interface Log {
  debug(message: string, ...extra: Record<string, unknown>[]): void;
  info(message: string, ...extra: Record<string, unknown>[]): void;
  warn(message: string, ...extra: Record<string, unknown>[]): void;
  error(message: string, ...extra: Record<string, unknown>[]): void;
  /** Adds keys to every later line (Powertools Logger's appendKeys). */
  appendKeys?(keys: Record<string, unknown>): void;
}
