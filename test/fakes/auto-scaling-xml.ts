// DescribeAutoScalingGroups' answer as Auto Scaling writes it (Query XML), from groups in the
// SDK's shape: what the handler's lean group reads (lambda/adapters/aws/group-reads.ts) parse
// where a harness mocks the SDK client and has no HTTP stand-in.
// https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_DescribeAutoScalingGroups.html

/** A group as the SDK shapes it, the fields the answer carries. */
export interface GroupXml {
  readonly AutoScalingGroupName?: string | undefined;
  readonly Instances?:
    | readonly {
        readonly InstanceId?: string;
        readonly LifecycleState?: string;
        readonly HealthStatus?: string;
        readonly LaunchTemplate?: { readonly LaunchTemplateId?: string; readonly Version?: string };
      }[]
    | undefined;
  readonly Tags?:
    readonly { readonly Key?: string; readonly Value?: string; readonly ResourceId?: string }[] | undefined;
  readonly SuspendedProcesses?: readonly { readonly ProcessName?: string }[] | undefined;
}

const escape = (s: string) =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
const el = (name: string, value: string | number | boolean | undefined) =>
  value === undefined ? '' : `<${name}>${escape(String(value))}</${name}>`;
const members = <T>(items: readonly T[] | undefined, render: (item: T) => string) =>
  (items ?? []).map((i) => `<member>${render(i)}</member>`).join('');

export function describeGroupsXml(groups: readonly GroupXml[]): string {
  const body = groups
    .map(
      (g) =>
        `<member>${el('AutoScalingGroupName', g.AutoScalingGroupName)}` +
        `<Instances>${members(g.Instances, (i) =>
          [
            el('InstanceId', i.InstanceId),
            el('LifecycleState', i.LifecycleState),
            el('HealthStatus', i.HealthStatus),
            i.LaunchTemplate
              ? `<LaunchTemplate>${el('LaunchTemplateId', i.LaunchTemplate.LaunchTemplateId)}${el('Version', i.LaunchTemplate.Version)}</LaunchTemplate>`
              : '',
          ].join(''),
        )}</Instances>` +
        `<Tags>${members(g.Tags, (t) => el('Key', t.Key) + el('Value', t.Value) + el('ResourceId', t.ResourceId))}</Tags>` +
        `<SuspendedProcesses>${members(g.SuspendedProcesses, (p) => el('ProcessName', p.ProcessName))}</SuspendedProcesses>` +
        '</member>',
    )
    .join('');
  return (
    '<DescribeAutoScalingGroupsResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/">' +
    `<DescribeAutoScalingGroupsResult><AutoScalingGroups>${body}</AutoScalingGroups></DescribeAutoScalingGroupsResult>` +
    '<ResponseMetadata><RequestId>00000000-0000-0000-0000-000000000000</RequestId></ResponseMetadata>' +
    '</DescribeAutoScalingGroupsResponse>'
  );
}

/** The group names of a DescribeAutoScalingGroups form (AutoScalingGroupNames.member.N). */
export const groupNamesOf = (params: Readonly<Record<string, string>>): string[] =>
  Object.entries(params)
    .filter(([k]) => k.startsWith('AutoScalingGroupNames.member.'))
    .sort(([a], [b]) => Number(a.split('.').at(-1)) - Number(b.split('.').at(-1)))
    .map(([, v]) => v);
