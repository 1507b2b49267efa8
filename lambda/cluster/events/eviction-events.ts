// The Events of the eviction pass, on the node and on the pod it concerns.
import { type ClusterEvent } from '../model.js';
import { podKey } from '../rules/pods.js';
import { type NodeRef, type PodRef, onNode, listed, onPod } from './event-shapes.js';

// --- eviction ----------------------------------------------------------------------------

export const podRescheduledOnDrainingNode = (node: NodeRef, pod: PodRef) =>
  onNode(
    node,
    'Warning',
    'PodRescheduledOnDrainingNode',
    `Pod ${podKey(pod)} tolerates node.kubernetes.io/unschedulable and was scheduled back onto this draining ` +
      `node; it is not waited for and ends with the instance.`,
  );

export const podsNotWaitedFor = (node: NodeRef, pods: readonly string[], why: string) =>
  onNode(node, 'Warning', 'PodsNotWaitedFor', `Not waiting for ${listed(pods)}: ${why}.`);

export const podForceDeleted = (node: NodeRef, pod: PodRef, graceSeconds: number, why: string): ClusterEvent[] => [
  onNode(
    node,
    'Warning',
    'PodForceDeleted',
    `Deleted pod ${podKey(pod)} with a ${graceSeconds} s grace period so it is gone by the drain deadline${why} ` +
      `(DEADLINE_POLICY=force).`,
  ),
  onPod(
    pod,
    'Warning',
    'PodForceDeleted',
    `Deleted with a ${graceSeconds} s grace period so it is gone by the drain deadline of node ` +
      `${node.name}${why}; eviction could not succeed in time.`,
  ),
];

export const waitingForBatchPods = (node: NodeRef, pods: readonly string[], until: string) =>
  onNode(
    node,
    'Normal',
    'WaitingForBatchPods',
    `Not evicting ${pods.join(', ')} until they finish or ${until}; the rest of the node drains meanwhile.`,
  );

export const podsSkippedByDrainRule = (node: NodeRef, pods: readonly string[]) =>
  onNode(
    node,
    'Normal',
    'PodsSkippedByDrainRule',
    `Leaving ${listed(pods)} running: their drain rule is Skip, so the node goes without them leaving first.`,
  );

export const evictionBlocked = (node: NodeRef, pod: PodRef, what: string): ClusterEvent[] => [
  onPod(pod, 'Warning', 'EvictionBlocked', `Eviction for draining node ${node.name} is blocked: ${what}`),
  onNode(node, 'Warning', 'EvictionBlocked', `Eviction of pod ${podKey(pod)} is blocked: ${what}`),
];

export const evictionBlockedLong = (
  node: NodeRef,
  pod: PodRef,
  o: { budget: string; minutes: number; detail: string; replacements: string },
) =>
  onNode(
    node,
    'Warning',
    'EvictionBlockedLong',
    `Eviction of ${podKey(pod)} has been refused by ${o.budget} for ${o.minutes} min: ` +
      `${o.detail.replace(/\.$/, '')}.${o.replacements}`,
  );

/** MODE=observe: this pod's eviction would be refused now (a budget, two budgets), and why. */
export function evictionWouldBeBlocked(pod: PodRef, why: string): ClusterEvent {
  return onPod(
    pod,
    'Warning',
    'EvictionWouldBeBlocked',
    `Observe mode (MODE=observe): draining this pod's node now would be held up: ${why}`,
  );
}
