// What a soak saw, from outside only: the API server's audit log (the drainer's requests), the
// cluster's state as watched and as read at each release, and the AWS stand-ins' records. The
// invariants (invariants/) read nothing else, so a test can plant any violation in a value of
// this shape. Every time is real time in ms (the audit log's clock; clock.ts converts soak time).
import type { AuditEntry } from '../cluster/kube.js';
import type { SoakSettings } from './scenario.js';

export interface PodRecord {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** The controller's kind (ReplicaSet, StatefulSet, DaemonSet, Job), '' for a bare pod. */
  readonly ownerKind: string;
  /** namespace/name of its Deployment, for a ReplicaSet's pod. */
  readonly deployment?: string | undefined;
  readonly createdMs: number;
  node?: string | undefined;
  boundMs?: number | undefined;
  /** When it was Ready, each stretch (to: until it stopped being Ready, was deleted or went). */
  readonly ready: { fromMs: number; toMs?: number | undefined }[];
  /** When its deletion began (deletionTimestamp seen). */
  deletionMs?: number | undefined;
  /** When it was gone from the API. */
  goneMs?: number | undefined;
  /** When it finished (Succeeded or Failed). */
  finishedMs?: number | undefined;
}

export interface NodeState {
  readonly unschedulable: boolean;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly taints: readonly { readonly key: string; readonly value?: string | undefined; readonly effect: string }[];
  /** Condition types of the node lifecycle conditions (KEP-5683) with status True. */
  readonly conditions: readonly string[];
}

export interface NodeRecord {
  readonly name: string;
  readonly instanceId: string;
  readonly group: string;
  /** As created and Ready, before anything happened to it. */
  readonly initial: NodeState;
  /** As at the end, after the last reconcile pass; undefined when the Node is gone. */
  final?: NodeState | undefined;
  /** Each time it was cordoned or uncordoned, as watched. */
  readonly cordons: { readonly atMs: number; readonly unschedulable: boolean }[];
  deletedMs?: number | undefined;
}

export interface ActionRecord {
  readonly token: string;
  readonly instanceId: string;
  readonly group: string;
  readonly transition: 'terminate' | 'launch';
  readonly openedMs: number;
  /** The notification's Time (the drain deadline counts from it), in real time and in soak time. */
  readonly notifiedMs: number;
  readonly notifiedSoakMs: number;
  /** When the first attempt of the notification's first delivery began. */
  firstInvokedMs?: number | undefined;
  readonly heartbeatsMs: number[];
  readonly completions: { readonly atMs: number; readonly result: string; readonly accepted: boolean }[];
  expiredMs?: number | undefined;
}

export interface ReleaseSnapshot {
  readonly token: string;
  readonly instanceId: string;
  readonly node: string | undefined;
  readonly atMs: number;
  readonly result: string;
  /** The pods on the node as the API server listed them when Auto Scaling accepted the completion. */
  readonly pods: readonly {
    readonly uid: string;
    readonly namespace: string;
    readonly name: string;
    readonly phase: string;
    readonly terminating: boolean;
    /** Persistent volumes its claims are bound to. */
    readonly volumes: readonly string[];
  }[];
  readonly volumeAttachments: readonly { readonly name: string; readonly persistentVolume: string }[];
  /** Each served target group's state for the instance ('unused' when not registered). */
  readonly targets: readonly { readonly targetGroup: string; readonly state: string }[];
  /** The drainer's Events on the node until then. */
  readonly events: readonly { readonly reason: string; readonly message: string }[];
}

/** A launch Auto Scaling was told to ABANDON, and its node as the API server had it then. */
export interface LaunchAbandon {
  readonly instanceId: string;
  readonly node: string | undefined;
  readonly atMs: number;
  /** Ready, without a startup taint: what the launch hook waits for. */
  readonly nodeHealthy: boolean;
}

export interface PolicyCall {
  readonly atMs: number;
  readonly group: string;
  readonly capacity: readonly { readonly zone: string; readonly market: string; readonly capacity: number }[];
  readonly suggested: readonly { readonly instanceId: string; readonly zone: string; readonly market: string }[];
  /** The instances answered; undefined when the call failed (Auto Scaling asks again). */
  readonly answer: readonly string[] | undefined;
}

export interface SpotRecord {
  readonly instanceId: string;
  readonly warnedMs: number;
  readonly reclaimMs: number;
  /** EC2 had given notice (its Spot request marked): a real warning, not a forged one. */
  readonly confirmed: boolean;
}

/** An instance refresh of a group, from its start until Auto Scaling ended it. */
export interface RefreshRecord {
  readonly id: string;
  readonly group: string;
  readonly startedMs: number;
  endedMs?: number | undefined;
}

/** Auto Scaling's lifecycle state of an instance, from when. */
export interface InstanceState {
  readonly instanceId: string;
  readonly state: string;
  readonly atMs: number;
}

export interface ClusterEventRecord {
  readonly reason: string;
  readonly message: string;
  readonly kind: string;
  readonly name: string;
  readonly atMs: number;
}

export interface Observations {
  readonly settings: SoakSettings;
  readonly deploymentName: string;
  readonly namespace: string;
  readonly startMs: number;
  readonly endMs: number;
  /** The end in soak time (marks carry soak time: the deferral's since). */
  readonly endSoakMs: number;
  /** The clock skips (clock.ts): from atRealMs on, soak time is real time plus offsetMs. */
  readonly skips: readonly { readonly atRealMs: number; readonly offsetMs: number }[];
  /** The drainer's requests in the soak's window, as the API server audited them. */
  readonly audit: readonly AuditEntry[];
  readonly actions: readonly ActionRecord[];
  readonly releases: readonly ReleaseSnapshot[];
  readonly launchAbandons: readonly LaunchAbandon[];
  readonly pods: readonly PodRecord[];
  readonly nodes: readonly NodeRecord[];
  readonly events: readonly ClusterEventRecord[];
  readonly policyCalls: readonly PolicyCall[];
  readonly spots: readonly SpotRecord[];
  readonly refreshes: readonly RefreshRecord[];
  readonly instanceStates: readonly InstanceState[];
  /** ELB DescribeTargetHealth calls: when, whether answered (not throttled nor failed). */
  readonly targetReads: readonly { readonly atMs: number; readonly answered: boolean }[];
  /** namespace/name of the Deployments opted into surge before evict. */
  readonly surgeDeployments: readonly string[];
}

export interface Violation {
  readonly invariant: string;
  readonly message: string;
  readonly atMs?: number | undefined;
}

export type Invariant = (o: Observations) => Violation[];
