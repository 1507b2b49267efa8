// `upgrade --release`: the AMI family read off the image's name, the SSM parameter of a
// release, the version-skew check, the requests EC2 and SSM receive (checked on the wire against
// the APIs' documented shapes), and the flow with Auto Scaling stubbed at the SDK edge.
import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeInstanceRefreshesCommand,
  DescribeLifecycleHooksCommand,
  InstanceRefreshInProgressFault,
  StartInstanceRefreshCommand,
  UpdateAutoScalingGroupCommand,
  type Instance,
} from '@aws-sdk/client-auto-scaling';
import type { AppsV1Api, CoreV1Api, PolicyV1Api, V1Deployment } from '@kubernetes/client-node';
import { mockClient } from 'aws-sdk-client-mock';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { amiReleaseOf, minorOf, parameterName, releaseProblem } from '../../../scripts/ami-release.js';
import { createImageCatalog, type ImageCatalog } from '../../../scripts/aws-images.js';
import { runReleaseUpgrade, type ReleaseDeps } from '../../../scripts/upgrade-release.js';
import { renderPlan, type UpgradePlan } from '../../../scripts/upgrade-plan.js';
import { skewProblem } from '../../../scripts/version-skew.js';
import { lostAvailability, nodesBehind } from '../../../scripts/workload-availability.js';

