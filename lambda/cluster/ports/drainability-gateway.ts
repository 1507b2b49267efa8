// What can keep a node from draining now, and why: the findings of the drainability analysis
// (adapters/kubernetes/drainability.ts), shared by `check`, `upgrade` and observe mode.

// What can keep a node from draining now, and why: the findings of the drainability analysis
// (adapters/kubernetes/drainability.ts), shared by `check`, `upgrade` and observe mode
// (MODE=observe), so the three say the same thing. The pod rules are the drainer's own (pods.ts).
export type Severity =
  /** The drain cannot finish without a change: the upgrade refuses without --force. */
  | 'blocker'
  /** The drain will wait, or the pod will not come back as it was. */
  | 'warning'
  /** Worth knowing (batch work waited for). */
  | 'info';

export type FindingKind =
  | 'budget-allows-none'
  | 'budget-pinned-by-unhealthy-pods'
  | 'multiple-budgets'
  | 'tolerates-cordon'
  | 'waits-for-completion'
  | 'no-controller'
  | 'budget-deadlock-terminate-first';

export interface Finding {
  readonly node: string;
  readonly pod: string;
  readonly kind: FindingKind;
  readonly severity: Severity;
  readonly why: string;
  readonly budget?: string | undefined;
  /** What would unblock it. */
  readonly fix?: string | undefined;
}

/** The analysis for some nodes, from the cluster as it is now. */
export interface DrainabilityGateway {
  drainability(nodes: readonly string[]): Promise<readonly Finding[]>;
}
