// The node lifecycle conditions Kubernetes standardised (KEP-5683, kubernetes/kubernetes#139993):
// MaintenancePlanned, DrainInProgress and Drained, set by the actor managing the node's
// lifecycle so storage operators, problem detectors and autoscalers can stand back. Any API
// server accepts them (status.conditions takes any type). Ours carry one of our reasons, so only
// ours are ever taken back, with the marks they go with.
// https://github.com/kubernetes/enhancements/tree/master/keps/sig-node/5683-lifecycle-conditions
import { asError, type Log } from '../../shared/log.js';
import type { LifecycleConditionType, LifecycleCondition } from '../model.js';

import { type ConditionsGateway } from '../ports/conditions-gateway.js';
export const lifecycleConditionTypes: readonly LifecycleConditionType[] = [
  'MaintenancePlanned',
  'DrainInProgress',
  'Drained',
];

/** Our reasons: a condition with another reason is someone else's and is left alone. */
export const ourConditionReasons = {
  termination: 'AutoScalingTermination',
  refresh: 'InstanceRefresh',
  drained: 'DrainComplete',
  deadline: 'DrainDeadlineReached',
} as const;
const ours: ReadonlySet<string> = new Set(Object.values(ourConditionReasons));

export const isOurCondition = (c: { readonly reason?: string | undefined }): boolean =>
  c.reason !== undefined && ours.has(c.reason);

export const planned = (message: string, reason: string = ourConditionReasons.termination): LifecycleCondition => ({
  type: 'MaintenancePlanned',
  status: 'True',
  reason,
  message,
});
export const drainInProgress = (message: string): LifecycleCondition => ({
  type: 'DrainInProgress',
  status: 'True',
  reason: ourConditionReasons.termination,
  message,
});

/** The drain's end: Drained True, or False with the pods the deadline found. */
export function drainEnded(drained: boolean, message: string): LifecycleCondition[] {
  const reason = drained ? ourConditionReasons.drained : ourConditionReasons.deadline;
  return [
    { type: 'DrainInProgress', status: 'False', reason, message },
    { type: 'Drained', status: drained ? 'True' : 'False', reason, message },
  ];
}

/** Best effort: a condition that cannot be written is logged, never a reason to stop a drain. */
export async function tellConditions(
  gateway: Partial<ConditionsGateway>,
  log: Log,
  nodeName: string,
  conditions: readonly LifecycleCondition[],
): Promise<void> {
  try {
    await gateway.setConditions?.(nodeName, conditions);
  } catch (error) {
    log.warn('could not set the node lifecycle conditions; going on', {
      node: nodeName,
      conditions: conditions.map((c) => c.type),
      error: asError(error),
    });
  }
}
