// The upgrade command's flow (scripts/upgrade.ts) with Auto Scaling stubbed at the SDK edge
// and the cluster reads stubbed: preflight refusal, the refresh it starts, following it to
// its end, the minimal strategy's tag, Ctrl-C.
import {
  AutoScalingClient,
  CreateOrUpdateTagsCommand,
  DeleteTagsCommand,
  DescribeAutoScalingGroupsCommand,
  DescribeInstanceRefreshesCommand,
  DescribeLifecycleHooksCommand,
  InstanceRefreshInProgressFault,
  StartInstanceRefreshCommand,
  type DescribeAutoScalingGroupsCommandOutput,
  type Instance,
} from '@aws-sdk/client-auto-scaling';
import type { CoreV1Api, CoreV1Event, PolicyV1Api, V1Pod } from '@kubernetes/client-node';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  currentDrains,
  progressBar,
  runUpgrade,
  type UpgradeDeps,
  type UpgradeRequest,
} from '../../../scripts/upgrade.js';
import { deploymentsOfHooks, renderPlan, type UpgradePlan } from '../../../scripts/upgrade-plan.js';

const asg = mockClient(AutoScalingClient);
const request: UpgradeRequest = {
  group: 'workers',
  strategy: 'default',
  force: false,
  autoRollback: false,
  approve: true,
  deployment: 'gnt-1',
  launchTemplateVersion: '7',
};
const pod = (name: string, node: string, app: string): V1Pod => ({
  metadata: {
    name,
    namespace: 'shop',
    labels: { app },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u', controller: true }],
  },
  spec: { nodeName: node, containers: [] },
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
});

function deps(
  o: {
    pods?: V1Pod[];
    budgetAllows?: number;
    events?: CoreV1Event[];
    interrupted?: () => boolean;
    confirm?: UpgradeDeps['confirm'];
  } = {},
) {
  const lines: string[] = [];
  const plans: UpgradePlan[] = [];
  const unmarked: string[] = [];
  const pods = o.pods ?? [pod('web-1', 'old-1', 'web'), pod('web-2', 'old-2', 'web')];
  const core = {
    listPodForAllNamespaces: async ({ fieldSelector }: { fieldSelector: string }) => ({
      items: pods.filter((p) => `spec.nodeName=${p.spec?.nodeName}` === fieldSelector),
    }),
    listNamespacedPod: async () => ({ items: pods }),
    listEventForAllNamespaces: async () => ({ items: o.events ?? [] }),
  } as unknown as CoreV1Api;
  const policy = {
    listNamespacedPodDisruptionBudget: async () => ({
      items: [
        {
          metadata: { name: 'web', namespace: 'shop' },
          spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } },
          status: { disruptionsAllowed: o.budgetAllows ?? 1, currentHealthy: 2, desiredHealthy: 2 },
        },
      ],
    }),
  } as unknown as PolicyV1Api;
  const d: UpgradeDeps = {
    autoScaling: new AutoScalingClient({ region: 'eu-west-1' }),
    core,
    policy,
    nodesOf: async () => ['old-1', 'old-2'],
    unmarkOutdated: async (_group, id) => (unmarked.push(id), []),
    out: (line) => lines.push(line),
    showPlan: (plan) => plans.push(plan),
    confirm: o.confirm,
    tty: false,
    pollMs: 0,
    sleep: async () => {},
    interrupted: o.interrupted,
  };
  return { d, lines, unmarked, plans };
}

/** The group as DescribeAutoScalingGroups answers: on launch template lt-0abc version 6. */
const groupAnswer = (desired: number, instances: Instance[] = []): DescribeAutoScalingGroupsCommandOutput => ({
  $metadata: {},
  AutoScalingGroups: [
    {
      AutoScalingGroupName: 'workers',
      DesiredCapacity: desired,
      MinSize: 0,
      MaxSize: 8,
      DefaultCooldown: 300,
      AvailabilityZones: [],
      HealthCheckType: 'EC2',
      CreatedTime: new Date(),
      Instances: instances,
      LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '6' },
    },
  ],
});

const hook = (name: string, transition: 'LAUNCHING' | 'TERMINATING') => ({
  LifecycleHookName: name,
  AutoScalingGroupName: 'workers',
  LifecycleTransition: `autoscaling:EC2_INSTANCE_${transition}`,
});

