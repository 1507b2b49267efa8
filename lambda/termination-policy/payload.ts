// The payload Auto Scaling sends a custom termination policy, read field by field: a bad field
// is named, as the lifecycle parser names it, and never thrown.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/lambda-custom-termination-policy.html
import { isObject } from '../inbound/deliveries.js';
import { instanceIdPattern } from '../inbound/lifecycle-message.js';

export type Cause = 'SCALE_IN' | 'INSTANCE_REFRESH' | 'MAX_INSTANCE_LIFETIME' | 'REBALANCE';
export const causes: readonly Cause[] = ['SCALE_IN', 'INSTANCE_REFRESH', 'MAX_INSTANCE_LIFETIME', 'REBALANCE'];

/** How much Auto Scaling must remove in one Availability Zone and market. */
export interface CapacityAsk {
  readonly availabilityZone: string;
  readonly capacity: number;
  readonly market: string;
}

/** An instance Auto Scaling suggests, in its order. */
export interface Suggestion {
  readonly instanceId: string;
  readonly availabilityZone: string;
  readonly instanceType: string;
  readonly market: string;
}

export interface ChoiceRequest {
  readonly group: string;
  readonly groupArn: string;
  readonly cause: Cause;
  readonly capacity: readonly CapacityAsk[];
  readonly suggested: readonly Suggestion[];
  /** More than 30,000 instances could go: the list is cut. */
  readonly hasMoreInstances: boolean;
}

export type PayloadResult =
  | { readonly ok: true; readonly request: ChoiceRequest }
  | { readonly ok: false; readonly field: string; readonly reason: string };

const bad = (field: string, reason: string): PayloadResult => ({ ok: false, field, reason });
const shown = (v: unknown) => (v === undefined ? 'missing' : `${JSON.stringify(v)}`.slice(0, 80));
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.trim().length > 0;

/**
 * The instance ids of `Instances`, as far as they can be read: the fail-open answer, even for a payload refused
 * otherwise.
 */
export function suggestedIds(payload: Readonly<Record<string, unknown>>): string[] {
  const list = payload['Instances'];
  if (!Array.isArray(list)) return [];
  return list.flatMap((i) =>
    isObject(i) && typeof i['InstanceId'] === 'string' && instanceIdPattern.test(i['InstanceId'])
      ? [i['InstanceId']]
      : [],
  );
}

export function parseChoiceRequest(payload: Readonly<Record<string, unknown>>): PayloadResult {
  const group = payload['AutoScalingGroupName'];
  if (!nonEmpty(group) || group.length > 255)
    return bad('AutoScalingGroupName', `is ${shown(group)}, expected a group name`);
  const arn = payload['AutoScalingGroupARN'];
  if (
    typeof arn !== 'string' ||
    !/^arn:aws[a-z-]*:autoscaling:[a-z0-9-]+:\d{12}:autoScalingGroup:[^:]+:autoScalingGroupName\/.+$/.test(arn)
  ) {
    return bad('AutoScalingGroupARN', `is ${shown(arn)}, expected an Auto Scaling group ARN`);
  }
  if (!arn.endsWith(`/${group}`))
    return bad('AutoScalingGroupARN', `names another group than AutoScalingGroupName ${JSON.stringify(group)}`);
  const cause = payload['Cause'];
  if (typeof cause !== 'string' || !(causes as readonly string[]).includes(cause))
    return bad('Cause', `is ${shown(cause)}, expected one of ${causes.join(', ')}`);
  const capacity = parseCapacity(payload['CapacityToTerminate']);
  if ('field' in capacity) return capacity;
  const suggested = parseInstances(payload['Instances']);
  if ('field' in suggested) return suggested;
  const more = payload['HasMoreInstances'];
  if (more !== undefined && typeof more !== 'boolean')
    return bad('HasMoreInstances', `is ${shown(more)}, expected true or false`);
  return {
    ok: true,
    request: {
      group,
      groupArn: arn,
      cause: cause as Cause,
      capacity: capacity.list,
      suggested: suggested.list,
      hasMoreInstances: more === true,
    },
  };
}

function parseCapacity(
  raw: unknown,
): { readonly list: CapacityAsk[] } | { readonly ok: false; readonly field: string; readonly reason: string } {
  if (!Array.isArray(raw))
    return { ok: false, field: 'CapacityToTerminate', reason: `is ${shown(raw)}, expected a list` };
  const list: CapacityAsk[] = [];
  for (const [i, c] of raw.entries()) {
    const field = `CapacityToTerminate[${i}]`;
    if (!isObject(c)) return { ok: false, field, reason: 'is not an object' };
    if (!nonEmpty(c['AvailabilityZone']))
      return {
        ok: false,
        field: `${field}.AvailabilityZone`,
        reason: `is ${shown(c['AvailabilityZone'])}, expected a zone name`,
      };
    const n = c['Capacity'];
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
      return { ok: false, field: `${field}.Capacity`, reason: `is ${shown(n)}, expected a whole number` };
    if (!nonEmpty(c['InstanceMarketOption']))
      return {
        ok: false,
        field: `${field}.InstanceMarketOption`,
        reason: `is ${shown(c['InstanceMarketOption'])}, expected on-demand or spot`,
      };
    list.push({ availabilityZone: c['AvailabilityZone'], capacity: n, market: c['InstanceMarketOption'] });
  }
  return { list };
}

function parseInstances(
  raw: unknown,
): { readonly list: Suggestion[] } | { readonly ok: false; readonly field: string; readonly reason: string } {
  if (!Array.isArray(raw)) return { ok: false, field: 'Instances', reason: `is ${shown(raw)}, expected a list` };
  const list: Suggestion[] = [];
  for (const [i, s] of raw.entries()) {
    const field = `Instances[${i}]`;
    if (!isObject(s)) return { ok: false, field, reason: 'is not an object' };
    const id = s['InstanceId'];
    if (typeof id !== 'string' || !instanceIdPattern.test(id))
      return { ok: false, field: `${field}.InstanceId`, reason: `is ${shown(id)}, not an EC2 instance id` };
    if (!nonEmpty(s['AvailabilityZone']))
      return {
        ok: false,
        field: `${field}.AvailabilityZone`,
        reason: `is ${shown(s['AvailabilityZone'])}, expected a zone name`,
      };
    if (!nonEmpty(s['InstanceMarketOption']))
      return {
        ok: false,
        field: `${field}.InstanceMarketOption`,
        reason: `is ${shown(s['InstanceMarketOption'])}, expected on-demand or spot`,
      };
    const type = typeof s['InstanceType'] === 'string' ? s['InstanceType'] : '';
    list.push({
      instanceId: id,
      availabilityZone: s['AvailabilityZone'],
      instanceType: type,
      market: s['InstanceMarketOption'],
    });
  }
  return { list };
}
