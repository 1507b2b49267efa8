// What the Kubernetes adapter offers for nodes below the lookup (node-api.ts implements it): reads by
// name, a list by hostname label, a scan, a watch.
import { type NodeWatch } from '../../cluster/ports/node-gateway.js';
import { type NodeInfo } from '../../cluster/model.js';

/** What the Kubernetes adapter offers for nodes, below the lookup. */
export interface NodeReader {
  /** One GET; undefined on 404. */
  getNode(name: string): Promise<NodeInfo | undefined>;
  /**
   * The nodes whose kubernetes.io/hostname label is one of these names, in one list per batch
   * (the kubelet sets the label to the node's hostname, on EKS its name); a node labelled
   * otherwise is not in the answer.
   */
  getNodesNamed(names: readonly string[]): Promise<readonly NodeInfo[]>;
  /** Lists every node (paged) and matches spec.providerID: the fallback, cost grows with the cluster. */
  scanForInstances(instanceIds: readonly string[]): Promise<ReadonlyMap<string, NodeInfo>>;
  /** A list+watch of the node with this name, whatever its providerID. */
  watchNodeNamed(name: string): Promise<NodeWatch>;
}