describe('upgrade: the plan first', () => {
  beforeEach(() => {
    asg.reset();
    asg.on(DescribeAutoScalingGroupsCommand).resolves(
      groupAnswer(2, [
        {
          InstanceId: 'i-1',
          AvailabilityZone: 'a',
          LifecycleState: 'InService',
          HealthStatus: 'Healthy',
          ProtectedFromScaleIn: false,
        },
        {
          InstanceId: 'i-2',
          AvailabilityZone: 'a',
          LifecycleState: 'InService',
          HealthStatus: 'Healthy',
          ProtectedFromScaleIn: false,
        },
      ]),
    );
    asg.on(StartInstanceRefreshCommand).resolves({ InstanceRefreshId: 'r-1' });
    asg
      .on(DescribeInstanceRefreshesCommand)
      .resolves({ InstanceRefreshes: [{ InstanceRefreshId: 'r-1', Status: 'Successful', PercentageComplete: 100 }] });
    asg.on(DescribeLifecycleHooksCommand).resolves({
      LifecycleHooks: [
        hook('prod-gnt-launch', 'LAUNCHING'),
        hook('prod-gnt-terminate', 'TERMINATING'),
        hook('nth-terminate', 'TERMINATING'),
      ],
    });
  });

  it('without --approve and nobody to ask, shows the plan and changes nothing', async () => {
    const { d, lines, plans } = deps();
    const result = await runUpgrade({ ...request, approve: false, deployment: undefined, region: 'eu-west-1' }, d);

    expect(result).toMatchObject({ exitCode: 0, status: 'planned' });
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
    expect(lines.at(-1)).toMatch(/nothing was changed: run again with --approve/);
    expect(plans).toHaveLength(1);
    expect(plans[0]).toMatchObject({
      group: 'workers',
      region: 'eu-west-1',
      instances: ['i-1', 'i-2'],
      deployment: 'prod-gnt',
      deploymentFrom: 'lifecycle hooks',
    });
    expect(plans[0]!.alarms).toEqual(['prod-gnt-DrainsTimedOut', 'prod-gnt-LaunchesAbandoned']);
    const text = renderPlan(plans[0]!).join('\n');
    expect(text).toMatch(/instance refresh of workers in eu-west-1/);
    expect(text).toMatch(/instances to replace: +2 \(i-1, i-2/);
    expect(text).toMatch(
      /alarms: +prod-gnt-DrainsTimedOut, prod-gnt-LaunchesAbandoned \(deployment prod-gnt from lifecycle hooks\)/,
    );
    expect(text).toMatch(/preflight: +2 node\(s\), 0 blocker\(s\)/);
  });

  it('asks on a terminal: a "yes" starts the refresh with the alarms of the deployment its hooks name, anything else starts nothing', async () => {
    const asked: UpgradePlan[] = [];
    const no = deps({ confirm: async (plan) => (asked.push(plan), false) });
    await expect(runUpgrade({ ...request, approve: false, deployment: undefined }, no.d)).resolves.toMatchObject({
      exitCode: 0,
      status: 'planned',
    });
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
    expect(asked).toHaveLength(1);

    const yes = deps({ confirm: async () => true });
    await expect(runUpgrade({ ...request, approve: false, deployment: undefined }, yes.d)).resolves.toMatchObject({
      exitCode: 0,
      status: 'Successful',
    });
    expect(asg.commandCalls(StartInstanceRefreshCommand)[0]!.args[0].input.Preferences?.AlarmSpecification).toEqual({
      Alarms: ['prod-gnt-DrainsTimedOut', 'prod-gnt-LaunchesAbandoned'],
    });
  });

  it('finds a deployment only where both of its hooks are on the group', () => {
    expect(
      deploymentsOfHooks([
        hook('a-launch', 'LAUNCHING'),
        hook('a-terminate', 'TERMINATING'),
        hook('b-terminate', 'TERMINATING'),
        hook('c-launch', 'TERMINATING'),
      ]),
    ).toEqual(['a']);
    expect(deploymentsOfHooks([hook('x-terminate', 'LAUNCHING'), hook('x-launch', 'TERMINATING')])).toEqual([]);
  });

  it('refuses to guess between two deployments on one group', async () => {
    asg.on(DescribeLifecycleHooksCommand).resolves({
      LifecycleHooks: [
        hook('a-launch', 'LAUNCHING'),
        hook('a-terminate', 'TERMINATING'),
        hook('b-launch', 'LAUNCHING'),
        hook('b-terminate', 'TERMINATING'),
      ],
    });
    await expect(runUpgrade({ ...request, deployment: undefined }, deps().d)).rejects.toThrow(
      /several deployments \(a, b\): name one with --deployment/,
    );
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
  });
});

describe('upgrade', () => {
  beforeEach(() => {
    asg.reset();
    asg.on(DescribeAutoScalingGroupsCommand).resolves(groupAnswer(4));
    asg.on(StartInstanceRefreshCommand).resolves({ InstanceRefreshId: 'r-1' });
    asg.on(CreateOrUpdateTagsCommand).resolves({});
    asg.on(DeleteTagsCommand).resolves({});
  });

  it('refuses to start when the preflight finds a certain blocker, unless forced', async () => {
    const { d, lines } = deps({ budgetAllows: 0 });
    await expect(runUpgrade(request, d)).resolves.toMatchObject({ exitCode: 3, reason: 'preflight blocker' });
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
    expect(lines.join('\n')).toMatch(/BLOCKER .* budget web allows no disruption[\s\S]*refusing to start/);

    asg.on(DescribeInstanceRefreshesCommand).resolves({
      InstanceRefreshes: [
        { InstanceRefreshId: 'r-1', Status: 'Successful', PercentageComplete: 100, InstancesToUpdate: 0 },
      ],
    });
    await expect(runUpgrade({ ...request, force: true }, deps({ budgetAllows: 0 }).d)).resolves.toMatchObject({
      exitCode: 0,
    });
  });

  it("starts a refresh with managed-group preferences and the deployment's alarms, follows it to success and takes back the marks", async () => {
    asg
      .on(DescribeInstanceRefreshesCommand)
      .resolvesOnce({
        InstanceRefreshes: [
          { InstanceRefreshId: 'r-1', Status: 'InProgress', PercentageComplete: 50, InstancesToUpdate: 2 },
        ],
      })
      .resolves({
        InstanceRefreshes: [
          { InstanceRefreshId: 'r-1', Status: 'Successful', PercentageComplete: 100, InstancesToUpdate: 0 },
        ],
      });
    const { d, lines, unmarked } = deps();
    await expect(runUpgrade(request, d)).resolves.toMatchObject({
      exitCode: 0,
      refreshId: 'r-1',
      status: 'Successful',
    });
    expect(asg.commandCalls(StartInstanceRefreshCommand)[0]!.args[0].input).toEqual({
      AutoScalingGroupName: 'workers',
      Strategy: 'Rolling',
      Preferences: {
        MinHealthyPercentage: 100,
        MaxHealthyPercentage: 125,
        SkipMatching: true,
        AutoRollback: false,
        AlarmSpecification: { Alarms: ['gnt-1-DrainsTimedOut', 'gnt-1-LaunchesAbandoned'] },
      },
      DesiredConfiguration: { LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '7' } },
    });
    expect(lines.filter((l) => l.startsWith('['))).toEqual([
      `${progressBar(50)}  InProgress  2 instance(s) still to replace`,
      `${progressBar(100)}  Successful  0 instance(s) still to replace`,
    ]);
    expect(unmarked).toEqual(['r-1']);
    expect(asg.commandCalls(CreateOrUpdateTagsCommand)).toHaveLength(0);
  });

  it('exits non-zero with the reason when the refresh fails (an alarm went off); minimal tags the group for the drainer and untags it', async () => {
    asg.on(DescribeInstanceRefreshesCommand).resolves({
      InstanceRefreshes: [
        {
          InstanceRefreshId: 'r-1',
          Status: 'Failed',
          StatusReason: 'Alarm gnt-1-DrainsTimedOut is in ALARM state',
          PercentageComplete: 25,
        },
      ],
    });
    const { d, lines } = deps();
    await expect(runUpgrade({ ...request, strategy: 'minimal' }, d)).resolves.toMatchObject({
      exitCode: 1,
      status: 'Failed',
      reason: 'Alarm gnt-1-DrainsTimedOut is in ALARM state',
    });
    expect(lines.at(-1)).toMatch(/ended Failed after \d+ s: Alarm gnt-1-DrainsTimedOut is in ALARM state/);
    // The tag names its owner: the next few minutes until the start answers, then the refresh.
    const tags = asg.commandCalls(CreateOrUpdateTagsCommand).map((c) => c.args[0].input.Tags?.[0]);
    expect(tags).toEqual([
      expect.objectContaining({
        Key: 'graceful-node-termination/refresh-strategy',
        Value: expect.stringMatching(/^minimal@\d+$/),
        ResourceId: 'workers',
      }),
      expect.objectContaining({
        Key: 'graceful-node-termination/refresh-strategy',
        Value: 'minimal:r-1',
        ResourceId: 'workers',
      }),
    ]);
    expect(asg.commandCalls(DeleteTagsCommand)).toHaveLength(1);
    expect(asg.commandCalls(StartInstanceRefreshCommand)[0]!.args[0].input.Preferences).toMatchObject({
      MinHealthyPercentage: 75,
      MaxHealthyPercentage: 100,
    });
  });

  it('takes its tag off the group when StartInstanceRefresh fails, so the next refresh anyone starts is not cordoned', async () => {
    asg.on(StartInstanceRefreshCommand).rejects(new Error('InstanceRefreshInProgress'));
    const { d } = deps();
    await expect(runUpgrade({ ...request, strategy: 'minimal' }, d)).rejects.toThrow(/InstanceRefreshInProgress/);
    expect(asg.commandCalls(CreateOrUpdateTagsCommand)).toHaveLength(1);
    expect(asg.commandCalls(DeleteTagsCommand)).toHaveLength(1);
  });

  it('interrupted before the start, starts nothing and leaves no tag', async () => {
    const { d } = deps({ interrupted: () => true });
    await expect(runUpgrade({ ...request, strategy: 'minimal' }, d)).resolves.toMatchObject({ exitCode: 130 });
    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
    expect(asg.commandCalls(DeleteTagsCommand)).toHaveLength(1);
  });

  it('redraws the progress in place on a terminal', async () => {
    asg
      .on(DescribeInstanceRefreshesCommand)
      .resolvesOnce({
        InstanceRefreshes: [
          { InstanceRefreshId: 'r-1', Status: 'InProgress', PercentageComplete: 50, InstancesToUpdate: 2 },
        ],
      })
      .resolves({
        InstanceRefreshes: [
          { InstanceRefreshId: 'r-1', Status: 'Successful', PercentageComplete: 100, InstancesToUpdate: 0 },
        ],
      });
    const { d, lines } = deps();
    await runUpgrade(request, { ...d, tty: true });
    const bars = lines.filter((l) => l.includes('instance(s) still to replace'));
    expect(bars[0]!.startsWith('[')).toBe(true);
    expect(bars[1]).toBe(`\x1b[1F\x1b[J${progressBar(100)}  Successful  0 instance(s) still to replace`);
  });

  it('Ctrl-C stops following and says how to cancel; the refresh keeps running', async () => {
    asg
      .on(DescribeInstanceRefreshesCommand)
      .resolves({ InstanceRefreshes: [{ InstanceRefreshId: 'r-1', Status: 'InProgress' }] });
    let polls = 0;
    const { d, lines, unmarked } = deps({ interrupted: () => polls++ > 2 });
    await expect(runUpgrade(request, d)).resolves.toMatchObject({ exitCode: 130, refreshId: 'r-1' });
    expect(lines.join('\n')).toMatch(
      /keeps running[\s\S]*aws autoscaling cancel-instance-refresh --auto-scaling-group-name workers/,
    );
    expect(unmarked).toEqual([]);
  });

  it('shows what each drain is doing from our Events, latest first written wins', () => {
    const e = (rv: number, node: string, reason: string, message: string): CoreV1Event => ({
      metadata: { resourceVersion: String(rv) },
      involvedObject: { kind: 'Node', name: node },
      reason,
      message,
      lastTimestamp: new Date('2026-11-23T10:00:05Z'),
    });
    expect(
      currentDrains(
        [
          e(3, 'old-1', 'EvictionBlocked', 'payments-1: budget payments'),
          e(2, 'old-1', 'DrainStarted', 'x'),
          e(4, 'old-2', 'Drained', 'done'),
        ],
        Date.parse('2026-11-23T10:00:00Z'),
      ),
    ).toEqual(['old-1: EvictionBlocked payments-1: budget payments']);
  });

  it('refuses --auto-rollback on a group that uses $Latest before anything starts (Auto Scaling would refuse the refresh)', async () => {
    // https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_RollbackInstanceRefresh.html
    const answer = groupAnswer(4);
    answer.AutoScalingGroups![0]!.LaunchTemplate = { LaunchTemplateId: 'lt-0abc', Version: '$Latest' };
    asg.on(DescribeAutoScalingGroupsCommand).resolves(answer);
    const result = await runUpgrade({ ...request, autoRollback: true }, deps().d).catch((e: unknown) => e);

    expect(asg.commandCalls(StartInstanceRefreshCommand)).toHaveLength(0);
    expect(result).toMatchObject({ exitCode: 2, reason: expect.stringMatching(/^--auto-rollback is refused/) });
  });

  it('says a refresh Auto Scaling refused because another started meanwhile as a refusal, and takes its tag off', async () => {
    // StartInstanceRefresh's InstanceRefreshInProgress ("an active instance refresh already exists"):
    // https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_StartInstanceRefresh.html
    asg
      .on(StartInstanceRefreshCommand)
      .rejects(
        new InstanceRefreshInProgressFault({ message: 'An Instance Refresh is already in progress', $metadata: {} }),
      );
    const { d, lines } = deps();
    const result = await runUpgrade({ ...request, strategy: 'minimal' }, d);

    expect(result).toMatchObject({ exitCode: 3, status: 'refused' });
    expect(lines.at(-1)).toMatch(/^refused by Auto Scaling: another instance refresh of workers started meanwhile/);
    expect(asg.commandCalls(DeleteTagsCommand)).toHaveLength(1);
  });
});
