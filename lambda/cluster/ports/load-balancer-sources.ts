// Which load balancers the cluster serves, as the cluster itself says (rules/served-load-balancers.ts).
import { type ServedLoadBalancers } from '../../shared/served-load-balancers.js';

export interface LoadBalancerSources {
  /** One list of TargetGroupBindings (none when the CRD is not installed) and one of Services. */
  servedLoadBalancers(): Promise<ServedLoadBalancers>;
}
