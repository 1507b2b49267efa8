// The pods of a node: one live view, the eviction API, and the force policy's delete.
import { type PodInfo, type EvictionResult } from '../model.js';

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

/** A PodDisruptionBudget as its watch last saw it. */
export interface BudgetView {
  readonly disruptionsAllowed: number;
  /** The disruption controller has seen the budget's latest spec (else the eviction API refuses). */
  readonly processed: boolean;
  /** status.currentHealthy and status.desiredHealthy: what the budget says now (a long block is told with them). */
  readonly currentHealthy?: number | undefined;
  readonly desiredHealthy?: number | undefined;
}

/**
 * A namespace's PodDisruptionBudgets, watched: opened in the background, so current() is undefined until the budget's
 * first event arrives.
 */
export interface BudgetWatch {
  /** undefined: not seen yet, deleted, or the watch failed (then the caller retries as it would without it). */
  current(name: string): BudgetView | undefined;
  close(): void;
}

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
  /**
   * Watches the budgets of the namespace where one refused an eviction (one request for every budget there), so
   * retries wait until theirs allows a disruption.
   */
  watchBudgets(namespace: string): BudgetWatch;
  /** Pending pods of the same controller, with the scheduler's reason (diagnosis only). */
  pendingReplacements(pod: PodInfo): Promise<readonly { readonly pod: string; readonly reason: string }[]>;
}
