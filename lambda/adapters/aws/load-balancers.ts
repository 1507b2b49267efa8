// The cluster's load balancers, read to know when an instance is really let go: ELBv2 target
// groups of type `instance` and Classic Load Balancers, those tagged for the cluster by the
// AWS Load Balancer Controller (elbv2.k8s.aws/cluster=<name>) or the in-tree service
// controller (kubernetes.io/cluster/<name>), plus any tags the deployer adds. Which ones are
// the cluster's is looked up once a minute at most (DescribeTargetGroups / DescribeLoadBalancers
// paged by 400, DescribeTags by 20); each look at one instance then costs one call per
// candidate, and later looks only re-read those that still held it.
//   https://docs.aws.amazon.com/elasticloadbalancing/latest/application/target-group-health-checks.html#target-health-states
//   https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/config-conn-drain.html
//
// Why no SDK clients: @aws-sdk/client-elastic-load-balancing-v2 and -elastic-load-balancing
// for these five calls add 121,022 bytes minified to a bundle that already holds the Auto
// Scaling client (486,531 -> 607,553; esbuild, node24, both clients); this is a few KiB over
// the Query client EC2 already uses.
import type { LoadBalancerTargets, TargetHold, TargetReading } from '../../shared/aws-ports.js';
import { asError } from '../../shared/log.js';
import { AwsQuery, listOf, parseAnswer, QueryRefusedError, type QueryOptions, type Xml } from './aws-query.js';

export interface LoadBalancerOptions extends Omit<QueryOptions, 'endpoint'> {
  readonly clusterName: string;
  /** More tags that make a load balancer the cluster's (undefined value: any value). */
  readonly extraTags?: ReadonlyMap<string, string | undefined> | undefined;
  /** AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2 and AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING. */
  readonly endpoints?: { readonly v2?: string | undefined; readonly classic?: string | undefined };
  /** How long the list of the cluster's load balancers is kept (default a minute). */
  readonly cacheMs?: number;
  readonly now?: () => number;
}

const v2Api = { service: 'elasticloadbalancing', version: '2015-12-01', label: 'elbv2' };
const classicApi = { service: 'elasticloadbalancing', version: '2012-06-01', label: 'elb' };
/** DescribeTags takes 20 ARNs or names; the describes page by at most 400. */
const tagsPerCall = 20;
const pageSize = '400';
const deniedCodes = new Set(['AccessDenied', 'AccessDeniedException', 'UnauthorizedOperation']);
/**
 * Answers that mean "not held": the target group or load balancer is gone, the instance not
 * registered. The codes as the services send them (HTTP 400), per the SDKs' service models:
 * TargetGroupNotFoundException and InvalidTargetException (ELBv2), AccessPointNotFoundException
 * as LoadBalancerNotFound and InvalidEndPointException as InvalidInstance (Classic).
 */
const goneCodes = new Set(['TargetGroupNotFound', 'LoadBalancerNotFound', 'InvalidInstance', 'InvalidTarget']);

/** Whether a load balancer's tags make it this cluster's. */
export function taggedForCluster(tags: ReadonlyMap<string, string>, clusterName: string, extra?: ReadonlyMap<string, string | undefined>): boolean {
  if (tags.get('elbv2.k8s.aws/cluster') === clusterName) return true;
  if (tags.has(`kubernetes.io/cluster/${clusterName}`)) return true;
  for (const [key, value] of extra ?? []) {
    const found = tags.get(key);
    if (found !== undefined && (value === undefined || found === value)) return true;
  }
  return false;
}

/** ELBv2 target states that still hold the instance; `unused` (not registered, or in no load balancer) does not. */
export function heldByTargetGroup(state: string): boolean {
  return state !== 'unused';
}

/** A Classic Load Balancer holds an instance while InService (deregistration in progress too) or registered out of service. */
export function heldByClassic(state: string, description: string): boolean {
  return !(state === 'OutOfService' && /not currently registered/i.test(description));
}

