// The drain rules' properties: per pod Drain, Skip or WaitCompleted and an order, as Cluster
// API's MachineDrainRule spec reads (docs/drain-rules.md), and DaemonSet pods evicted last.
// Written into DRAIN_RULES and EVICT_DAEMONSET_PODS; a pod's own label or mark wins over them.
// https://cluster-api.sigs.k8s.io/tasks/automated-machine-management/machine_deletions
import type { DrainRuleSpec } from '../lambda/shared/config.js';

/** What the drain does with the pods a rule selects. */
export enum DrainBehavior {
  /** Evicted, in the rule's `order` (lower orders first). */
  DRAIN = 'Drain',
  /** Left running: the node goes without waiting for them. */
  SKIP = 'Skip',
  /** Never evicted: the drain waits for them to finish, until its deadline. */
  WAIT_COMPLETED = 'WaitCompleted',
}

/** One requirement of a label selector. */
export interface SelectorRequirement {
  readonly key: string;
  /** In, NotIn, Exists or DoesNotExist. */
  readonly operator: string;
  /** @default - none (Exists, DoesNotExist) */
  readonly values?: string[];
}

/** A label selector: every label and every requirement must hold; empty selects everything. */
export interface LabelSelector {
  /** @default - none */
  readonly matchLabels?: Record<string, string>;
  /** @default - none */
  readonly matchExpressions?: SelectorRequirement[];
}

/** Which pods a rule selects: both selectors must hold. */
export interface DrainRulePods {
  /** The pods' labels. @default - every pod */
  readonly selector?: LabelSelector;
  /**
   * The namespaces, by their `kubernetes.io/metadata.name` label only (the drainer reads no
   * Namespaces). @default - every namespace
   */
  readonly namespaceSelector?: LabelSelector;
}

/** One deployment-wide drain rule. The first rule that selects a pod applies. */
export interface DrainRule {
  /** Named in `check`, the Events and the logs. Unique. */
  readonly name: string;
  readonly behavior: DrainBehavior;
  /** DRAIN only: lower orders leave first; the next order starts once they are gone. @default 0 */
  readonly order?: number;
  /** The pods it applies to: any of these. @default - every pod */
  readonly pods?: DrainRulePods[];
}

export interface DrainRuleProps {
  /**
   * Per-pod drain rules for the whole deployment (docs/drain-rules.md). A pod's own
   * `cluster.x-k8s.io/drain` label or `graceful-node-termination/drain` mark wins over them.
   * @default - none: Jobs and do-not-disrupt pods are waited for (batchWait), critical pods leave last, the rest first
   */
  readonly drainRules?: DrainRule[];
  /**
   * Evict DaemonSet pods too, after every other pod (critical ones last), as Karpenter does.
   * @default false - left running, as `kubectl drain --ignore-daemonsets` does
   */
  readonly evictDaemonSetPods?: boolean;
}

/** The rules as DRAIN_RULES carries them (the behavior enum's values are the handler's words). */
export const drainRuleSpecs = (rules: readonly DrainRule[] | undefined): DrainRuleSpec[] | undefined =>
  rules?.map((r) => ({ ...r, behavior: r.behavior }));
