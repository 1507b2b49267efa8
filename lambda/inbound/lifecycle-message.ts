// Parses one Auto Scaling lifecycle message, and the hand-off messages that carry a long
// drain on: the original notification plus the hand-off ("carry on hand-off N of this action").
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/prepare-for-lifecycle-notifications.html
//
// Bad input is a value, not an exception: the router logs it with the offending field and
// moves on to the next record, so one malformed message never causes a retry storm.
import { isObject } from './deliveries.js';

export type LifecycleTransition = 'launching' | 'terminating';

export interface LifecycleNotification {
  readonly transition: LifecycleTransition;
  readonly autoScalingGroupName: string;
  readonly lifecycleHookName: string;
  readonly instanceId: string;
  /** Absent only in a hand-off the reconciler started: it names the action by its instance. */
  readonly lifecycleActionToken: string | undefined;
  /** When Auto Scaling sent it: a new drain's deadlines are measured from here. */
  readonly time: Date;
  readonly notificationMetadata: string | undefined;
  /**
   * Where the instance comes from and goes to: `EC2`, `AutoScalingGroup` or `WarmPool`.
   * A launch into the warm pool is `EC2` -> `WarmPool`; out of it `WarmPool` ->
   * `AutoScalingGroup`; a scale-in that reuses the instance `AutoScalingGroup` -> `WarmPool`.
   * https://docs.aws.amazon.com/autoscaling/ec2/userguide/warm-pools-eventbridge-events.html
   */
  readonly origin?: string | undefined;
  readonly destination?: string | undefined;
  /** Present when an earlier invocation of ours (or the reconciler) handed this termination on. */
  readonly handOff?: HandOff | undefined;
}

/**
 * A hand-off names, it does not carry: which hand-off of which action. The phase, the
 * deadlines, the eviction window and the load-balancer wait are read from our record on the
 * node, so a forged, replayed or reordered hand-off can at most cause one more verification.
 */
export interface HandOff {
  readonly count: number;
  /** The claim it was published under (the node's hand-off annotation must still hold it). */
  readonly claim: string | undefined;
  /** Started by the reconciler for a drain whose chain was lost (no token: by instance id). */
  readonly byReconciler: boolean;
}

/** The field our hand-off messages add to the original notification. */
export const handOffField = 'GracefulNodeTerminationHandOff';

export type ParseResult =
  | { readonly ok: true; readonly notification: LifecycleNotification }
  | { readonly ok: false; readonly field: string; readonly reason: string };

/** A Map, not an object: a transition named `constructor` or `__proto__` must find nothing. */
const transitions: ReadonlyMap<string, LifecycleTransition> = new Map([
  ['autoscaling:EC2_INSTANCE_LAUNCHING', 'launching'],
  ['autoscaling:EC2_INSTANCE_TERMINATING', 'terminating'],
]);

export const instanceIdPattern = /^i-[0-9a-f]{8,17}$/;

const bad = (field: string, reason: string): ParseResult => ({ ok: false, field, reason });

const text = (message: Readonly<Record<string, unknown>>, field: string): string | undefined => {
  const value = message[field];
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
};

/** Parses one lifecycle message, however it arrived (deliveries.ts unwraps SNS, SQS and EventBridge). */
export function parseLifecycleMessage(message: Readonly<Record<string, unknown>>): ParseResult {
  // Only a string names a transition: String() of an object without a callable toString throws.
  const raw = message['LifecycleTransition'];
  const transition = typeof raw === 'string' ? transitions.get(raw) : undefined;
  if (transition === undefined)
    return bad(
      'LifecycleTransition',
      `is ${JSON.stringify(message['LifecycleTransition'])}, expected one of ${[...transitions.keys()].join(', ')}`,
    );
  let handOff: HandOff | undefined;
  if (message[handOffField] !== undefined) {
    const parsed = parseHandOff(message[handOffField]);
    if ('field' in parsed) return bad(parsed.field, parsed.reason);
    handOff = parsed;
  }
  const required = [
    'AutoScalingGroupName',
    'LifecycleHookName',
    'EC2InstanceId',
    'Time',
    ...(handOff?.byReconciler ? [] : ['LifecycleActionToken']),
  ];
  for (const field of required) if (text(message, field) === undefined) return bad(field, 'is missing or empty');
  const instanceId = text(message, 'EC2InstanceId')!;
  if (!instanceIdPattern.test(instanceId))
    return bad('EC2InstanceId', `is ${JSON.stringify(instanceId)}, not an EC2 instance id`);
  const time = new Date(text(message, 'Time')!);
  if (Number.isNaN(time.getTime())) return bad('Time', `is ${JSON.stringify(message['Time'])}, not an ISO 8601 time`);
  return {
    ok: true,
    notification: {
      transition,
      autoScalingGroupName: text(message, 'AutoScalingGroupName')!,
      lifecycleHookName: text(message, 'LifecycleHookName')!,
      instanceId,
      lifecycleActionToken: text(message, 'LifecycleActionToken'),
      time,
      notificationMetadata:
        typeof message['NotificationMetadata'] === 'string' ? message['NotificationMetadata'] : undefined,
      origin: text(message, 'Origin'),
      destination: text(message, 'Destination'),
      handOff,
    },
  };
}

/**
 * Reads our hand-off field. Fields of the versions before (`phase`, `loadBalancerWaitUntil`,
 * `evicted`, `drainOutcome`) are ignored: where the drain stands is read from the node, so an
 * upgrade never strands a drain in flight and no message decides it.
 */
function parseHandOff(h: unknown): HandOff | { field: string; reason: string } {
  if (!isObject(h) || !Number.isInteger(h['count']) || (h['count'] as number) < 1) {
    return { field: handOffField, reason: 'must be an object with an integer count >= 1' };
  }
  const claim = h['claim'];
  if (claim !== undefined && typeof claim !== 'string')
    return { field: `${handOffField}.claim`, reason: `is ${JSON.stringify(claim)}, not a claim` };
  return { count: h['count'] as number, claim, byReconciler: h['resumedBy'] === 'reconciler' };
}

/**
 * The message a hand-off publishes: the original notification and the hand-off, nothing more.
 * Without one, the notification as it came: a second delivery of it.
 */
export function handOffMessage(
  n: LifecycleNotification,
  handOff: { readonly count: number; readonly claim: string | undefined; readonly byReconciler?: boolean } | undefined,
): Record<string, unknown> {
  return {
    Origin: n.origin ?? 'AutoScalingGroup',
    ...(n.destination !== undefined ? { Destination: n.destination } : {}),
    Service: 'graceful-node-termination',
    LifecycleTransition:
      n.transition === 'terminating' ? 'autoscaling:EC2_INSTANCE_TERMINATING' : 'autoscaling:EC2_INSTANCE_LAUNCHING',
    AutoScalingGroupName: n.autoScalingGroupName,
    LifecycleHookName: n.lifecycleHookName,
    EC2InstanceId: n.instanceId,
    ...(n.lifecycleActionToken !== undefined ? { LifecycleActionToken: n.lifecycleActionToken } : {}),
    // The original time travels on for the log; deadlines are read from the node's record.
    Time: n.time.toISOString(),
    ...(n.notificationMetadata !== undefined ? { NotificationMetadata: n.notificationMetadata } : {}),
    ...(handOff !== undefined
      ? {
          [handOffField]: {
            count: handOff.count,
            ...(handOff.claim !== undefined ? { claim: handOff.claim } : {}),
            ...(handOff.byReconciler ? { resumedBy: 'reconciler' } : {}),
          },
        }
      : {}),
  };
}
