// The cluster as the use cases see it: plain data, no behaviour. Nodes and pods as we read them, and
// the records of ours a node carries (marks/ has their codecs). Every port (ports/) speaks in these.

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
  readonly handOffClaim?: string | undefined;
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
  /**
   * Drain rules read labels; a do-not-disrupt duration counts from startedAt (started on its node, else bound to it).
   */
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

export interface NodeCondition {
  readonly type: string;
  /** True, False or Unknown. */
  readonly status: string;
  readonly reason: string;
  /** lastTransitionTime: since when the condition has had this status. */
  readonly sinceMs: number;
}

/**
 * What `migrate` set on an old node. The command renews `renewedAtMs` while it runs; once the
 * lease is over (the command died), the reconciler takes back exactly these marks.
 */
export interface MigrationRecord {
  readonly id: string;
  readonly from: string;
  readonly to: string;
  readonly renewedAtMs: number;
  readonly leaseSeconds: number;
  /** The migration cordoned the node (--cordon-all): the cordon is ours to lift. */
  readonly cordoned: boolean;
}

export type DrainMark = 'exclude-from-load-balancers' | 'cordon';

/** When the scale-in that passed the node over first deferred, and of which group. */
export interface DeferralMark {
  readonly sinceMs: number;
  readonly group: string;
}

/**
 * Names the owner of a drain on the node and in hand-off claims, built and recognised in one place
 * (marks/action-id.ts): a lifecycle action by a hash of its token (never the token), the action of an
 * instance addressed through the hook (a drain the reconciler resumed), or a Spot interruption.
 */
export type ActionId = `sha256:${string}` | `instance:${string}` | `spot:${string}`;

/**
 * Where a drain comes from. The trigger that confirmed it says so in the request, the drain record keeps
 * it, and each part that depends on it (the reconciler's ownership, the record's wire form, the deadline
 * policy) decides by a switch over `kind` (rules/drain-source.ts).
 */
export type DrainSource =
  /** A lifecycle action of our terminate hook, named by a hash of its token. */
  | { readonly kind: 'lifecycle-action'; readonly actionId: ActionId; readonly hook: string | undefined }
  /** The action of an instance addressed through the hook: the reconciler resumed a drain whose chain was lost. */
  | { readonly kind: 'resumed'; readonly actionId: ActionId; readonly hook: string | undefined }
  /** An EC2 Spot interruption warning: no lifecycle action; EC2 reclaims the instance two minutes after it. */
  | { readonly kind: 'spot-interruption'; readonly actionId: ActionId }
  /** Marked ahead of its own drain by the drain of another leaving instance of its group (`aheadOf`). */
  | { readonly kind: 'marked-ahead'; readonly hook: string | undefined };

/**
 * What a drain of ours wrote on the node. The phase a resumed drain picks up in, its deadline,
 * its fair eviction window and the end of its load-balancer wait are all read from here, never
 * from a message: a hand-off only says "carry on this action".
 */
export interface DrainRecord {
  readonly source: DrainSource;
  /** The notification's time: the drain deadline runs from here. */
  readonly notifiedAtMs: number;
  /** When our drain first saw the node: the fair eviction window runs from here. */
  readonly startedAtMs: number;
  /** The last write of this drain (mark, hand-off): the reconciler's measure of progress. */
  readonly updatedAtMs: number;
  readonly set: readonly DrainMark[];
  /** The load-balancer label's value before we set it ("false", say): restored, not removed. */
  readonly priorLabel?: string | undefined;
  /** The instance whose drain marked this node ahead of its own (same group, also leaving); kept once adopted. */
  readonly aheadOf?: string | undefined;
  /** Pods evicted so far, over every invocation of this drain. */
  readonly evicted?: number | undefined;
  /** Set when the drain ended: the load-balancer wait runs from here. */
  readonly drained?: { readonly atMs: number; readonly outcome: 'drained' | 'timed-out' } | undefined;
  /**
   * The volumes attached to the node when the drain first saw it, and after (status.volumesAttached):
   * the attach/detach controller drops a volume from the status as its detach begins, so an
   * invocation that resumes the drain cannot learn them from the node alone (volume-names.ts).
   */
  readonly volumes?: readonly string[] | undefined;
  /** The settle phase's last reading of the load balancers, kept across hand-offs (settle-targets.ts). */
  readonly targets?: TargetsReading | undefined;
  /** Surge before evict (surge-marks.ts): each Deployment restarted for this drain, once. */
  readonly surges?: readonly SurgeMark[] | undefined;
}

/** What held the instance at the last look, and when that was. */
export interface TargetsReading {
  readonly atMs: number;
  readonly holds: readonly StoredHold[];
  /** ELB calls the wait made so far, over every invocation (its budget is per termination). */
  readonly calls: number;
}

export interface StoredHold {
  readonly kind: 'target-group' | 'classic';
  readonly id: string;
  readonly name: string;
  readonly state: string;
  readonly port?: number | undefined;
}

/** What a repair of ours decided for a node, and what it set (repair/). */
export interface RepairRecord {
  readonly action: 'replace' | 'reboot';
  readonly instanceId: string;
  /** The condition and reason that stayed bad past their rule. */
  readonly condition: string;
  readonly reason: string;
  readonly decidedAtMs: number;
  /** Reboot only: when EC2 was asked to reboot (before that, the node drains). */
  readonly rebootedAtMs?: number | undefined;
  /** Our cordon (reboot), taken back with the record; never a cordon someone else set. */
  readonly cordoned: boolean;
}

/** A surge of ours, as the drain record keeps it (marks/surge-marks.ts): a hand-off or the reconciler
 * resumes the wait and never restarts a Deployment twice for one drain. */

export type SurgeState = 'waiting' | 'ready' | 'timed-out' | 'refused';

/** A Deployment by name (surge-marks.ts's deploymentKey writes it as namespace/name, the one place). */
export interface DeploymentRef {
  readonly namespace: string;
  readonly name: string;
}

export interface SurgeMark {
  /** The pod the surge is for (its uid: a pod of the same name later is another pod). */
  readonly pod: string;
  readonly uid: string;
  /** Its Deployment; undefined when refused with none (a StatefulSet's pod). */
  readonly deployment: DeploymentRef | undefined;
  /** The restart annotation's value we wrote (undefined: refused, nothing written). */
  readonly restartedAt?: string | undefined;
  /** When the surge began (the per-pod timeout runs from here) or was refused. */
  readonly atMs: number;
  readonly state: SurgeState;
  /** The refusal's name (max-surge-zero, no-readiness-probe, ...). */
  readonly reason?: string | undefined;
}

/** The pod template's placement rules the surge honours. */
export interface Placement {
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly Toleration[];
}

export type LifecycleConditionType = 'MaintenancePlanned' | 'DrainInProgress' | 'Drained';

export interface LifecycleCondition {
  readonly type: LifecycleConditionType;
  readonly status: 'True' | 'False';
  readonly reason: string;
  readonly message: string;
}