describe('the AMI family, from the image name AWS gives it', () => {
  it('reads AL2023 standard, nvidia and neuron on both architectures, and Bottlerocket variants', () => {
    expect(amiReleaseOf({ imageId: 'ami-1', name: 'amazon-eks-node-al2023-x86_64-standard-1.33-v20251120' })).toEqual({
      os: 'al2023',
      arch: 'x86_64',
      flavor: 'standard',
      kubernetes: '1.33',
      release: 'v20251120',
    });
    expect(
      amiReleaseOf({ imageId: 'ami-1', name: 'amazon-eks-node-al2023-arm64-nvidia-1.34-v20251001' }),
    ).toMatchObject({ arch: 'arm64', flavor: 'nvidia' });
    expect(
      amiReleaseOf({ imageId: 'ami-1', name: 'amazon-eks-node-al2023-x86_64-neuron-1.32-v20250505' }),
    ).toMatchObject({ flavor: 'neuron', kubernetes: '1.32' });
    expect(amiReleaseOf({ imageId: 'ami-1', name: 'bottlerocket-aws-k8s-1.33-aarch64-v1.26.1-943d9a41' })).toEqual({
      os: 'bottlerocket',
      arch: 'arm64',
      flavor: '',
      kubernetes: '1.33',
      release: '1.26.1',
    });
    expect(
      amiReleaseOf({ imageId: 'ami-1', name: 'bottlerocket-aws-k8s-1.31-nvidia-x86_64-v1.20.1-7c3e9198' }),
    ).toMatchObject({ flavor: 'nvidia', arch: 'x86_64' });
  });

  it('refuses AL2 and images it cannot place, with a one-line reason', () => {
    expect(amiReleaseOf({ imageId: 'ami-1', name: 'amazon-eks-node-1.29-v20240117' })).toEqual({
      refused: expect.stringMatching(/Amazon Linux 2 AMI: --release moves AL2023/),
    });
    expect(amiReleaseOf({ imageId: 'ami-9', name: 'golden-image-42' })).toEqual({
      refused: expect.stringMatching(/^the group's image ami-9 \(golden-image-42\) is not an EKS-optimized/),
    });
  });

  it("names AWS's public parameters: recommended/latest, or a dated release", () => {
    const al = { os: 'al2023', arch: 'x86_64', flavor: 'standard' } as const;
    expect(parameterName(al, '1.34', 'latest')).toBe(
      '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id',
    );
    expect(parameterName(al, '1.34', 'v20251120')).toBe(
      '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.34-v20251120/image_id',
    );
    expect(parameterName({ os: 'bottlerocket', arch: 'arm64', flavor: '' }, '1.33', 'latest')).toBe(
      '/aws/service/bottlerocket/aws-k8s-1.33/arm64/latest/image_id',
    );
    expect(parameterName({ os: 'bottlerocket', arch: 'x86_64', flavor: 'nvidia' }, '1.33', 'v1.26.1')).toBe(
      '/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/1.26.1/image_id',
    );
    expect(releaseProblem('al2023', '1.26.1')).toMatch(/not an AL2023 release/);
    expect(releaseProblem('bottlerocket', 'v20251120')).toMatch(/not a Bottlerocket release/);
    expect(minorOf('v1.33.5-eks-113cf36')).toBe('1.33');
  });
});

describe('the version-skew check', () => {
  it('allows the same minor and one minor up to the control plane', () => {
    expect(skewProblem({ target: '1.33', controlPlane: '1.34', nodes: ['1.33'] })).toBeUndefined();
    expect(skewProblem({ target: '1.34', controlPlane: '1.34', nodes: ['1.33', '1.33'] })).toBeUndefined();
  });

  it('refuses, in one line each: newer than the control plane, two minors at once, a downgrade, too old', () => {
    const reasons = [
      skewProblem({ target: '1.35', controlPlane: '1.34', nodes: ['1.34'] }),
      skewProblem({ target: '1.34', controlPlane: '1.34', nodes: ['1.32'] }),
      skewProblem({ target: '1.32', controlPlane: '1.34', nodes: ['1.33'] }),
      skewProblem({ target: '1.30', controlPlane: '1.34', nodes: ['1.30'] }),
    ];
    expect(reasons[0]).toMatch(/^refusing: kubelet 1.35 would be newer than the control plane \(1.34\)/);
    expect(reasons[1]).toMatch(
      /^refusing: one minor version at a time: the group's nodes run 1.32, move them to 1.33 first/,
    );
    expect(reasons[2]).toMatch(/would downgrade them/);
    expect(reasons[3]).toMatch(/4 minor versions older than the control plane/);
    for (const r of reasons) expect(r!.split('\n')).toHaveLength(1);
  });
});

describe('after the upgrade', () => {
  it('lists what was available and is not, and the nodes not Ready at the version', () => {
    const before = new Map([
      ['Deployment/shop/web', true],
      ['Deployment/shop/broken', false],
      ['DaemonSet/kube-system/proxy', true],
    ]);
    const after = new Map([
      ['Deployment/shop/web', false],
      ['Deployment/shop/broken', false],
      ['DaemonSet/kube-system/proxy', true],
    ]);
    expect(lostAvailability(before, after)).toEqual(['Deployment/shop/web']);
    expect(
      nodesBehind(
        [
          { name: 'a', ready: true, kubeletVersion: 'v1.34.2' },
          { name: 'b', ready: false, kubeletVersion: 'v1.34.2' },
          { name: 'c', ready: true, kubeletVersion: 'v1.33.9' },
        ],
        '1.34',
      ),
    ).toEqual(['b: not Ready', 'c: kubelet v1.33.9, not 1.34']);
  });
});

/** What EC2 and SSM received on the wire. */
interface Received {
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

describe('the requests, on the wire', () => {
  const received: Received[] = [];
  let url = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ headers: req.headers, body });
      if (req.headers['x-amz-target'] === 'AmazonSSM.GetParameter') {
        const name = (JSON.parse(body) as { Name: string }).Name;
        if (name.includes('1.99')) {
          res
            .writeHead(400, { 'content-type': 'application/x-amz-json-1.1' })
            .end(JSON.stringify({ __type: 'ParameterNotFound', message: '' }));
          return;
        }
        res
          .writeHead(200, { 'content-type': 'application/x-amz-json-1.1' })
          .end(JSON.stringify({ Parameter: { Name: name, Type: 'String', Value: 'ami-0new', Version: 3 } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(
        '<CreateLaunchTemplateVersionResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><launchTemplateVersion><launchTemplateId>lt-0abc</launchTemplateId><versionNumber>7</versionNumber></launchTemplateVersion></CreateLaunchTemplateVersionResponse>',
      );
    });
  });
  let catalog: ImageCatalog;
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    catalog = createImageCatalog({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
      endpoint: url,
      ssmEndpoint: url,
    });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => void received.splice(0));

  it('CreateLaunchTemplateVersion: the source version and only LaunchTemplateData.ImageId, with a ClientToken, signed for ec2', async () => {
    const version = await catalog.createVersion(
      { templateId: 'lt-0abc', version: '6', imageId: 'ami-0old' },
      'ami-0new',
      'AL2023 standard x86_64 1.34 latest',
    );

    expect(version).toBe('7');
    const form = Object.fromEntries(new URLSearchParams(received[0]!.body));
    // https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateLaunchTemplateVersion.html
    expect(Object.keys(form).sort()).toEqual([
      'Action',
      'ClientToken',
      'LaunchTemplateData.ImageId',
      'LaunchTemplateId',
      'SourceVersion',
      'Version',
      'VersionDescription',
    ]);
    expect(form).toMatchObject({
      Action: 'CreateLaunchTemplateVersion',
      Version: '2016-11-15',
      LaunchTemplateId: 'lt-0abc',
      SourceVersion: '6',
      'LaunchTemplateData.ImageId': 'ami-0new',
    });
    expect(form['ClientToken']).toMatch(/^[0-9a-f]{64}$/);
    expect(received[0]!.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(received[0]!.headers['authorization']).toMatch(/Credential=AKID\/\d{8}\/eu-west-1\/ec2\/aws4_request/);
    // The same request again is the same token: EC2 answers it with the version it made.
    await catalog.createVersion({ templateId: 'lt-0abc', version: '6', imageId: 'ami-0old' }, 'ami-0new', 'again');
    expect(Object.fromEntries(new URLSearchParams(received[1]!.body))['ClientToken']).toBe(form['ClientToken']);
  });

  it('GetParameter: the awsJson1_1 body {"Name"} with X-Amz-Target, signed for ssm; ParameterNotFound is no value', async () => {
    const name = '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id';
    expect(await catalog.parameter(name)).toBe('ami-0new');
    // https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html
    expect(JSON.parse(received[0]!.body)).toEqual({ Name: name });
    expect(received[0]!.headers['x-amz-target']).toBe('AmazonSSM.GetParameter');
    expect(received[0]!.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(received[0]!.headers['authorization']).toMatch(/\/eu-west-1\/ssm\/aws4_request/);
    expect(await catalog.parameter(name.replace('1.34', '1.99'))).toBeUndefined();
  });
});

describe('runReleaseUpgrade', () => {
  const asg = mockClient(AutoScalingClient);
  const instances: Instance[] = [
    {
      InstanceId: 'i-1',
      AvailabilityZone: 'a',
      LifecycleState: 'InService',
      HealthStatus: 'Healthy',
      ProtectedFromScaleIn: false,
      LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '6' },
    },
    {
      InstanceId: 'i-2',
      AvailabilityZone: 'a',
      LifecycleState: 'InService',
      HealthStatus: 'Healthy',
      ProtectedFromScaleIn: false,
      LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '6' },
    },
  ];
  beforeEach(() => {
    asg.reset();
    asg.on(DescribeAutoScalingGroupsCommand).resolves({
      AutoScalingGroups: [
        {
          AutoScalingGroupName: 'workers',
          DesiredCapacity: 2,
          MinSize: 0,
          MaxSize: 4,
          DefaultCooldown: 300,
          AvailabilityZones: [],
          HealthCheckType: 'EC2',
          CreatedTime: new Date(),
          Instances: instances,
          LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '6' },
        },
      ],
    });
    asg.on(DescribeLifecycleHooksCommand).resolves({ LifecycleHooks: [] });
    asg.on(StartInstanceRefreshCommand).resolves({ InstanceRefreshId: 'r-1' });
    asg
      .on(DescribeInstanceRefreshesCommand)
      .resolves({ InstanceRefreshes: [{ InstanceRefreshId: 'r-1', Status: 'Successful', PercentageComplete: 100 }] });
  });

  function world(o: { kubelet?: string; controlPlane?: string; afterDeployments?: V1Deployment[] } = {}) {
    const created: { source: string; imageId: string }[] = [];
    const parameters: string[] = [];
    const lines: string[] = [];
    const plans: UpgradePlan[] = [];
    const deployment = (available: number): V1Deployment => ({
      metadata: { namespace: 'shop', name: 'web' },
      spec: { replicas: 2 } as V1Deployment['spec'],
      status: { availableReplicas: available },
    });
    let reads = 0;
    const apps = {
      listDeploymentForAllNamespaces: async () => ({
        items: reads++ === 0 ? [deployment(2)] : (o.afterDeployments ?? [deployment(2)]),
      }),
      listStatefulSetForAllNamespaces: async () => ({ items: [] }),
      listDaemonSetForAllNamespaces: async () => ({ items: [] }),
    } as unknown as AppsV1Api;
    let kubelet = o.kubelet ?? 'v1.33.4';
    const deps: ReleaseDeps = {
      autoScaling: new AutoScalingClient({ region: 'eu-west-1' }),
      core: {
        listPodForAllNamespaces: async () => ({ items: [] }),
        listEventForAllNamespaces: async () => ({ items: [] }),
      } as unknown as CoreV1Api,
      policy: {
        listNamespacedPodDisruptionBudget: async () => ({ items: [] }),
        listPodDisruptionBudgetForAllNamespaces: async () => ({ items: [] }),
      } as unknown as PolicyV1Api,
      nodesOf: async () => ['node-1', 'node-2'],
      out: (line) => lines.push(line),
      showPlan: (plan) => plans.push(plan),
      tty: false,
      pollMs: 0,
      sleep: async () => {},
      catalog: {
        templateVersion: async (_t, version) => ({ templateId: 'lt-0abc', version, imageId: 'ami-0old' }),
        image: async (id) => ({
          imageId: id,
          name: 'amazon-eks-node-al2023-x86_64-standard-1.33-v20251001',
          architecture: 'x86_64',
        }),
        createVersion: async (t, imageId) => (created.push({ source: t.version, imageId }), (kubelet = 'v1.34.1'), '7'),
        parameter: async (name) => (parameters.push(name), 'ami-0new'),
      },
      apps,
      controlPlaneVersion: async () => o.controlPlane ?? '1.34',
      nodeVersions: async (names) => names.map((name) => ({ name, ready: true, kubeletVersion: kubelet })),
      availableTimeoutMs: 0,
    };
    return { deps, created, parameters, lines, plans };
  }
  const request = {
    group: 'workers',
    strategy: 'default' as const,
    force: false,
    autoRollback: false,
    approve: true,
    deployment: 'gnt',
    release: 'latest',
  };

  it('plans first: the release and the image in the plan, nothing created without --approve', async () => {
    const w = world();
    const result = await runReleaseUpgrade({ ...request, approve: false, kubernetesVersion: '1.34' }, w.deps);

    expect(result).toMatchObject({ exitCode: 0, status: 'planned' });
    expect(w.created).toEqual([]);
    expect(w.parameters).toEqual([
      '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id',
    ]);
    const text = renderPlan(w.plans[0]!).join('\n');
    expect(text).toMatch(
      /release: +AL2023 standard x86_64: Kubernetes 1.33 v20251001 -> 1.34 latest \(control plane 1.34\)/,
    );
    expect(text).toMatch(/image: +ami-0old -> ami-0new/);
    expect(text).toMatch(/new template version: +lt-0abc from version 6, only the image changed/);
  });

  it("approved: one version from the group's, the refresh to it, then every workload and node checked", async () => {
    const w = world();
    const result = await runReleaseUpgrade({ ...request, kubernetesVersion: '1.34' }, w.deps);

    expect(result).toMatchObject({ exitCode: 0, status: 'Successful', unavailable: [] });
    expect(w.created).toEqual([{ source: '6', imageId: 'ami-0new' }]);
    const start = asg.commandCalls(StartInstanceRefreshCommand);
    expect(start).toHaveLength(1);
    expect(start[0]!.args[0].input.DesiredConfiguration).toEqual({
      LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '7' },
    });
  });

  it('refuses a skew violation in one line, before anything is created', async () => {
    const w = world({ controlPlane: '1.33' });
    const result = await runReleaseUpgrade({ ...request, kubernetesVersion: '1.34' }, w.deps);

    expect(result).toMatchObject({
      exitCode: 3,
      reason: expect.stringMatching(/^refusing: kubelet 1.34 would be newer than the control plane \(1.33\)/),
    });
    expect(w.created).toEqual([]);
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
  });

  it('exits 1 naming a Deployment that was available before and is not after', async () => {
    const broken: V1Deployment = {
      metadata: { namespace: 'shop', name: 'web' },
      spec: { replicas: 2 } as V1Deployment['spec'],
      status: { availableReplicas: 0 },
    };
    const w = world({ afterDeployments: [broken] });
    const result = await runReleaseUpgrade({ ...request, kubernetesVersion: '1.34' }, w.deps);

    expect(result).toMatchObject({
      exitCode: 1,
      unavailable: ['Deployment/shop/web: not available (it was before the upgrade)'],
    });
    expect(w.lines).toContain('  Deployment/shop/web: not available (it was before the upgrade)');
  });

  it('does nothing when the group already runs the image', async () => {
    const w = world();
    w.deps.catalog.parameter = async () => 'ami-0old';
    expect(await runReleaseUpgrade(request, w.deps)).toMatchObject({ exitCode: 0, status: 'up-to-date' });
    expect(w.created).toEqual([]);
  });

  /**
   * The group as Auto Scaling and EC2 keep it, for the failure paths: the version the group names
   * (a number, $Latest or $Default), the template's versions and their images, and the instances'
   * versions. $Latest is the highest version and launches use it the moment it exists; a refresh
   * that succeeds leaves the group on the version it rolled to; UpdateAutoScalingGroup sets it.
   * https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_LaunchTemplateSpecification.html
   * https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_StartInstanceRefresh.html
   */
  function fleet(o: { groupVersion: string; versions: Record<string, string>; instanceVersion: string }) {
    const w = world();
    const versions = new Map(Object.entries(o.versions));
    const group = { version: o.groupVersion };
    const resolve = (v: string) =>
      v === '$Latest' ? String(Math.max(...[...versions.keys()].map(Number))) : v === '$Default' ? '6' : v;
    const steps: string[] = [];
    asg.on(DescribeAutoScalingGroupsCommand).callsFake(async () => ({
      AutoScalingGroups: [
        {
          AutoScalingGroupName: 'workers',
          DesiredCapacity: 2,
          MinSize: 0,
          MaxSize: 4,
          DefaultCooldown: 300,
          AvailabilityZones: [],
          HealthCheckType: 'EC2',
          CreatedTime: new Date(),
          Instances: instances.map((i) => ({
            ...i,
            LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: o.instanceVersion },
          })),
          LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: group.version },
        },
      ],
    }));
    asg.on(UpdateAutoScalingGroupCommand).callsFake(async (input: { LaunchTemplate?: { Version?: string } }) => {
      steps.push(`set the group to version ${input.LaunchTemplate?.Version}`);
      group.version = input.LaunchTemplate?.Version ?? group.version;
      return {};
    });
    w.deps.catalog.templateVersion = async (_t, v) => {
      const n = resolve(v);
      return versions.has(n) ? { templateId: 'lt-0abc', version: n, imageId: versions.get(n) } : undefined;
    };
    w.deps.catalog.createVersion = async (_t, imageId) => {
      const n = String(Math.max(...[...versions.keys()].map(Number)) + 1);
      versions.set(n, imageId);
      steps.push(`created version ${n}`);
      return n;
    };
    // The refresh replaces the nodes: afterwards they run the new kubelet.
    let refreshed = false;
    asg.on(StartInstanceRefreshCommand).callsFake(async () => ((refreshed = true), { InstanceRefreshId: 'r-1' }));
    const deps: ReleaseDeps = {
      ...w.deps,
      nodeVersions: async (names) =>
        names.map((name) => ({ name, ready: true, kubeletVersion: refreshed ? 'v1.34.1' : 'v1.33.4' })),
    };
    /** The image a launch of the group uses now (scale-out, health replacement, rebalancing). */
    const launches = () => versions.get(resolve(group.version));
    return { ...w, deps, steps, launches, group };
  }
  const plan = (w: { plans: UpgradePlan[] }) => renderPlan(w.plans[0]!).join('\n');

  it('on a $Latest group: the plan says a new version would be what every launch uses at once; the group is set to the number first', async () => {
    const w = fleet({ groupVersion: '$Latest', versions: { '6': 'ami-0old' }, instanceVersion: '6' });
    const result = await runReleaseUpgrade({ ...request, kubernetesVersion: '1.34' }, w.deps);

    expect(plan(w)).toMatch(
      /launches: +the group uses \$Latest \(version 6 now\): a new version would be what every launch uses at once, so the group is set to version 6 first/,
    );
    expect(result).toMatchObject({ exitCode: 0, status: 'Successful' });
    // Set to 6 before 7 exists: no launch ever took the new image outside the refresh.
    expect(w.steps).toEqual(['set the group to version 6', 'created version 7']);
    expect(asg.commandCalls(StartInstanceRefreshCommand)[0]!.args[0].input.DesiredConfiguration).toEqual({
      LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '7' },
    });
  });

  it('the refresh refused after the version was made (another refresh started meanwhile): the new version launches nothing', async () => {
    const w = fleet({ groupVersion: '$Latest', versions: { '6': 'ami-0old' }, instanceVersion: '6' });
    // StartInstanceRefresh's InstanceRefreshInProgress: "an active instance refresh already exists".
    // https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_StartInstanceRefresh.html
    asg
      .on(StartInstanceRefreshCommand)
      .rejects(
        new InstanceRefreshInProgressFault({ message: 'An Instance Refresh is already in progress', $metadata: {} }),
      );
    const result = await runReleaseUpgrade({ ...request, kubernetesVersion: '1.34' }, w.deps).catch((e: unknown) => e);

    expect(w.launches()).toBe('ami-0old');
    expect(result).toMatchObject({ exitCode: 3, status: 'refused' });
    expect(w.lines).toContain(
      'launch template version 7 of lt-0abc stays, and nothing launches from it: the group was set from $Latest to version 6; run the command again to roll the group to it',
    );
  });

  it('Ctrl-C between the new version and the start: nothing launches from the version', async () => {
    const w = fleet({ groupVersion: '$Latest', versions: { '6': 'ami-0old' }, instanceVersion: '6' });
    const result = await runReleaseUpgrade(
      { ...request, kubernetesVersion: '1.34' },
      { ...w.deps, interrupted: () => w.steps.includes('created version 7') },
    );

    expect(result).toMatchObject({ exitCode: 130 });
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
    expect(w.launches()).toBe('ami-0old');
  });

  it('refuses, before anything is made, while a refresh of the group is not over (Auto Scaling would refuse the start)', async () => {
    const w = fleet({ groupVersion: '6', versions: { '6': 'ami-0old' }, instanceVersion: '6' });
    asg.on(DescribeInstanceRefreshesCommand).callsFake(async (input: { InstanceRefreshIds?: string[] }) => ({
      InstanceRefreshes: input.InstanceRefreshIds
        ? [{ InstanceRefreshId: 'r-1', Status: 'Successful', PercentageComplete: 100 }]
        : [{ InstanceRefreshId: 'r-0', Status: 'InProgress', PercentageComplete: 40 }],
    }));
    const result = await runReleaseUpgrade({ ...request, kubernetesVersion: '1.34' }, w.deps);

    expect(result).toMatchObject({
      exitCode: 3,
      reason: expect.stringMatching(
        /^refusing: instance refresh r-0 of workers is InProgress, and Auto Scaling starts no second one/,
      ),
    });
    expect(w.steps).toEqual([]);
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
  });

  it('asks again once approved: a refresh started while the prompt waited refuses the run, nothing made', async () => {
    const w = fleet({ groupVersion: '$Latest', versions: { '6': 'ami-0old' }, instanceVersion: '6' });
    let started = false;
    asg.on(DescribeInstanceRefreshesCommand).callsFake(async (input: { InstanceRefreshIds?: string[] }) => ({
      InstanceRefreshes: input.InstanceRefreshIds
        ? [{ InstanceRefreshId: 'r-1', Status: 'Successful', PercentageComplete: 100 }]
        : started
          ? [{ InstanceRefreshId: 'r-0', Status: 'Pending' }]
          : [],
    }));
    // Someone starts a refresh of the group while the operator reads the plan.
    const confirm = async () => ((started = true), true);
    const result = await runReleaseUpgrade(
      { ...request, kubernetesVersion: '1.34', approve: false },
      { ...w.deps, confirm },
    );

    expect(w.steps).toEqual([]);
    expect(result).toMatchObject({ exitCode: 3, status: 'refused' });
    expect(w.lines).toContain(
      'refusing: instance refresh r-0 of workers is Pending, and Auto Scaling starts no second one (InstanceRefreshInProgress); wait for it to end, or cancel it: aws autoscaling cancel-instance-refresh --auto-scaling-group-name workers',
    );
  });

  it('refuses --auto-rollback for a group on $Default before anything is made (AWS rolls back to no $Latest or $Default)', async () => {
    // https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_RollbackInstanceRefresh.html
    const w = fleet({ groupVersion: '$Default', versions: { '6': 'ami-0old' }, instanceVersion: '6' });
    const result = await runReleaseUpgrade({ ...request, kubernetesVersion: '1.34', autoRollback: true }, w.deps);

    expect(result).toMatchObject({
      exitCode: 2,
      reason: expect.stringMatching(/^--auto-rollback is refused: workers uses its launch template's \$Default/),
    });
    expect(w.steps).toEqual([]);
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
  });

  it('re-run after a refresh that never ran: the version has the image, the instances do not; it rolls them, no "nothing to do"', async () => {
    // What an earlier run left: version 7 with the new image, the group on $Latest, every instance on 6.
    const w = fleet({ groupVersion: '$Latest', versions: { '6': 'ami-0old', '7': 'ami-0new' }, instanceVersion: '6' });
    const result = await runReleaseUpgrade({ ...request, kubernetesVersion: '1.34' }, w.deps);

    expect(result).toMatchObject({ exitCode: 0, status: 'Successful' });
    expect(w.steps).toEqual([]);
    expect(plan(w)).toMatch(/template version: +lt-0abc version 7 has the image already/);
    expect(plan(w)).toMatch(
      /instances on the image: +0 of 2; not: i-1 \(ami-0old, version 6\), i-2 \(ami-0old, version 6\)/,
    );
    expect(asg.commandCalls(StartInstanceRefreshCommand)[0]!.args[0].input.DesiredConfiguration).toEqual({
      LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '7' },
    });
  });

  it('nothing to do only when the version has the image and every instance runs it', async () => {
    const w = fleet({ groupVersion: '7', versions: { '6': 'ami-0old', '7': 'ami-0new' }, instanceVersion: '7' });
    expect(await runReleaseUpgrade({ ...request, kubernetesVersion: '1.34' }, w.deps)).toMatchObject({
      exitCode: 0,
      status: 'up-to-date',
    });
    expect(w.lines.at(-1)).toMatch(
      /^nothing to do: workers uses version 7 with ami-0new, .* and every instance \(2\) runs it$/,
    );
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
  });
});

