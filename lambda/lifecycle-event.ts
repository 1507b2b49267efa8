// Parses one Auto Scaling lifecycle notification.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/prepare-for-lifecycle-notifications.html
import type { HandOffState } from './termination/hand-off.js';

// Bad input is a value, not an exception: the handler logs it with the offending field
// and moves on to the next record, so one malformed message never causes a retry storm.

export type LifecycleTransition = 'launching' | 'terminating';

export interface LifecycleNotification {
  readonly kind: 'lifecycle';
  readonly transition: LifecycleTransition;
  readonly autoScalingGroupName: string;
  readonly lifecycleHookName: string;
  readonly instanceId: string;
  readonly lifecycleActionToken: string;
  /** When Auto Scaling sent it: deadlines are measured from here. */
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
  /** Present when an earlier invocation of ours handed this termination on. */
  readonly handOff?: HandOffState | undefined;
}

/** The field our hand-off messages add to the original notification. */
export const handOffField = 'GracefulNodeTerminationHandOff';

export interface TestNotification {
  readonly kind: 'test';
  readonly autoScalingGroupName: string | undefined;
}

export type ParseResult =
  | { readonly ok: true; readonly notification: LifecycleNotification | TestNotification }
  | { readonly ok: false; readonly field: string; readonly reason: string };

const transitions: Readonly<Record<string, LifecycleTransition>> = {
  'autoscaling:EC2_INSTANCE_LAUNCHING': 'launching',
  'autoscaling:EC2_INSTANCE_TERMINATING': 'terminating',
};

const instanceIdPattern = /^i-[0-9a-f]{8,17}$/;

const bad = (field: string, reason: string): ParseResult => ({ ok: false, field, reason });

/**
 * Parses one lifecycle message, however it arrived (delivery.ts unwraps SNS, SQS and
 * EventBridge). `field` names the message itself in errors: `Sns.Message`, `body`, `detail`.
 */
export function parseLifecycleMessage(message: unknown, field = 'Sns.Message'): ParseResult {
  if (!isObject(message)) return bad(field, 'is not a JSON object');
  if (message['Event'] === 'autoscaling:TEST_NOTIFICATION') {
    const group = message['AutoScalingGroupName'];
    return {
      ok: true,
      notification: { kind: 'test', autoScalingGroupName: typeof group === 'string' ? group : undefined },
    };
  }
  const transitionRaw = message['LifecycleTransition'];
  if (typeof transitionRaw !== 'string') return bad('LifecycleTransition', 'is missing or not a string');
  const transition = transitions[transitionRaw];
  if (transition === undefined) {
    return bad('LifecycleTransition', `is ${JSON.stringify(transitionRaw)}, expected one of ${Object.keys(transitions).join(', ')}`);
  }
  const fields = ['AutoScalingGroupName', 'LifecycleHookName', 'EC2InstanceId', 'LifecycleActionToken', 'Time'] as const;
  const values: Partial<Record<(typeof fields)[number], string>> = {};
  for (const field of fields) {
    const value = message[field];
    if (typeof value !== 'string' || value.trim() === '') return bad(field, 'is missing or empty');
    values[field] = value;
  }
  const instanceId = values.EC2InstanceId!;
  if (!instanceIdPattern.test(instanceId)) return bad('EC2InstanceId', `is ${JSON.stringify(instanceId)}, not an EC2 instance id`);
  const time = new Date(values.Time!);
  if (Number.isNaN(time.getTime())) return bad('Time', `is ${JSON.stringify(values.Time)}, not an ISO 8601 time`);
  const metadata = message['NotificationMetadata'];
  let handOff: LifecycleNotification['handOff'];
  if (message[handOffField] !== undefined) {
    const parsedHandOff = parseHandOff(message[handOffField], values.LifecycleActionToken!);
    if ('field' in parsedHandOff) return bad(parsedHandOff.field, parsedHandOff.reason);
    handOff = parsedHandOff;
  }
  return {
    ok: true,
    notification: {
      kind: 'lifecycle',
      transition,
      autoScalingGroupName: values.AutoScalingGroupName!,
      lifecycleHookName: values.LifecycleHookName!,
      instanceId,
      lifecycleActionToken: values.LifecycleActionToken!,
      time,
      notificationMetadata: typeof metadata === 'string' ? metadata : undefined,
      origin: typeof message['Origin'] === 'string' ? message['Origin'] : undefined,
      destination: typeof message['Destination'] === 'string' ? message['Destination'] : undefined,
      handOff,
    },
  };
}

