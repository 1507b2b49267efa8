// One load balancer's hold on one instance: an ELBv2 target group (DescribeTargetHealth) or a
// Classic Load Balancer (DescribeInstanceHealth), and the Query answers' parsing.
import type { TargetHold } from '../../shared/aws-ports.js';
import { listOf, parseAnswer, QueryRefusedError, type AwsQuery, type Xml } from './aws-query.js';

/** A call counted against the reading that makes it. */
export type Counted = (api: AwsQuery, action: string, params: Record<string, string>) => Promise<string>;

/**
 * Answers that mean "not held": the target group or load balancer is gone, the instance not
 * registered. The codes as the services send them (HTTP 400), per the SDKs' service models:
 * TargetGroupNotFoundException and InvalidTargetException (ELBv2), AccessPointNotFoundException
 * as LoadBalancerNotFound and InvalidEndPointException as InvalidInstance (Classic).
 */
export const goneCodes = new Set(['TargetGroupNotFound', 'LoadBalancerNotFound', 'InvalidInstance', 'InvalidTarget']);

/** ELBv2 target states that still hold the instance; `unused` (not registered, or in no load balancer) does not. */
export function heldByTargetGroup(state: string): boolean {
  return state !== 'unused';
}

/**
 * A Classic Load Balancer holds an instance while InService (deregistration in progress too) or registered out of
 * service.
 */
export function heldByClassic(state: string, description: string): boolean {
  return !(state === 'OutOfService' && /not currently registered/i.test(description));
}

export const result = (xml: string, action: string): Xml => {
  const root = parseAnswer(xml)[`${action}Response`] as Xml | undefined;
  if (root === undefined) throw new Error(`${action}: the answer has no ${action}Response`);
  return (root[`${action}Result`] as Xml | undefined) ?? {};
};
export const text = (v: unknown): string =>
  typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
export const nextOf = (r: Xml): string | undefined => text(r['NextMarker']) || undefined;

/** arn:aws:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<id> -> <name>. */
export function targetGroupName(arn: string): string {
  return arn.split(':').at(-1)?.split('/')[1] ?? arn;
}

/**
 * One target group. With the port the instance is registered on (a TargetGroupBinding's
 * Service NodePort), only that target is asked for: the answer's size does not grow with the
 * group. Without it, every target: an instance named without its port is looked up on the
 * group's port, which need not be the NodePort it is registered on.
 */
export async function targetGroupHold(
  call: Counted,
  v2: AwsQuery,
  tg: ServedTarget,
  instanceId: string,
): Promise<TargetHold | undefined> {
  const params: Record<string, string> = { TargetGroupArn: tg.arn };
  if (tg.port !== undefined)
    Object.assign(params, { 'Targets.member.1.Id': instanceId, 'Targets.member.1.Port': String(tg.port) });
  const xml = await notGone(call(v2, 'DescribeTargetHealth', params));
  if (xml === undefined) return undefined;
  const states = listOf(result(xml, 'DescribeTargetHealth')['TargetHealthDescriptions'], 'member')
    .filter((d) => text((d['Target'] as Xml | undefined)?.['Id']) === instanceId)
    .map((d) => text((d['TargetHealth'] as Xml | undefined)?.['State']))
    .filter(heldByTargetGroup);
  if (states.length === 0) return undefined;
  return {
    kind: 'target-group',
    id: tg.arn,
    name: tg.name,
    state: states.includes('draining') ? 'draining' : states[0]!,
    ...(tg.port !== undefined ? { port: tg.port } : {}),
  };
}

/**
 * Every instance one target group has registered, with its state (draining before any other
 * when an instance is registered on several ports): one DescribeTargetHealth without Targets,
 * which answers for every target, whatever the instances waiting on it. Gone: none.
 */
export async function registeredInGroup(call: Counted, v2: AwsQuery, arn: string): Promise<Map<string, string>> {
  const registered = new Map<string, string>();
  const xml = await notGone(call(v2, 'DescribeTargetHealth', { TargetGroupArn: arn }));
  if (xml === undefined) return registered;
  for (const d of listOf(result(xml, 'DescribeTargetHealth')['TargetHealthDescriptions'], 'member')) {
    const id = text((d['Target'] as Xml | undefined)?.['Id']);
    const state = text((d['TargetHealth'] as Xml | undefined)?.['State']);
    if (id === '' || !heldByTargetGroup(state) || registered.get(id) === 'draining') continue;
    registered.set(id, state);
  }
  return registered;
}

/** Every instance a Classic Load Balancer has registered, with its state: one DescribeInstanceHealth. */
export async function registeredInClassic(
  call: Counted,
  classic: AwsQuery,
  name: string,
): Promise<Map<string, string>> {
  const registered = new Map<string, string>();
  let xml: string;
  try {
    xml = await call(classic, 'DescribeInstanceHealth', { LoadBalancerName: name });
  } catch (error) {
    // Only the load balancer gone means none: asked for every instance, nothing else is "not registered".
    if (error instanceof QueryRefusedError && error.code === 'LoadBalancerNotFound') return registered;
    throw error;
  }
  for (const s of listOf(result(xml, 'DescribeInstanceHealth')['InstanceStates'], 'member'))
    if (heldByClassic(text(s['State']), text(s['Description'])))
      registered.set(text(s['InstanceId']), text(s['State']));
  return registered;
}

export interface ServedTarget {
  readonly arn: string;
  readonly name: string;
  readonly port?: number | undefined;
}

export async function classicHold(
  call: Counted,
  classic: AwsQuery,
  name: string,
  instanceId: string,
): Promise<TargetHold | undefined> {
  const xml = await notGone(
    call(classic, 'DescribeInstanceHealth', { LoadBalancerName: name, 'Instances.member.1.InstanceId': instanceId }),
  );
  if (xml === undefined) return undefined;
  const state = listOf(result(xml, 'DescribeInstanceHealth')['InstanceStates'], 'member').find(
    (s) => text(s['InstanceId']) === instanceId,
  );
  if (state === undefined || !heldByClassic(text(state['State']), text(state['Description']))) return undefined;
  return { kind: 'classic', id: name, name, state: text(state['State']) };
}

/** An answer that says the load balancer or the registration is gone is "not held", not a failure. */
export async function notGone(answer: Promise<string>): Promise<string | undefined> {
  try {
    return await answer;
  } catch (error) {
    if (error instanceof QueryRefusedError && goneCodes.has(error.code)) return undefined;
    throw error;
  }
}
