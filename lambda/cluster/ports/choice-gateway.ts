// What a node's departure would cost, as the termination policy (termination-policy/) reads it:
// the node's pods with what the drainer's own rules need, the budgets that select each, and how
// many ready replicas its workload has in all. Read for the candidates only: never a node scan.
import type { NodeInfo, PatchResult, PodInfo, DeferralMark } from '../model.js';

/** A PodDisruptionBudget that selects the pod, as its status says now. */
export interface CostBudget {
  readonly name: string;
  readonly disruptionsAllowed: number;
  readonly currentHealthy: number;
}

/** The workload a pod belongs to (its controller), and its ready replicas in the whole cluster. */
export interface CostOwner {
  readonly kind: string;
  readonly name: string;
  /** status.readyReplicas of the ReplicaSet or StatefulSet; undefined when it could not be read. */
  readonly readyReplicas: number | undefined;
}

export interface CostPod {
  readonly info: PodInfo;
  /** The Ready condition is True. */
  readonly ready: boolean;
  /** spec.priority (0 when unset). */
  readonly priority: number;
  /** controller.kubernetes.io/pod-deletion-cost (0 when unset or not an integer). */
  readonly deletionCost: number;
  /** An emptyDir or hostPath volume: its data stays behind. */
  readonly localStorage: boolean;
  /** Node labels its nodeSelector and required node affinity demand (In or equality), key -> values. */
  readonly requiredNodeLabels: Readonly<Record<string, readonly string[]>>;
  readonly budgets: readonly CostBudget[];
  readonly owner: CostOwner | undefined;
}

export interface ChoiceGateway {
  /** The pods of these nodes (a field selector each), their budgets and owners: flat in cluster size. */
  podsForChoice(nodes: readonly string[]): Promise<ReadonlyMap<string, readonly CostPod[]>>;
  /** Sets (or replaces) the deferral mark and the owner label; conditional on the node as read. */
  markDeferred(node: NodeInfo, mark: DeferralMark, owner: string): Promise<PatchResult>;
  /** Removes the deferral mark (and the owner label when no other mark of ours remains). */
  unmarkDeferred(node: NodeInfo): Promise<PatchResult>;
}