/**
 * Reads our hand-off field. Messages from before phases and claims were recorded (no
 * `phase`: a load-balancer wait when `loadBalancerWaitUntil` is set; claim `<token>/<count>`)
 * still resume, so an upgrade never strands a drain in flight.
 */
function parseHandOff(h: unknown, token: string): HandOffState | { field: string; reason: string } {
  if (!isObject(h) || !Number.isInteger(h['count']) || (h['count'] as number) < 1) {
    return { field: handOffField, reason: 'must be an object with an integer count >= 1' };
  }
  const count = h['count'] as number;
  const until = h['loadBalancerWaitUntil'];
  const untilMs = typeof until === 'string' ? Date.parse(until) : undefined;
  if (until !== undefined && (untilMs === undefined || Number.isNaN(untilMs))) {
    return { field: `${handOffField}.loadBalancerWaitUntil`, reason: `is ${JSON.stringify(until)}, not an ISO 8601 time` };
  }
  const evicted = h['evicted'] ?? 0;
  if (!Number.isInteger(evicted) || (evicted as number) < 0) {
    return { field: `${handOffField}.evicted`, reason: `is ${JSON.stringify(evicted)}, not an integer >= 0` };
  }
  const claim = h['claim'] ?? `${token}/${count}`;
  if (typeof claim !== 'string' || !claim.startsWith(`${token}/`)) {
    return { field: `${handOffField}.claim`, reason: `is ${JSON.stringify(claim)}, not a claim for this lifecycle action token` };
  }
  const phase = h['phase'] ?? (untilMs !== undefined ? 'settle' : 'drain');
  if (phase === 'drain') return { phase, count, claim, evicted: evicted as number };
  if (phase !== 'settle') return { field: `${handOffField}.phase`, reason: `is ${JSON.stringify(phase)}, expected drain or settle` };
  if (untilMs === undefined) return { field: `${handOffField}.loadBalancerWaitUntil`, reason: 'is required in the settle phase' };
  const drainOutcome = h['drainOutcome'] ?? 'drained';
  if (drainOutcome !== 'drained' && drainOutcome !== 'timed-out') {
    return { field: `${handOffField}.drainOutcome`, reason: `is ${JSON.stringify(drainOutcome)}, expected drained or timed-out` };
  }
  return { phase, count, claim, evicted: evicted as number, loadBalancerWaitUntilMs: untilMs, drainOutcome };
}

/** The message a hand-off publishes: the original notification plus where the work stands. */
export function handOffMessage(n: LifecycleNotification, next: HandOffState): Record<string, unknown> {
  return {
    Origin: n.origin ?? 'AutoScalingGroup',
    ...(n.destination !== undefined ? { Destination: n.destination } : {}),
    Service: 'graceful-node-termination',
    LifecycleTransition: n.transition === 'terminating' ? 'autoscaling:EC2_INSTANCE_TERMINATING' : 'autoscaling:EC2_INSTANCE_LAUNCHING',
    AutoScalingGroupName: n.autoScalingGroupName,
    LifecycleHookName: n.lifecycleHookName,
    EC2InstanceId: n.instanceId,
    LifecycleActionToken: n.lifecycleActionToken,
    // The original time travels on: every deadline is measured from it.
    Time: n.time.toISOString(),
    ...(n.notificationMetadata !== undefined ? { NotificationMetadata: n.notificationMetadata } : {}),
    [handOffField]: {
      phase: next.phase,
      count: next.count,
      claim: next.claim,
      // Pods evicted so far, so the last invocation's Drained Event counts the whole drain.
      ...(next.evicted ? { evicted: next.evicted } : {}),
      ...(next.phase === 'settle' ? { loadBalancerWaitUntil: new Date(next.loadBalancerWaitUntilMs).toISOString(), drainOutcome: next.drainOutcome } : {}),
    },
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
