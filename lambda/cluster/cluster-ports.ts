// The cluster as the use cases see it: plain data and the smallest interfaces they need.
// Only adapters/kubernetes/ talks to the API server; everything else is functions over these.
import type { ChoiceGateway } from './drain-cost.js';
import type { DrainabilityGateway } from './drainability.js';
import type { DeferralMark, DrainRecord, MigrationRecord, RepairRecord } from './node-marks.js';
import type { OutOfServiceGateway } from './out-of-service.js';
import type { ConditionsGateway } from './node-conditions.js';
import type { NodeCondition, RepairGateway } from './node-health.js';

export type { NodeCondition, RepairGateway };
import type { LoadBalancerSources } from './served-load-balancers.js';

export interface Taint {
  readonly key: string;
  readonly effect: string;
  readonly value?: string | undefined;
}

export interface NodeInfo {
  readonly name: string;
  readonly uid: string;
  readonly providerId: string;
  readonly unschedulable: boolean;
  readonly labels: Readonly<Record<string, string>>;
  /** The Ready condition is True. */
  readonly ready: boolean;
  readonly taints: readonly Taint[];
  /** Value of the hand-off annotation: which invocation claimed the drain's next hand-off. */
  readonly handOff?: string | undefined;
  /** Our drain record on the node, when a drain of ours marked it. */
  readonly drain?: DrainRecord | undefined;
  /** The group of the refresh whose marks the node carries (refreshGroupAnnotation). */
  readonly refreshGroup?: string | undefined;
  /** The record of the `migrate` whose marks the node carries (migrationAnnotation). */
  readonly migration?: MigrationRecord | undefined;
  /** False when metadata.annotations is absent (a JSON patch must create the map first). */
  readonly hasAnnotations?: boolean | undefined;
  /** metadata.resourceVersion as read: a write can be made conditional on it. */
  readonly resourceVersion?: string | undefined;
  /** status.volumesAttached[].name: the unique names of the volumes attached to it (volume-names.ts). */
  readonly attachedVolumes?: readonly string[] | undefined;
  /** The termination policy's deferral mark (deferralAnnotation). */
  readonly deferral?: DeferralMark | undefined;
  /** The instance our out-of-service taint was set for (outOfServiceAnnotation). */
  readonly outOfService?: string | undefined;
  /** status.conditions: what node auto repair judges (repair/rules.ts). */
  readonly conditions?: readonly NodeCondition[] | undefined;
  /** Our repair record on the node, when a repair of ours decided it. */
  readonly repair?: RepairRecord | undefined;
}

/** The node marks one drain patch applies, with the owner label and the record. */
export interface NodeMarks {
  readonly excludeFromLoadBalancers: boolean;
  readonly cordon: boolean;
  readonly drain: DrainRecord;
  /** The deployment: the owner label's value. */
  readonly owner: string;
}

export interface Toleration {
  readonly key?: string | undefined;
  readonly operator?: string | undefined;
  readonly value?: string | undefined;
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
  /** Drain rules read labels; a do-not-disrupt duration counts from startedAt (started on its node, else bound to it). */
  readonly labels?: Readonly<Record<string, string>> | undefined;
  readonly startedAt?: Date | undefined;
  readonly priorityClassName: string | undefined;
  readonly deletionTimestamp: Date | undefined;
  readonly tolerations: readonly Toleration[];
  /** spec.terminationGracePeriodSeconds (the server's default, 30, when unset). */
  readonly terminationGracePeriodSeconds?: number | undefined;
  /** metadata.finalizers: what a pod that cannot go away is waiting for. */
  readonly finalizers?: readonly string[] | undefined;
  /** The PersistentVolumeClaims its volumes use (an ephemeral volume's claim is `<pod>-<volume>`). */
  readonly claims?: readonly string[] | undefined;
}

/** 'changed': the write was conditional on a resourceVersion and the node had moved on. */
export type PatchResult = 'patched' | 'node-gone' | 'changed';

/** What a refresh of ours sets on an outdated node: only that is taken back. */
export interface OutdatedMarks {
  readonly refreshId: string;
  readonly group: string;
  readonly owner: string;
  /** Our PreferNoSchedule taint (outdatedTaintKey): evicted pods prefer new nodes, capacity is never refused. */
  readonly taint: boolean;
  /** spec.unschedulable, with the `minimal` strategy (managed groups' MINIMAL: cordon all first). */
  readonly cordon: boolean;
}

export interface OutdatedUnmarked {
  readonly node: string;
  readonly uid: string;
  readonly refreshId: string;
  readonly removed: readonly string[];
}

