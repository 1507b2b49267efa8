// The load balancers that can hold an instance, read to know when it is really let go. Which
// ones comes from the cluster (cluster/rules/served-load-balancers.ts: the target groups of its
// TargetGroupBindings, on the NodePort of the bound Service when known, and the Classic and
// Network Load Balancers the in-tree service controller made for Services of type
// LoadBalancer), never from the account, which holds other teams' load balancers too. An
// account-wide scan of the tags (elbv2.k8s.aws/cluster, kubernetes.io/cluster/<name>, and
// LOAD_BALANCER_TAGS) is opt-in, for load balancers other tools made: paged, bounded, kept a
// minute. Every reading is bounded: at most `concurrency` calls in flight (ELB's Describe bucket
// is the account's, about 40 calls refilled at 10 a second, and the AWS Load Balancer
// Controller needs it to deregister the very targets we wait for); a group that cannot be read
// is said to be unread, never taken for let go.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/application/target-group-health-checks.html#target-health-states
//   https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/config-conn-drain.html
//   https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-throttling.html
//
// Why no SDK clients: @aws-sdk/client-elastic-load-balancing-v2 and -elastic-load-balancing
// for these calls add 121,022 bytes minified to a bundle that already holds the Auto
// Scaling client (486,531 -> 607,553; esbuild, node24, both clients); this is a few KiB over
// the Query client EC2 already uses.
import type { ServedLoadBalancers, ServedTargetGroup } from '../../shared/served-load-balancers.js';
import type {
  LoadBalancerRegistry,
  LoadBalancerTargets,
  Registered,
  TargetHold,
  TargetReading,
} from '../../shared/aws-ports.js';
import { mapWithConcurrency } from '../../shared/concurrency.js';
import { asError } from '../../shared/log.js';
import { AwsQuery, QueryRefusedError, type QueryOptions } from './aws-query.js';
import {
  classicHold,
  registeredInClassic,
  registeredInGroup,
  targetGroupHold,
  targetGroupName,
  type Counted,
  type ServedTarget,
} from './load-balancer-reads.js';
import { discoverTagged, networkTargetGroups } from './load-balancer-discovery.js';
import { isThrottlingCode } from './aws-patience.js';
import { ServiceBusyError } from '../../shared/errors.js';

export { heldByClassic, heldByTargetGroup } from './load-balancer-reads.js';
export { taggedForCluster } from './load-balancer-discovery.js';

export interface LoadBalancerOptions extends Omit<QueryOptions, 'endpoint'> {
  readonly clusterName: string;
  /**
   * Opt-in: also scan the account for instance target groups and Classic Load Balancers tagged
   * for the cluster (and with these tags; undefined value: any value). Off: only what the
   * cluster serves is read.
   */
  readonly tagScan?: { readonly extraTags?: ReadonlyMap<string, string | undefined> | undefined } | undefined;
  /** AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2 and AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING. */
  readonly endpoints?: { readonly v2?: string | undefined; readonly classic?: string | undefined };
  /** How long what a discovery found is kept (default a minute). */
  readonly cacheMs?: number;
  /** ELB calls in flight at once for one reading (default 4). */
  readonly concurrency?: number;
  /** The least time between the starts of two calls of one reading (default 200 ms). */
  readonly callSpacingMs?: number;
  readonly now?: () => number;
}

/** ELB calls in flight at once for one reading: the account's Describe bucket is shared with the controllers. */
export const elbConcurrency = 4;
/**
 * Calls of one reading start at least this far apart: 5 a second, half of the bucket's refill,
 * so a reading of 60 groups does not empty the bucket the controllers deregister with.
 */
export const elbCallSpacingMs = 200;

const v2Api = { service: 'elasticloadbalancing', version: '2015-12-01', label: 'elbv2' };
const classicApi = { service: 'elasticloadbalancing', version: '2012-06-01', label: 'elb' };
const deniedCodes = new Set(['AccessDenied', 'AccessDeniedException', 'UnauthorizedOperation']);

interface Candidates {
  readonly targetGroups: readonly ServedTarget[];
  readonly classic: readonly string[];
}

/** Something found once and kept a while; a failure is not kept. */
function cachedFor<T>(cacheMs: number, now: () => number): (key: string, find: () => Promise<T>) => Promise<T> {
  const kept = new Map<string, { atMs: number; value: Promise<T> }>();
  return (key, find) => {
    const hit = kept.get(key);
    if (hit !== undefined && now() - hit.atMs <= cacheMs) return hit.value;
    const value = find();
    kept.set(key, { atMs: now(), value });
    value.catch(() => kept.delete(key));
    return value;
  };
}

