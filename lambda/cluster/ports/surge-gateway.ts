// Surge before evict (docs/surge.md): what the drain reads of a Deployment and its pods, and the
// one write it makes to it (the restart annotation, as `kubectl rollout restart` writes it).
import type { PodInfo, Placement } from '../model.js';

export interface FieldManager {
  readonly manager: string;
  /** '' for the object itself, 'scale' or 'status' for a subresource. */
  readonly subresource: string;
}

/** A Deployment as the surge decision reads it. */
export interface DeploymentInfo {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** metadata.resourceVersion as read: the restart is written only over this version. */
  readonly resourceVersion: string;
  readonly generation: number;
  readonly observedGeneration: number;
  readonly paused: boolean;
  readonly replicas: number;
  readonly strategy: 'RollingUpdate' | 'Recreate';
  /** spec.strategy.rollingUpdate.maxSurge as written: an integer or a percentage ("25%" when unset). */
  readonly maxSurge: number | string;
  readonly annotations: Readonly<Record<string, string>>;
  readonly templateLabels: Readonly<Record<string, string>>;
  /** The restart annotation of the pod template, as it is now. */
  readonly restartedAt: string | undefined;
  /** Every container of the template has a readiness probe. */
  readonly readinessProbe: boolean;
  /** A required pod anti-affinity term on kubernetes.io/hostname that selects the template's own labels. */
  readonly selfAntiAffinityOnHostname: boolean;
  /** The template's nodeSelector and tolerations: which nodes count as room for one more pod. */
  readonly placement: Placement;
  /** metadata.managedFields: who writes the object (GitOps tools, an HPA through scale). */
  readonly managers: readonly FieldManager[];
  /** spec.selector as a label selector string, to list its pods. */
  readonly selector: string;
}

/** A pod of the Deployment (any of its ReplicaSets). */
export interface ReplicaPod {
  readonly name: string;
  readonly uid: string;
  readonly nodeName: string | undefined;
  readonly ready: boolean;
  readonly terminating: boolean;
  /** Pending with PodScheduled False, reason Unschedulable. */
  readonly unschedulable: boolean;
}

export type RestartResult = 'patched' | 'gone' | 'conflict';

export interface SurgeGateway {
  /** The Deployment that owns the pod through its ReplicaSet; undefined: none (a bare ReplicaSet, gone). */
  deploymentOfPod(pod: Pick<PodInfo, 'namespace' | 'name' | 'controllerUid'>): Promise<DeploymentInfo | undefined>;
  /** The Deployment by name (a resumed surge); undefined: gone. */
  readDeployment(namespace: string, name: string): Promise<DeploymentInfo | undefined>;
  /** Every pod its selector selects, one list in its namespace. */
  replicaPods(d: Pick<DeploymentInfo, 'namespace' | 'selector'>): Promise<readonly ReplicaPod[]>;
  /**
   * The restart, exactly as `kubectl rollout restart` patches it, over the version read only: 'conflict' when the
   * Deployment changed since (another invocation of the same drain may have restarted it); 'gone': it is no more.
   */
  restartDeployment(
    d: Pick<DeploymentInfo, 'namespace' | 'name' | 'resourceVersion'>,
    restartedAt: string,
  ): Promise<RestartResult>;
  /**
   * Nodes a replacement with hostname anti-affinity may go to, by name: not cordoned, carrying
   * the template's nodeSelector labels, every NoSchedule/NoExecute taint tolerated.
   */
  schedulableNodes(placement: Placement): Promise<readonly string[]>;
}
