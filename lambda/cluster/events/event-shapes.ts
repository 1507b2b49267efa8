// Every Kubernetes Event we write is a named constructor in events/ (what people read in
// `kubectl describe node`), built on these two shapes. Karpenter keeps its Events the same way:
// https://github.com/kubernetes-sigs/karpenter/blob/main/pkg/controllers/node/termination/terminator/events/events.go
import { type ClusterEvent, type NodeInfo, type PodInfo } from '../model.js';

export type NodeRef = Pick<NodeInfo, 'name' | 'uid'>;

export type PodRef = Pick<PodInfo, 'name' | 'namespace' | 'uid'>;

export const onNode = (node: NodeRef, type: ClusterEvent['type'], reason: string, message: string): ClusterEvent => ({
  regarding: { kind: 'Node', name: node.name, uid: node.uid },
  type,
  reason,
  message,
});

export const onPod = (pod: PodRef, type: ClusterEvent['type'], reason: string, message: string): ClusterEvent => ({
  regarding: { kind: 'Pod', name: pod.name, namespace: pod.namespace, uid: pod.uid },
  type,
  reason,
  message,
});

/** At most ten names in an Event, then how many more. */
export function listed(names: readonly string[]): string {
  return names.length <= 10 ? names.join(', ') : `${names.slice(0, 10).join(', ')} and ${names.length - 10} more`;
}