export interface NodeGateway extends Partial<ConditionsGateway> {
  /**
   * Finds the node whose spec.providerID ends in /<instanceId>. A name may be tried first
   * (EC2's private DNS name), but only the providerID decides: never by name alone.
   */
  findNodeByInstanceId(instanceId: string): Promise<NodeInfo | undefined>;
  /**
   * The nodes of several instances at once, by the same rule: their EC2 names in one list per
   * batch (the hostname label; a GET for a name the list does not answer), and one scan of the
   * node list for all whose node is not under its EC2 name. With `skipNames`,
   * instances whose EC2 name is there are left out unread; with `scan: false` there is no
   * scan, and EC2 failing is an error rather than a reason to scan.
   */
  findNodesOfInstances(
    instanceIds: readonly string[],
    options?: {
      readonly skipNames?: ReadonlySet<string>;
      readonly scan?: boolean;
      /** Of the instances left after skipNames, which to read (in order, at most how many). */
      readonly pick?: (instanceIds: readonly string[]) => readonly string[];
      /** false: not read by name at all (already tried), straight to the one scan for those not skipped. */
      readonly byName?: boolean;
    },
  ): Promise<ReadonlyMap<string, NodeInfo>>;
  /** Follows one instance's node (one list, then a watch) until closed: launch admission. */
  watchNodeOf(instanceId: string): Promise<NodeWatch>;
  /** Every node carrying a mark of this owner: one label-selector list (the reconciler). */
  listMarked(owner: string): Promise<readonly NodeInfo[]>;
  /** The names of the nodes a drain of this owner marked (its owner label and the exclusion label): one list of names. */
  drainMarkedNames(owner: string): Promise<ReadonlySet<string>>;
  /** One merge patch: the owner label, the exclusion label and cordon where asked, the record. */
  mark(nodeName: string, marks: NodeMarks, ifResourceVersion?: string): Promise<PatchResult>;
  /**
   * Takes back exactly what our drain record says we set (the load-balancer label restored
   * to its prior value, the cordon) and removes our record and hand-off annotations; the owner
   * label too unless a refresh mark of ours remains. Conditional on the node as read.
   */
  unmark(node: NodeInfo, record: DrainRecord): Promise<PatchResult>;
  /**
   * Compare-and-swap of the node's hand-off annotation (optimistic concurrency on the
   * node's resourceVersion): only the invocation that finds `expected` there moves it to
   * `next`, writing the record beside it. Two deliveries of one hand-off never both carry on.
   */
  claimHandOff(nodeName: string, expected: string | undefined, next: string, record: DrainRecord): Promise<'claimed' | 'lost' | 'node-gone'>;
  /** Marks an outdated node for an instance refresh, conditional on the node as read. */
  markOutdated(node: NodeInfo, marks: OutdatedMarks): Promise<PatchResult>;
  /**
   * Takes back exactly what refresh marks of this group set, on every node labelled for one
   * of them; `keep` names a refresh whose marks stay. A node a drain of ours is draining
   * keeps its cordon (the drain owns it now).
   */
  unmarkOutdated(group: string, select: { readonly refreshId?: string; readonly keep?: string; readonly nodes?: readonly NodeInfo[] }): Promise<readonly OutdatedUnmarked[]>;
  /** A migration's marks (or its renewed record), conditional on the node as read; the taint and cordon only where asked. */
  markMigrating(node: NodeInfo, marks: { readonly record: MigrationRecord; readonly owner: string; readonly taint: boolean; readonly cordon: boolean }): Promise<PatchResult>;
  /** Takes back exactly what the node's migration record says was set, conditional on the node as read; what was removed. */
  unmarkMigrating(node: NodeInfo): Promise<{ readonly result: PatchResult; readonly removed: readonly string[] }>;
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

export type Blocked = {
  readonly kind: 'blocked';
  readonly reason: BlockReason;
  readonly message: string;
  readonly retryAfterSeconds: number | undefined;
  readonly budgetName: string | undefined;
};

export type EvictionResult =
  | { readonly kind: 'evicted' }
  /** 404 (already deleted) or 409 whose precondition names the UID (it is another pod now). */
  | { readonly kind: 'gone' }
  | Blocked;

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

/** A storage.k8s.io/v1 VolumeAttachment: a volume attached to a node, until the attacher detached it. */
export interface VolumeAttachmentInfo {
  readonly name: string;
  readonly uid: string;
  readonly nodeName: string;
  /** The CSI driver that attaches it (spec.attacher). */
  readonly attacher: string;
  /** spec.source.persistentVolumeName; absent for an inline (migrated in-tree) volume. */
  readonly persistentVolumeName: string | undefined;
}

/** The VolumeAttachments of one node as they come and go: one list, then one watch. */
export interface VolumeAttachmentWatch {
  /** The node's attachments as last seen. Throws while the view cannot be kept current. */
  current(): readonly VolumeAttachmentInfo[];
  changed(timeoutMs: number): Promise<void>;
  close(): void;
}

export interface VolumeGateway {
  /**
   * Follows the VolumeAttachments of one node. With `names`, exactly those, each read by name
   * (a GET each, asked again every few seconds; a transient failure keeps the last view); else
   * the cluster's list and watch, this node's kept on our side (there is no field selector for
   * spec.nodeName): the fallback for volumes whose attachment cannot be named.
   */
  watchVolumeAttachments(nodeName: string, o?: { readonly names?: readonly string[] }): Promise<VolumeAttachmentWatch>;
  /** The claim a PersistentVolume is bound to (spec.claimRef), undefined when unbound or gone. */
  claimOfVolume(persistentVolumeName: string): Promise<{ readonly namespace: string; readonly name: string } | undefined>;
}

/** Everything a use case may ask of the cluster. */
export type ClusterGateway = NodeGateway &
  PodGateway &
  EventRecorder &
  VolumeGateway &
  LoadBalancerSources &
  DrainabilityGateway &
  ChoiceGateway &
  OutOfServiceGateway &
  RepairGateway;
