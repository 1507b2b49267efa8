// After an undrained release (a drain cut at its deadline, a Spot reclaim), the node's pods
// stay Terminating and its volumes attached until the Node object goes: the out-of-service taint
// lets them go at once, once EC2 says the instance is terminated (termination/instance-terminated.ts).
import { type NodeInfo, type PatchResult } from '../model.js';

export interface OutOfServiceGateway {
  /** The pods still bound to the node that a kubelet would have to stop (not finished, mirror or DaemonSet pods). */
  podsLeftOn(nodeName: string): Promise<readonly string[]>;
  /**
   * Appends node.kubernetes.io/out-of-service=nodeshutdown:NoExecute and our annotation (the instance), conditional on
   * the node as read.
   */
  taintOutOfService(node: NodeInfo, instanceId: string, owner: string): Promise<PatchResult>;
  /** Takes our taint and annotation off, conditional on the node as read. */
  untaintOutOfService(node: NodeInfo): Promise<PatchResult>;
}
