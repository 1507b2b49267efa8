// The drainer's reads that IAM cannot scope to a resource (the Service Authorization Reference
// lists none for them), so "*", limited to this stack's region (aws:RequestedRegion, the only
// condition they take). The handler only ever asks about its own groups and refuses instances
// of others. Each feature's reads are a statement of their own, named after it, so a feature's
// rights come and go with it (the release template turns each on and off with a parameter).
// https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html (and the autoscaling
// and elasticloadbalancing pages beside it: no resource type for these actions)
import { Stack, aws_iam as iam } from 'aws-cdk-lib';
import { acknowledgeNag } from './nag.js';
import type { Settings } from './settings.js';

interface Reads {
  readonly sid: string;
  readonly actions: readonly string[];
  readonly when: (s: Settings) => boolean;
}

export const unscopedReads: readonly Reads[] = [
  {
    // The instance's private DNS name, its node's name, so a lookup is one GET and not a list of
    // the cluster; and which group an instance is in: a launch checks whether its instance is on
    // its way back, a Spot warning names only the instance, the reconciler asks who owns a mark.
    sid: 'ReadsWithoutResourceScope',
    actions: ['ec2:DescribeInstances', 'autoscaling:DescribeAutoScalingInstances'],
    when: () => true,
  },
  {
    // The group's other terminating instances.
    sid: 'SiblingReadsWithoutResourceScope',
    actions: ['autoscaling:DescribeAutoScalingGroups'],
    when: (s) => s.cordonDoomedSiblings,
  },
  {
    // A refresh's launch template and which nodes it replaces, and whether it is still on.
    sid: 'RefreshReadsWithoutResourceScope',
    actions: [
      'ec2:DescribeLaunchTemplates',
      'autoscaling:DescribeAutoScalingGroups',
      'autoscaling:DescribeInstanceRefreshes',
    ],
    when: (s) => s.markOutdatedOnRefresh,
  },
  {
    // The groups' tags (the refresh strategy tag it takes back) and whether their refreshes ended.
    sid: 'ReconcilerReadsWithoutResourceScope',
    actions: ['autoscaling:DescribeAutoScalingGroups', 'autoscaling:DescribeInstanceRefreshes'],
    when: (s) => s.reconcileMarks,
  },
  {
    // Whether EC2 gave the instance notice: a Spot warning is believed only then.
    sid: 'SpotReadsWithoutResourceScope',
    actions: ['ec2:DescribeSpotInstanceRequests'],
    when: (s) => s.spotInterruptions,
  },
  {
    // Which target groups and Classic Load Balancers are the cluster's (DescribeTargetGroups,
    // DescribeLoadBalancers, DescribeTags) and whether they still hold the instance
    // (DescribeTargetHealth, DescribeInstanceHealth). Nothing that registers or deregisters.
    sid: 'LoadBalancerReadsWithoutResourceScope',
    actions: [
      'elasticloadbalancing:DescribeTargetGroups',
      'elasticloadbalancing:DescribeTargetHealth',
      'elasticloadbalancing:DescribeLoadBalancers',
      'elasticloadbalancing:DescribeInstanceHealth',
      'elasticloadbalancing:DescribeTags',
    ],
    when: (s) => s.waitForTargets,
  },
];

export function grantUnscopedReads(role: iam.Role, s: Settings): void {
  const granted = unscopedReads.filter((r) => r.when(s));
  for (const { sid, actions } of granted) {
    role.addToPolicy(
      new iam.PolicyStatement({
        sid,
        actions: [...actions],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:RequestedRegion': Stack.of(role).region } },
      }),
    );
  }
  const actions = [...new Set(granted.flatMap((r) => r.actions))];
  acknowledgeNag(
    role,
    'IAM5[Resource::*]',
    `${actions.join(', ')}: read-only actions with no resource-level permissions in IAM, limited to this region; ` +
      'the handler asks only about its own groups and refuses instances of others.',
  );
}
