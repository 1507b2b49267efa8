// DescribeAutoScalingGroups read lean (group-reads.ts, query-elements.ts), against answers as
// Auto Scaling writes them (the API reference's example, with its every field) at a local
// HTTP stand-in: the same groups, instances and tags the SDK's deserializer finds.
// https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_DescribeAutoScalingGroups.html
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AwsQuery } from '../../../../lambda/adapters/aws/aws-query.js';
import { autoScalingApi, groupsOf, readGroups } from '../../../../lambda/adapters/aws/group-reads.js';
import { decodeText, scanElements } from '../../../../lambda/adapters/aws/query-elements.js';

const instanceXml = (id: string, state: string, health = 'Healthy') => `
      <member>
        <HealthStatus>${health}</HealthStatus>
        <AvailabilityZone>us-west-2a</AvailabilityZone>
        <InstanceId>${id}</InstanceId>
        <InstanceType>t3.micro</InstanceType>
        <LaunchTemplate>
          <LaunchTemplateName>my-template-for-auto-scaling</LaunchTemplateName>
          <LaunchTemplateId>lt-050555ad16a3f9c7f</LaunchTemplateId>
          <Version>1</Version>
        </LaunchTemplate>
        <ProtectedFromScaleIn>false</ProtectedFromScaleIn>
        <LifecycleState>${state}</LifecycleState>
      </member>`;

const groupXml = (name: string, o: { instances?: string[]; tags?: string; suspended?: string[] } = {}) => `
  <member>
    <HealthCheckType>EC2</HealthCheckType>
    <LoadBalancerNames/>
    <Instances>${(o.instances ?? []).join('')}</Instances>
    <TerminationPolicies><member>Default</member></TerminationPolicies>
    <DefaultCooldown>300</DefaultCooldown>
    <AutoScalingGroupARN>arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:12345678:autoScalingGroupName/${name}</AutoScalingGroupARN>
    <EnabledMetrics/>
    <AvailabilityZones><member>us-west-2a</member></AvailabilityZones>
    <Tags>${o.tags ?? ''}</Tags>
    <LaunchTemplate>
      <LaunchTemplateName>my-template-for-auto-scaling</LaunchTemplateName>
      <LaunchTemplateId>lt-050555ad16a3f9c7f</LaunchTemplateId>
      <Version>$Latest</Version>
    </LaunchTemplate>
    <AutoScalingGroupName>${name}</AutoScalingGroupName>
    <HealthCheckGracePeriod>300</HealthCheckGracePeriod>
    <NewInstancesProtectedFromScaleIn>false</NewInstancesProtectedFromScaleIn>
    <SuspendedProcesses>${(o.suspended ?? [])
      .map((p) => `<member><ProcessName>${p}</ProcessName><SuspensionReason>User suspended</SuspensionReason></member>`)
      .join('')}</SuspendedProcesses>
    <CreatedTime>2023-03-09T22:15:11.611Z</CreatedTime>
    <MinSize>1</MinSize>
    <MaxSize>5</MaxSize>
    <DesiredCapacity>2</DesiredCapacity>
  </member>`;

const answer = (groups: string[], nextToken?: string) => `<?xml version="1.0" encoding="UTF-8"?>
<DescribeAutoScalingGroupsResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/">
  <DescribeAutoScalingGroupsResult>
    <AutoScalingGroups>${groups.join('')}</AutoScalingGroups>${nextToken ? `\n    <NextToken>${nextToken}</NextToken>` : ''}
  </DescribeAutoScalingGroupsResult>
  <ResponseMetadata><RequestId>12345678-1234-1234-1234-123456789012</RequestId></ResponseMetadata>
</DescribeAutoScalingGroupsResponse>`;

const tag = (key: string, value: string, valueFirst = false) =>
  valueFirst
    ? `<member><Value>${value}</Value><ResourceType>auto-scaling-group</ResourceType><Key>${key}</Key></member>`
    : `<member><ResourceId>g</ResourceId><PropagateAtLaunch>true</PropagateAtLaunch><Value>${value}</Value><Key>${key}</Key><ResourceType>auto-scaling-group</ResourceType></member>`;