interface Candidates {
  readonly targetGroups: readonly { readonly arn: string; readonly name: string }[];
  readonly classic: readonly string[];
}

type Counted = (api: AwsQuery, action: string, params: Record<string, string>) => Promise<string>;

export function createLoadBalancerTargets(options: LoadBalancerOptions): LoadBalancerTargets {
  const v2 = new AwsQuery(v2Api, { ...options, endpoint: options.endpoints?.v2 });
  const classic = new AwsQuery(classicApi, { ...options, endpoint: options.endpoints?.classic });
  const now = options.now ?? Date.now;
  const cacheMs = options.cacheMs ?? 60_000;
  let cached: { readonly atMs: number; readonly candidates: Promise<Candidates> } | undefined;

  const candidates = (call: Counted): Promise<Candidates> => {
    if (cached === undefined || now() - cached.atMs > cacheMs) {
      const found = discover(call, v2, classic, options);
      cached = { atMs: now(), candidates: found };
      found.catch(() => (cached = undefined));
    }
    return cached.candidates;
  };

  return {
    async holding(instanceId, among): Promise<TargetReading> {
      let calls = 0;
      const call: Counted = (api, action, params) => {
        calls++;
        return api.call(action, params);
      };
      try {
        const from = among !== undefined ? fromHolds(among) : await candidates(call);
        const holds = await Promise.all([
          ...from.targetGroups.map((tg) => targetGroupHold(call, v2, tg, instanceId)),
          ...from.classic.map((name) => classicHold(call, classic, name, instanceId)),
        ]);
        return { read: true, holds: holds.filter((h): h is TargetHold => h !== undefined), calls };
      } catch (e) {
        const error = asError(e);
        return { read: false, denied: error instanceof QueryRefusedError && deniedCodes.has(error.code), error, calls };
      }
    },
  };
}

function fromHolds(holds: readonly TargetHold[]): Candidates {
  return {
    targetGroups: holds.filter((h) => h.kind === 'target-group').map((h) => ({ arn: h.id, name: h.name })),
    classic: holds.filter((h) => h.kind === 'classic').map((h) => h.id),
  };
}

async function discover(call: Counted, v2: AwsQuery, classic: AwsQuery, o: LoadBalancerOptions): Promise<Candidates> {
  const [groups, balancers] = await Promise.all([pages(call, v2, 'DescribeTargetGroups', parseTargetGroups), pages(call, classic, 'DescribeLoadBalancers', parseLoadBalancers)]);
  const instanceGroups = groups.filter((g) => g.type === 'instance');
  const [groupTags, balancerTags] = await Promise.all([
    tagsOf(
      call,
      v2,
      instanceGroups.map((g) => g.arn),
      'ResourceArns',
      'ResourceArn',
    ),
    tagsOf(call, classic, balancers, 'LoadBalancerNames', 'LoadBalancerName'),
  ]);
  const ours = (tags: Map<string, Map<string, string>>, id: string) => taggedForCluster(tags.get(id) ?? new Map(), o.clusterName, o.extraTags);
  return { targetGroups: instanceGroups.filter((g) => ours(groupTags, g.arn)), classic: balancers.filter((name) => ours(balancerTags, name)) };
}

async function pages<T>(call: Counted, api: AwsQuery, action: string, parse: (xml: string) => { items: T[]; next: string | undefined }): Promise<T[]> {
  const all: T[] = [];
  let marker: string | undefined;
  do {
    const page = parse(await call(api, action, { PageSize: pageSize, ...(marker ? { Marker: marker } : {}) }));
    all.push(...page.items);
    marker = page.next;
  } while (marker);
  return all;
}

const result = (xml: string, action: string): Xml => {
  const root = parseAnswer(xml)[`${action}Response`] as Xml | undefined;
  if (root === undefined) throw new Error(`${action}: the answer has no ${action}Response`);
  return (root[`${action}Result`] as Xml | undefined) ?? {};
};
const text = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));
const nextOf = (r: Xml): string | undefined => text(r['NextMarker']) || undefined;

