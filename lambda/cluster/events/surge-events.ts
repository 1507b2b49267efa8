// The Events of surge before evict (eviction/surge-gate.ts), as named constructors like the
// rest of events/: on the pod (what `kubectl describe pod` shows) and on the node (the drain's story).
import type { ClusterEvent, NodeInfo, PodInfo } from '../model.js';
import { podKey } from '../rules/pods.js';

type NodeRef = Pick<NodeInfo, 'name' | 'uid'>;
type PodRef = Pick<PodInfo, 'name' | 'namespace' | 'uid'>;

const both = (
  node: NodeRef,
  pod: PodRef,
  type: ClusterEvent['type'],
  reason: string,
  onPod: string,
  onNode: string,
): ClusterEvent[] => [
  { regarding: { kind: 'Pod', name: pod.name, namespace: pod.namespace, uid: pod.uid }, type, reason, message: onPod },
  { regarding: { kind: 'Node', name: node.name, uid: node.uid }, type, reason, message: onNode },
];

export const surgeStarted = (node: NodeRef, pod: PodRef, deployment: string, timeoutSeconds: number): ClusterEvent[] =>
  both(
    node,
    pod,
    'Normal',
    'SurgeStarted',
    `Deployment ${deployment} restarted (as kubectl rollout restart) before evicting this pod from draining node ` +
      `${node.name}: it has no other Ready replica on a node that stays. Evicted once a replacement is Ready ` +
      `elsewhere, or after ${timeoutSeconds} s.`,
    `Pod ${podKey(pod)} is the last Ready replica of Deployment ${deployment} off the leaving nodes: Deployment ` +
      `restarted (as kubectl rollout restart); evicting it once a replacement is Ready elsewhere, or after ` +
      `${timeoutSeconds} s.`,
  );

export const surgeReady = (
  node: NodeRef,
  pod: PodRef,
  o: { deployment: string; replacement: string; on: string; seconds: number },
): ClusterEvent[] =>
  both(
    node,
    pod,
    'Normal',
    'SurgeReady',
    `Replacement ${o.replacement} of Deployment ${o.deployment} is Ready on node ${o.on} after ${o.seconds} s: ` +
      `evicting this pod (its PodDisruptionBudget decides).`,
    `Replacement ${o.replacement} of Deployment ${o.deployment} is Ready on node ${o.on} after ${o.seconds} s: ` +
      `evicting ${podKey(pod)}.`,
  );

export const surgeTimedOut = (
  node: NodeRef,
  pod: PodRef,
  o: { deployment: string; seconds: number; why: string },
): ClusterEvent[] =>
  both(
    node,
    pod,
    'Warning',
    'SurgeTimedOut',
    `No replacement of Deployment ${o.deployment} became Ready on a node that stays within ${o.seconds} s ` +
      `(${o.why}): evicting this pod as any other; the drain's deadline policy applies.`,
    `No replacement of Deployment ${o.deployment} Ready elsewhere within ${o.seconds} s (${o.why}): evicting ` +
      `${podKey(pod)} as any other pod.`,
  );

export const surgeRefused = (
  node: NodeRef,
  pod: PodRef,
  o: { owner: string; reason: string; why: string },
): ClusterEvent[] =>
  both(
    node,
    pod,
    'Warning',
    'SurgeRefused',
    `Not surging ${o.owner} before evicting this pod from draining node ${node.name} (${o.reason}): ${o.why}. ` +
      `Evicted as any other pod.`,
    `Not surging ${o.owner} before evicting ${podKey(pod)} (${o.reason}): ${o.why}. Evicted as any other pod.`,
  );