describe('the image of a group on a deprecated AMI', () => {
  // EC2 as the AMI user guide says: a deprecated AMI is left out of DescribeImages for its users
  // unless they specify its ID (ImageId.N) or ask for deprecated AMIs (IncludeDeprecated).
  // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ami-deprecate.html
  const deprecated = { id: 'ami-0deprecated', name: 'amazon-eks-node-al2023-x86_64-standard-1.31-v20231101' };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      const named = form['ImageId.1'] === deprecated.id || form['Filter.1.Value.1'] === deprecated.id;
      const shown = named && (form['ImageId.1'] !== undefined || form['IncludeDeprecated'] === 'true');
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(
        `<DescribeImagesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><imagesSet>${
          shown
            ? `<item><imageId>${deprecated.id}</imageId><name>${deprecated.name}</name><architecture>x86_64</architecture><deprecationTime>2025-11-01T00:00:00.000Z</deprecationTime></item>`
            : ''
        }</imagesSet></DescribeImagesResponse>`,
      );
    });
  });
  beforeAll(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('is still found (and its family read), two years after AWS deprecated it', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const catalog = createImageCatalog({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
      endpoint: url,
    });
    const image = await catalog.image(deprecated.id);

    expect(image).toMatchObject({ imageId: deprecated.id, name: deprecated.name });
    expect(amiReleaseOf(image!)).toMatchObject({ os: 'al2023', kubernetes: '1.31', release: 'v20231101' });
  });
});
