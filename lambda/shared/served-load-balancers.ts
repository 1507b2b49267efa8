// The load balancers that can hold this cluster's instances, as the cluster names them: what the
// settle phase hands to the ELB reads (aws-ports.ts). Read from the cluster by
// cluster/rules/served-load-balancers.ts.
import type { LabelSelector } from './label-selector.js';

/** A target group the cluster serves, with the port its instance targets are registered on when known. */
export interface ServedTargetGroup {
  readonly arn: string;
  /** The NodePort the controller registers instances on (the bound Service's); undefined: read every target. */
  readonly port?: number | undefined;
  /**
   * The nodes whose instances its bindings register (any of these selectors; a TargetGroupBinding's spec.nodeSelector);
   * undefined: every node.
   */
  readonly nodeSelectors?: readonly LabelSelector[] | undefined;
}

export interface ServedLoadBalancers {
  /** TargetGroupBindings' target groups whose targets are instances (or of a type not said). */
  readonly targetGroups: readonly ServedTargetGroup[];
  /** Classic Load Balancers the in-tree service controller made, by name. */
  readonly classicNames: readonly string[];
  /** Network Load Balancers the in-tree service controller made, by name (their target groups are looked up). */
  readonly networkNames: readonly string[];
}
