// The Auto Scaling groups of an eksctl cluster's unmanaged nodegroups, found by the tags eksctl
// puts on each nodegroup's CloudFormation stack (CloudFormation passes stack tags on to the
// Auto Scaling group it creates). From eksctl's source (pkg/apis/eksctl.io/v1alpha5/types.go,
// pkg/cfn/manager/api.go NewStackCollection, pkg/cfn/manager/nodegroup.go):
//   alpha.eksctl.io/cluster-name, and the older eksctl.cluster.k8s.io/v1alpha1/cluster-name
//   alpha.eksctl.io/nodegroup-name, and the older eksctl.io/v1alpha2/nodegroup-name
//   alpha.eksctl.io/nodegroup-type: unmanaged (managed nodegroups' groups belong to EKS, which drains them itself)
// https://github.com/eksctl-io/eksctl/blob/main/pkg/apis/eksctl.io/v1alpha5/types.go
import {
  DescribeAutoScalingGroupsCommand,
  type AutoScalingClient,
  type AutoScalingGroup,
} from '@aws-sdk/client-auto-scaling';

export const eksctlTags = {
  cluster: ['alpha.eksctl.io/cluster-name', 'eksctl.cluster.k8s.io/v1alpha1/cluster-name'],
  nodegroup: ['alpha.eksctl.io/nodegroup-name', 'eksctl.io/v1alpha2/nodegroup-name'],
  nodegroupType: 'alpha.eksctl.io/nodegroup-type',
  /** On the groups EKS makes for managed node groups (eksctl's managed nodegroups included). */
  eksManaged: 'eks:nodegroup-name',
} as const;

const tag = (group: AutoScalingGroup, keys: readonly string[]): string | undefined =>
  group.Tags?.find((t) => t.Key !== undefined && keys.includes(t.Key))?.Value;

/** Every group with the tag key = value, every page. */
async function groupsTagged(autoScaling: AutoScalingClient, key: string, value: string): Promise<AutoScalingGroup[]> {
  const groups: AutoScalingGroup[] = [];
  let NextToken: string | undefined;
  do {
    const page = await autoScaling.send(
      new DescribeAutoScalingGroupsCommand({ Filters: [{ Name: `tag:${key}`, Values: [value] }], NextToken }),
    );
    groups.push(...(page.AutoScalingGroups ?? []));
    NextToken = page.NextToken;
  } while (NextToken);
  return groups;
}

export interface EksctlGroup {
  readonly group: string;
  readonly nodegroup: string | undefined;
}

/**
 * The cluster's unmanaged nodegroups' groups (only `nodegroups` when given), by name. Groups EKS
 * manages are left out: they have EKS's own drain, and hooks of ours would drain twice.
 */
export async function eksctlGroups(
  autoScaling: AutoScalingClient,
  cluster: string,
  nodegroups: readonly string[] = [],
): Promise<EksctlGroup[]> {
  const found = new Map<string, AutoScalingGroup>();
  for (const key of eksctlTags.cluster)
    for (const group of await groupsTagged(autoScaling, key, cluster)) found.set(group.AutoScalingGroupName!, group);
  return [...found.values()]
    .filter((g) => tag(g, [eksctlTags.eksManaged]) === undefined && tag(g, [eksctlTags.nodegroupType]) !== 'managed')
    .map((g) => ({ group: g.AutoScalingGroupName!, nodegroup: tag(g, eksctlTags.nodegroup) }))
    .filter((g) => nodegroups.length === 0 || (g.nodegroup !== undefined && nodegroups.includes(g.nodegroup)))
    .sort((a, b) => a.group.localeCompare(b.group));
}