export function createLoadBalancerTargets(options: LoadBalancerOptions): LoadBalancerTargets & LoadBalancerRegistry {
  const v2 = new AwsQuery(v2Api, { ...options, endpoint: options.endpoints?.v2 });
  const classic = new AwsQuery(classicApi, { ...options, endpoint: options.endpoints?.classic });
  const concurrency = options.concurrency ?? elbConcurrency;
  const spacingMs = options.callSpacingMs ?? elbCallSpacingMs;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const cached = cachedFor<{ targetGroups: ServedTarget[]; classic: string[] }>(options.cacheMs ?? 60_000, now);

  const candidates = async (call: Counted, served: ServedLoadBalancers | undefined): Promise<Candidates> => {
    const networkNames = [...(served?.networkNames ?? [])].sort();
    const [network, tagged] = await Promise.all([
      networkNames.length > 0
        ? cached(`nlb:${networkNames.join(',')}`, async () => ({
            targetGroups: await networkTargetGroups(call, v2, networkNames, concurrency),
            classic: [],
          }))
        : undefined,
      options.tagScan !== undefined
        ? cached('tags', () =>
            discoverTagged(
              call,
              v2,
              classic,
              { clusterName: options.clusterName, extraTags: options.tagScan?.extraTags },
              concurrency,
            ),
          )
        : undefined,
    ]);
    return merge(served, network, tagged);
  };

  return {
    candidates: async (served) => holdsOf(await candidates((api, action, params) => api.call(action, params), served)),
    registered: (lb) => registered({ v2, classic }, lb),
    async holding(instanceId, scope = {}): Promise<TargetReading> {
      let calls = 0;
      let nextAtMs = 0;
      const call: Counted = async (api, action, params) => {
        const atMs = now();
        const waitMs = Math.max(0, nextAtMs - atMs);
        nextAtMs = Math.max(atMs, nextAtMs) + spacingMs;
        if (waitMs > 0) await sleep(waitMs);
        calls++;
        return api.call(action, params);
      };
      try {
        const from = scope.among !== undefined ? fromHolds(scope.among) : await candidates(call, scope.served);
        return { ...(await readAll(call, { v2, classic }, from, instanceId, concurrency)), calls };
      } catch (e) {
        const error = asError(e);
        return { read: false, denied: isDenied(error), error, calls };
      }
    },
  };
}

const holdsOf = (from: Candidates): TargetHold[] => [
  ...from.targetGroups.map((tg) => asHold('target-group', tg.arn, tg.name, tg.port)),
  ...from.classic.map((name) => asHold('classic', name, name)),
];

/** Every instance one load balancer has registered: one call, counted. */
async function registered(apis: { v2: AwsQuery; classic: AwsQuery }, lb: TargetHold): Promise<Registered> {
  let calls = 0;
  const call: Counted = (api, action, params) => (calls++, api.call(action, params));
  try {
    const targets =
      lb.kind === 'target-group'
        ? await registeredInGroup(call, apis.v2, lb.id)
        : await registeredInClassic(call, apis.classic, lb.id);
    return { read: true, targets, calls };
  } catch (e) {
    const error = asError(e);
    // Throttled, not failing: the shared reader backs off (a 5xx after retries is a failed reading).
    const throttled = error instanceof ServiceBusyError && isThrottlingCode(error.code);
    return { read: false, denied: isDenied(error), throttled, error, calls };
  }
}

const isDenied = (error: unknown) => error instanceof QueryRefusedError && deniedCodes.has(error.code);

/**
 * Every candidate read, `concurrency` at a time. One that fails is unread (it holds as far as
 * the caller's floor); all failing, or access denied, fails the reading.
 */
async function readAll(
  call: Counted,
  apis: { v2: AwsQuery; classic: AwsQuery },
  from: Candidates,
  instanceId: string,
  concurrency: number,
): Promise<Omit<Extract<TargetReading, { read: true }>, 'calls'>> {
  type Job = { hold: TargetHold; read: () => Promise<TargetHold | undefined> };
  const jobs: Job[] = [
    ...from.targetGroups.map((tg) => ({
      hold: asHold('target-group', tg.arn, tg.name, tg.port),
      read: () => targetGroupHold(call, apis.v2, tg, instanceId),
    })),
    ...from.classic.map((name) => ({
      hold: asHold('classic', name, name),
      read: () => classicHold(call, apis.classic, name, instanceId),
    })),
  ];
  let lastError: unknown;
  // In the candidates' order, whatever order the answers came in.
  const answers = await mapWithConcurrency(
    jobs,
    concurrency,
    async (job): Promise<{ held?: TargetHold | undefined; unread?: TargetHold }> => {
      try {
        return { held: await job.read() };
      } catch (error) {
        if (isDenied(error)) throw error;
        lastError = error;
        return { unread: job.hold };
      }
    },
  );
  const holds: TargetHold[] = [];
  const unread: TargetHold[] = [];
  for (const a of answers) {
    if (a.unread !== undefined) unread.push(a.unread);
    else if (a.held !== undefined) holds.push(a.held);
  }
  if (jobs.length > 0 && unread.length === jobs.length) throw asError(lastError);
  return { read: true, holds, unread };
}

const asHold = (kind: TargetHold['kind'], id: string, name: string, port?: number): TargetHold => ({
  kind,
  id,
  name,
  state: 'unknown',
  ...(port !== undefined ? { port } : {}),
});

function merge(
  served: ServedLoadBalancers | undefined,
  ...found: ({ targetGroups: readonly ServedTarget[]; classic: readonly string[] } | undefined)[]
): Candidates {
  const groups = new Map<string, ServedTarget>();
  for (const tg of served?.targetGroups ?? []) groups.set(tg.arn, fromServed(tg));
  for (const f of found) for (const tg of f?.targetGroups ?? []) if (!groups.has(tg.arn)) groups.set(tg.arn, tg);
  const classic = new Set([...(served?.classicNames ?? []), ...found.flatMap((f) => f?.classic ?? [])]);
  return { targetGroups: [...groups.values()], classic: [...classic] };
}

const fromServed = (tg: ServedTargetGroup): ServedTarget => ({
  arn: tg.arn,
  name: targetGroupName(tg.arn),
  ...(tg.port !== undefined ? { port: tg.port } : {}),
});

function fromHolds(holds: readonly TargetHold[]): Candidates {
  return {
    targetGroups: holds
      .filter((h) => h.kind === 'target-group')
      .map((h) => ({ arn: h.id, name: h.name, ...(h.port !== undefined ? { port: h.port } : {}) })),
    classic: holds.filter((h) => h.kind === 'classic').map((h) => h.id),
  };
}