describe('DescribeAutoScalingGroups read lean', () => {
  it("finds each group's name, tags, suspended processes and instances, and nothing of the instances' templates", () => {
    const xml = answer([
      groupXml('workers', {
        instances: [instanceXml('i-0a', 'InService'), instanceXml('i-0b', 'Terminating:Wait', 'Unhealthy')],
        tags: tag('team', 'a &amp; b') + tag('graceful-node-termination/refresh-strategy', 'minimal:r-1', true),
        suspended: ['ReplaceUnhealthy', 'Launch'],
      }),
      groupXml('empty'),
    ]);
    expect(groupsOf(xml, { instances: true })).toEqual({
      groups: [
        {
          name: 'workers',
          tags: { team: 'a & b', 'graceful-node-termination/refresh-strategy': 'minimal:r-1' },
          suspendedProcesses: ['ReplaceUnhealthy', 'Launch'],
          instances: [
            { instanceId: 'i-0a', lifecycleState: 'InService', healthStatus: 'Healthy' },
            { instanceId: 'i-0b', lifecycleState: 'Terminating:Wait', healthStatus: 'Unhealthy' },
          ],
        },
        { name: 'empty', tags: {}, suspendedProcesses: [], instances: [] },
      ],
    });
    // Without instances: none is built.
    expect(groupsOf(xml, { instances: false }).groups.map((g) => g.instances)).toEqual([[], []]);
  });

  it('reads the NextToken of a page, and refuses an answer that is not XML it can follow', () => {
    expect(groupsOf(answer([groupXml('a')], 'token+/=='), { instances: false }).nextToken).toBe('token+/==');
    expect(groupsOf(answer([groupXml('a')]), { instances: false }).nextToken).toBeUndefined();
    expect(() => groupsOf('<A><B></A>', { instances: false })).toThrow(/malformed answer/);
    expect(() => groupsOf('<A><B>', { instances: false })).toThrow(/never closed/);
  });

  it('decodes the entities XML text may carry, and walks empty and attributed elements', () => {
    expect(decodeText('a &lt;b&gt; &quot;c&quot; &apos;d&apos; &amp;amp; &#233; &#x1F600;')).toBe(
      'a <b> "c" \'d\' &amp; é 😀',
    );
    const leaves: string[] = [];
    scanElements('<?xml version="1.0"?><R xmlns="x"><E/><T a="1">v</T><P><C>w</C></P></R>', {
      leaf: (path, text) => leaves.push(`${path.join('/')}=${text}`),
    });
    expect(leaves).toEqual(['R/E=', 'R/T=v', 'R/P/C=w']);
  });
});

describe('DescribeAutoScalingGroups over the Query API', () => {
  let server: Server;
  const forms: URLSearchParams[] = [];
  const authorizations: string[] = [];
  let query: AwsQuery;
  beforeAll(async () => {
    server = createServer((req, res) => {
      authorizations.push(String(req.headers.authorization));
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        forms.push(form);
        const names = [...form.keys()]
          .filter((k) => k.startsWith('AutoScalingGroupNames.member.'))
          .map((k) => form.get(k)!);
        // Two pages for the first name, as Auto Scaling pages by NextToken.
        const first = form.get('NextToken') === null;
        res.writeHead(200, { 'content-type': 'text/xml' });
        res.end(
          answer(
            (first ? names.slice(0, 1) : names.slice(1)).map((n) =>
              groupXml(n, { instances: [instanceXml(`i-${n}`, 'InService')] }),
            ),
            first && names.length > 1 ? 'page-2' : undefined,
          ),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    query = new AwsQuery(autoScalingApi, {
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      maxAttempts: 1,
    });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('asks for 100 groups a call, follows NextToken, and signs as the SDK does (autoscaling, 2011-01-01)', async () => {
    const names = Array.from({ length: 150 }, (_, i) => `g${i}`);
    const groups = await readGroups(query, [...names, 'g0'], { instances: true });
    expect(groups.map((g) => g.name)).toEqual(names);
    expect(groups[7]!.instances).toEqual([
      { instanceId: 'i-g7', lifecycleState: 'InService', healthStatus: 'Healthy' },
    ]);
    // 100 names, then their second page; 50, then theirs.
    expect(forms.map((f) => [f.get('Action'), f.get('Version'), f.get('NextToken')])).toEqual([
      ['DescribeAutoScalingGroups', '2011-01-01', null],
      ['DescribeAutoScalingGroups', '2011-01-01', 'page-2'],
      ['DescribeAutoScalingGroups', '2011-01-01', null],
      ['DescribeAutoScalingGroups', '2011-01-01', 'page-2'],
    ]);
    expect([...forms[0]!.keys()].filter((k) => k.startsWith('AutoScalingGroupNames'))).toHaveLength(100);
    expect(authorizations[0]).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/autoscaling\/aws4_request/,
    );
  });
});