export function parseTargetGroups(xml: string): { items: { arn: string; name: string; type: string }[]; next: string | undefined } {
  const r = result(xml, 'DescribeTargetGroups');
  const items = listOf(r['TargetGroups'], 'member').map((g) => ({ arn: text(g['TargetGroupArn']), name: text(g['TargetGroupName']), type: text(g['TargetType']) }));
  return { items, next: nextOf(r) };
}

export function parseLoadBalancers(xml: string): { items: string[]; next: string | undefined } {
  const r = result(xml, 'DescribeLoadBalancers');
  return { items: listOf(r['LoadBalancerDescriptions'], 'member').map((b) => text(b['LoadBalancerName'])), next: nextOf(r) };
}

/** id (ARN or name) -> its tags, from either API's DescribeTags. */
export function parseTags(xml: string, idField: 'ResourceArn' | 'LoadBalancerName'): Map<string, Map<string, string>> {
  const tags = new Map<string, Map<string, string>>();
  for (const d of listOf(result(xml, 'DescribeTags')['TagDescriptions'], 'member')) {
    tags.set(text(d[idField]), new Map(listOf(d['Tags'], 'member').map((t) => [text(t['Key']), text(t['Value'])])));
  }
  return tags;
}

async function tagsOf(call: Counted, api: AwsQuery, ids: readonly string[], param: string, idField: 'ResourceArn' | 'LoadBalancerName'): Promise<Map<string, Map<string, string>>> {
  const chunks: string[][] = [];
  for (let i = 0; i < ids.length; i += tagsPerCall) chunks.push(ids.slice(i, i + tagsPerCall));
  const answers = await Promise.all(chunks.map((chunk) => call(api, 'DescribeTags', Object.fromEntries(chunk.map((id, n) => [`${param}.member.${n + 1}`, id])))));
  return new Map(answers.flatMap((xml) => [...parseTags(xml, idField)]));
}

async function targetGroupHold(call: Counted, v2: AwsQuery, tg: { arn: string; name: string }, instanceId: string): Promise<TargetHold | undefined> {
  // Every target of the group, not Targets.member.1.Id: an instance target is registered on
  // a port (the NodePort) that need not be the group's, and a target named without its port
  // is looked up on the group's.
  const xml = await notGone(call(v2, 'DescribeTargetHealth', { TargetGroupArn: tg.arn }));
  if (xml === undefined) return undefined;
  const states = listOf(result(xml, 'DescribeTargetHealth')['TargetHealthDescriptions'], 'member')
    .filter((d) => text((d['Target'] as Xml | undefined)?.['Id']) === instanceId)
    .map((d) => text((d['TargetHealth'] as Xml | undefined)?.['State']))
    .filter(heldByTargetGroup);
  return states.length > 0 ? { kind: 'target-group', id: tg.arn, name: tg.name, state: states.includes('draining') ? 'draining' : states[0]! } : undefined;
}

async function classicHold(call: Counted, classic: AwsQuery, name: string, instanceId: string): Promise<TargetHold | undefined> {
  const xml = await notGone(call(classic, 'DescribeInstanceHealth', { LoadBalancerName: name, 'Instances.member.1.InstanceId': instanceId }));
  if (xml === undefined) return undefined;
  const state = listOf(result(xml, 'DescribeInstanceHealth')['InstanceStates'], 'member').find((s) => text(s['InstanceId']) === instanceId);
  if (state === undefined || !heldByClassic(text(state['State']), text(state['Description']))) return undefined;
  return { kind: 'classic', id: name, name, state: text(state['State']) };
}

/** An answer that says the load balancer or the registration is gone is "not held", not a failure. */
async function notGone(answer: Promise<string>): Promise<string | undefined> {
  try {
    return await answer;
  } catch (error) {
    if (error instanceof QueryRefusedError && goneCodes.has(error.code)) return undefined;
    throw error;
  }
}
