// Finding target groups the cluster does not name directly: those of the in-tree service
// controller's Network Load Balancers (by the load balancer's name), and, opt-in, every
// instance target group and Classic Load Balancer of the account tagged for the cluster. Both
// are paged and bounded; a target group or load balancer deleted meanwhile is left out, never
// a reason to fail the rest (DescribeTags answers for all or none of the ARNs it is given).
import { mapWithConcurrency } from '../../shared/concurrency.js';
import { listOf, QueryRefusedError, type AwsQuery } from './aws-query.js';
import { goneCodes, nextOf, result, text, type Counted, type ServedTarget } from './load-balancer-reads.js';

/** DescribeTags and DescribeLoadBalancers take 20 ARNs or names; the describes page by at most 400. */
const perCall = 20;
const pageSize = '400';

/** Whether a load balancer's tags make it this cluster's. */
export function taggedForCluster(
  tags: ReadonlyMap<string, string>,
  clusterName: string,
  extra?: ReadonlyMap<string, string | undefined>,
): boolean {
  if (tags.get('elbv2.k8s.aws/cluster') === clusterName) return true;
  if (tags.has(`kubernetes.io/cluster/${clusterName}`)) return true;
  for (const [key, value] of extra ?? []) {
    const found = tags.get(key);
    if (found !== undefined && (value === undefined || found === value)) return true;
  }
  return false;
}

const chunks = <T>(items: readonly T[]): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += perCall) out.push(items.slice(i, i + perCall));
  return out;
};

const isGone = (error: unknown) => error instanceof QueryRefusedError && goneCodes.has(error.code);

async function pages<T>(
  call: Counted,
  api: AwsQuery,
  action: string,
  params: Record<string, string>,
  parse: (xml: string) => { items: T[]; next: string | undefined },
): Promise<T[]> {
  const all: T[] = [];
  let marker: string | undefined;
  do {
    const page = parse(
      await call(api, action, { ...params, PageSize: pageSize, ...(marker ? { Marker: marker } : {}) }),
    );
    all.push(...page.items);
    marker = page.next;
  } while (marker);
  return all;
}

function parseTargetGroups(xml: string): {
  items: { arn: string; name: string; type: string }[];
  next: string | undefined;
} {
  const r = result(xml, 'DescribeTargetGroups');
  const items = listOf(r['TargetGroups'], 'member').map((g) => ({
    arn: text(g['TargetGroupArn']),
    name: text(g['TargetGroupName']),
    type: text(g['TargetType']),
  }));
  return { items, next: nextOf(r) };
}

/**
 * Calls made per chunk of 20 ids; a chunk refused because one of them is gone is asked again
 * one id at a time, and the gone ones are left out.
 */
async function perChunk<R>(
  ids: readonly string[],
  concurrency: number,
  ask: (chunk: readonly string[]) => Promise<R[]>,
): Promise<R[]> {
  const answers = await mapWithConcurrency(chunks(ids), concurrency, async (chunk) => {
    try {
      return await ask(chunk);
    } catch (error) {
      if (!isGone(error) || chunk.length === 1) {
        if (isGone(error)) return [];
        throw error;
      }
      return (
        await mapWithConcurrency(chunk, concurrency, (id) =>
          ask([id]).catch((e: unknown) => (isGone(e) ? [] : Promise.reject(e))),
        )
      ).flat();
    }
  });
  return answers.flat();
}

/** The instance target groups of the in-tree controller's Network Load Balancers, by their names. */
export async function networkTargetGroups(
  call: Counted,
  v2: AwsQuery,
  names: readonly string[],
  concurrency: number,
): Promise<ServedTarget[]> {
  if (names.length === 0) return [];
  const arns = await perChunk(names, concurrency, async (chunk) => {
    const xml = await call(
      v2,
      'DescribeLoadBalancers',
      Object.fromEntries(chunk.map((n, i) => [`Names.member.${i + 1}`, n])),
    );
    return listOf(result(xml, 'DescribeLoadBalancers')['LoadBalancers'], 'member').map((b) =>
      text(b['LoadBalancerArn']),
    );
  });
  const groups = await mapWithConcurrency(arns, concurrency, (arn) =>
    pages(call, v2, 'DescribeTargetGroups', { LoadBalancerArn: arn }, parseTargetGroups).catch((e: unknown) =>
      isGone(e) ? [] : Promise.reject(e),
    ),
  );
  return groups
    .flat()
    .filter((g) => g.type === 'instance')
    .map((g) => ({ arn: g.arn, name: g.name }));
}

export interface TagScan {
  readonly clusterName: string;
  readonly extraTags?: ReadonlyMap<string, string | undefined> | undefined;
}

/** Opt-in: every instance target group and Classic Load Balancer of the account tagged for the cluster. */
export async function discoverTagged(
  call: Counted,
  v2: AwsQuery,
  classic: AwsQuery,
  scan: TagScan,
  concurrency: number,
): Promise<{ targetGroups: ServedTarget[]; classic: string[] }> {
  const groups = (await pages(call, v2, 'DescribeTargetGroups', {}, parseTargetGroups)).filter(
    (g) => g.type === 'instance',
  );
  const balancers = await pages(call, classic, 'DescribeLoadBalancers', {}, (xml) => {
    const r = result(xml, 'DescribeLoadBalancers');
    return {
      items: listOf(r['LoadBalancerDescriptions'], 'member').map((b) => text(b['LoadBalancerName'])),
      next: nextOf(r),
    };
  });
  const ours = (tags: Map<string, string>) => taggedForCluster(tags, scan.clusterName, scan.extraTags);
  const groupTags = await perChunk(
    groups.map((g) => g.arn),
    concurrency,
    async (chunk) =>
      tagsOf(
        await call(v2, 'DescribeTags', Object.fromEntries(chunk.map((id, n) => [`ResourceArns.member.${n + 1}`, id]))),
        'ResourceArn',
      ),
  );
  const balancerTags = await perChunk(balancers, concurrency, async (chunk) =>
    tagsOf(
      await call(
        classic,
        'DescribeTags',
        Object.fromEntries(chunk.map((id, n) => [`LoadBalancerNames.member.${n + 1}`, id])),
      ),
      'LoadBalancerName',
    ),
  );
  const taggedGroups = new Set(groupTags.filter(([, tags]) => ours(tags)).map(([id]) => id));
  return {
    targetGroups: groups.filter((g) => taggedGroups.has(g.arn)).map((g) => ({ arn: g.arn, name: g.name })),
    classic: balancerTags.filter(([, tags]) => ours(tags)).map(([id]) => id),
  };
}

/** [id (ARN or name), its tags] from either API's DescribeTags. */
export function tagsOf(xml: string, idField: 'ResourceArn' | 'LoadBalancerName'): [string, Map<string, string>][] {
  return listOf(result(xml, 'DescribeTags')['TagDescriptions'], 'member').map((d) => [
    text(d[idField]),
    new Map(listOf(d['Tags'], 'member').map((t) => [text(t['Key']), text(t['Value'])])),
  ]);
}
