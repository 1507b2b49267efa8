// DescribeAutoScalingGroups read lean (query-elements.ts): the groups' names, tags and
// suspended processes, and, when asked, each instance's id, lifecycle state and health, over
// the Query API the SDK speaks to Auto Scaling. A pass over the served groups holds what it
// reads, not the answer: the reconciler's and node auto repair's memory does not grow with
// the groups' instances.
//   https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_DescribeAutoScalingGroups.html
import { chunks } from '../../shared/concurrency.js';
import type { AwsQuery } from './aws-query.js';
import { endsWith, scanElements, type ElementPath } from './query-elements.js';

export interface GroupInstance {
  readonly instanceId: string;
  readonly lifecycleState: string;
  readonly healthStatus: string;
}

export interface GroupRead {
  readonly name: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly suspendedProcesses: readonly string[];
  /** Empty unless instances were asked for. */
  readonly instances: readonly GroupInstance[];
}

/** The Auto Scaling API over the Query protocol, as the SDK speaks it. */
export const autoScalingApi = { service: 'autoscaling', version: '2011-01-01', label: 'autoscaling' } as const;

/** DescribeAutoScalingGroups takes at most 100 names a call. */
const groupsPerCall = 100;

/** What the reads need of a Query client: one call, its answer's XML. */
export type QueryCaller = Pick<AwsQuery, 'call'>;

export async function readGroups(
  query: QueryCaller,
  names: readonly string[],
  o: { readonly instances: boolean },
): Promise<GroupRead[]> {
  const groups: GroupRead[] = [];
  for (const batch of chunks([...new Set(names)], groupsPerCall)) {
    let token: string | undefined;
    do {
      const params: Record<string, string> = Object.fromEntries(
        batch.map((name, i) => [`AutoScalingGroupNames.member.${i + 1}`, name]),
      );
      if (token !== undefined) params['NextToken'] = token;
      const page = groupsOf(await query.call('DescribeAutoScalingGroups', params), o);
      groups.push(...page.groups);
      token = page.nextToken;
    } while (token);
  }
  return groups;
}

interface Building {
  name: string;
  tags: Record<string, string>;
  suspendedProcesses: string[];
  instances: { instanceId: string; lifecycleState: string; healthStatus: string }[];
}

/** One answer's groups and its NextToken. */
export function groupsOf(xml: string, o: { readonly instances: boolean }): { groups: GroupRead[]; nextToken?: string } {
  const groups: Building[] = [];
  let nextToken: string | undefined;
  let tag = { key: '', value: '' };
  const group = () => groups.at(-1);
  // Paths from the answer's root: <DescribeAutoScalingGroupsResponse><DescribeAutoScalingGroupsResult>.
  const inGroup = (path: ElementPath, depth: number) => path.length === 4 + depth && path[2] === 'AutoScalingGroups';
  scanElements(xml, {
    open(path) {
      if (inGroup(path, 0) && endsWith(path, 'member'))
        groups.push({ name: '', tags: {}, suspendedProcesses: [], instances: [] });
      else if (o.instances && inGroup(path, 2) && endsWith(path, 'Instances', 'member'))
        group()?.instances.push({ instanceId: '', lifecycleState: '', healthStatus: 'Healthy' });
      else if (inGroup(path, 2) && endsWith(path, 'Tags', 'member')) tag = { key: '', value: '' };
    },
    leaf(path, text) {
      const g = group();
      if (path.length === 3 && endsWith(path, 'NextToken')) nextToken = text || undefined;
      if (g === undefined) return;
      if (inGroup(path, 1) && endsWith(path, 'AutoScalingGroupName')) g.name = text;
      else if (o.instances && inGroup(path, 3) && path[4] === 'Instances') instanceField(g, path.at(-1)!, text);
      else if (inGroup(path, 3) && endsWith(path, 'SuspendedProcesses', 'member', 'ProcessName'))
        g.suspendedProcesses.push(text);
      else if (inGroup(path, 3) && path[4] === 'Tags') tagField(g, tag, path.at(-1)!, text);
    },
  });
  return { groups, ...(nextToken !== undefined ? { nextToken } : {}) };
}

function instanceField(g: Building, field: string, text: string): void {
  const i = g.instances.at(-1);
  if (i === undefined) return;
  if (field === 'InstanceId') i.instanceId = text;
  else if (field === 'LifecycleState') i.lifecycleState = text;
  else if (field === 'HealthStatus') i.healthStatus = text;
}

/** A tag's Key and Value may come in either order: the pair is set on each. */
function tagField(g: Building, tag: { key: string; value: string }, field: string, text: string): void {
  if (field === 'Key') tag.key = text;
  else if (field === 'Value') tag.value = text;
  else return;
  if (tag.key !== '') g.tags[tag.key] = tag.value;
}
