// The Events of a termination on its node: started, cordoned, drained or timed out, completed.
import { type ClusterEvent } from '../model.js';
import { type NodeRef, onNode } from './event-shapes.js';

// --- termination -------------------------------------------------------------------------

export const drainStarted = (node: NodeRef, why: string) => onNode(node, 'Normal', 'DrainStarted', why);

export const cordoned = (node: NodeRef, aheadOf: string | undefined) =>
  onNode(
    node,
    'Normal',
    'Cordoned',
    `Node excluded from external load balancers and marked ` +
      `unschedulable${aheadOf ? ` (already cordoned ahead by the drain of ${aheadOf})` : ''}.`,
  );

export const cordonedAhead = (
  node: NodeRef,
  o: { instanceId: string; group: string; drainedInstance: string; drainedNode: string },
) =>
  onNode(
    node,
    'Normal',
    'CordonedAhead',
    `Instance ${o.instanceId} is leaving group ${o.group} together with ${o.drainedInstance} (node ` +
      `${o.drainedNode}): excluded from external load balancers and cordoned before that node's pods are evicted, ` +
      `so none lands here only to move again.`,
  );

export const drained = (node: NodeRef, seconds: number, evicted: number) =>
  onNode(node, 'Normal', 'Drained', `All pods left the node in ${seconds} s (${evicted} evicted).`);

export const drainTimedOut = (node: NodeRef, o: { seconds: number; stuck: readonly string[]; policy: string }) =>
  onNode(
    node,
    'Warning',
    'DrainTimedOut',
    `Drain deadline reached after ${o.seconds} s; ${o.stuck.length} pod(s) did not leave by eviction: ` +
      `${o.stuck.join(', ')}. ${o.policy}`,
  );

export const lifecycleActionCompleted = (
  node: NodeRef,
  o: { verdict: 'CONTINUE' | 'ABANDON'; alreadyCompleted: boolean; seconds: number; outcome: string },
) =>
  onNode(
    node,
    o.verdict === 'ABANDON' ? 'Warning' : 'Normal',
    'LifecycleActionCompleted',
    `Lifecycle action ${o.alreadyCompleted ? 'was already completed' : 'completed'} with ${o.verdict} ` +
      `${o.seconds} s after the notification (${o.outcome}).`,
  );

export const spotInterruptionDrained = (node: NodeRef, seconds: number, outcome: string) =>
  onNode(
    node,
    'Normal',
    'SpotInterruptionDrained',
    `Drained ${seconds} s after the Spot interruption warning (${outcome}); EC2 reclaims the instance at the ` +
      `two-minute mark.`,
  );

export const accessDenied = (node: NodeRef, verdict: 'CONTINUE' | 'ABANDON') =>
  onNode(
    node,
    'Warning',
    'DrainerAccessDenied',
    `The cluster refused the drainer (RBAC or access entry); lifecycle action completed with ${verdict} without ` +
      `draining.`,
  );

// --- reconcile ---------------------------------------------------------------------------

export const drainResumed = (node: NodeRef, minutes: number) =>
  onNode(
    node,
    'Warning',
    'DrainResumed',
    `The drain of this node made no progress for ${minutes} min while its lifecycle action was still waiting (its ` +
      `hand-off was lost); the reconciler handed it on again.`,
  );

/** MODE=observe: what the termination would have done on this node; nothing was changed. */
export function terminationObserved(node: NodeRef, what: string): ClusterEvent {
  return onNode(node, 'Normal', 'TerminationObserved', `Observe mode (MODE=observe), nothing was changed: ${what}`);
}
