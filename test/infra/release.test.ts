// The release template (npm run release): generated from the construct, every variant it is
// made of synthesized through cdk-nag (generateRelease throws on a finding, and on any value
// derived from a parameter that its rewrite missed). Here: its parameters, the Fn::ForEach,
// the IAM scoping to the listed groups, no CDK asset left, and the first-deploy checks on it
// as CloudFormation would expand it. cfn-lint runs on it in `npm run release`.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RemovalPolicy, aws_ec2 as ec2, aws_iam as iam, aws_sns as sns, type Stack } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { DeadlinePolicy, type GracefulNodeTerminationProps } from '../../infra/graceful-node-termination.js';
import { propertyCoverage } from '../../infra/release-coverage.js';
import { parameterNames } from '../../infra/release-names.js';
import { releaseParameters } from '../../infra/release-parameters.js';
import type { Sentinels } from '../../infra/release-sentinels.js';
import { generateRelease, variantFor, type Release } from '../../infra/release.js';
import { surgeOf, terminationPolicyOf } from '../../infra/release-variants.js';
import { withParameterTables } from '../../scripts/release-docs.js';
import { describeFirstDeploy, type FirstDeployVariant } from './first-deploy-checks.js';
import { root, type Resources, type Statement } from './fixtures.js';
import { expandRelease, pseudo } from './release-expand.js';
import { drainerPrerequisites, grants, ofType, statementsOf, waitsFor } from './template-checks.js';
import { unscopedReads } from '../../infra/unscoped-reads.js';

const groups = ['prod-workers-a', 'prod_workers.b'];
const subnets = ['subnet-0123456789abcdef0', 'subnet-0123456789abcdef1'];
const securityGroups = ['sg-0123456789abcdef0'];
const vpc = (stack: Stack) => ({
  vpc: ec2.Vpc.fromVpcAttributes(stack, 'Vpc', {
    vpcId: 'vpc-0release',
    availabilityZones: ['az-a', 'az-b'],
    privateSubnetIds: subnets,
  }),
  securityGroups: securityGroups.map((id, i) => ec2.SecurityGroup.fromSecurityGroupId(stack, `SecurityGroup${i}`, id)),
});
const vpcValues = { SubnetIds: subnets, SecurityGroupIds: securityGroups };

/** The variants the first-deploy checks run on, as parameter values. */
const releaseVariants: (FirstDeployVariant & { values: Record<string, string | string[]> })[] = [
  { name: 'the release template in a VPC', values: vpcValues, vpcFunctions: 2, alarmTopics: 0, expanded: true },
  {
    name: 'the release template for aws-auth (ManageKubernetesAccess=false)',
    values: { ManageKubernetesAccess: 'false' },
    vpcFunctions: 0,
    alarmTopics: 0,
    expanded: true,
  },
  {
    name: 'the release template with Spot interruptions',
    values: { SpotInterruptions: 'true' },
    vpcFunctions: 0,
    alarmTopics: 0,
    expanded: true,
  },
  {
    name: 'the release template with everything at once',
    values: {
      ...vpcValues,
      ManageKubernetesAccess: 'false',
      SpotInterruptions: 'true',
      AlarmEmail: 'oncall@example.com',
      DeadlinePolicy: 'retain',
    },
    vpcFunctions: 1,
    alarmTopics: 1,
    expanded: true,
  },
];

/** Parameter values and the props that mean the same, over the sentinels of infra/release-variants.ts. */
const combinations: {
  name: string;
  values: Record<string, string | string[]>;
  props: (stack: Stack, s: Sentinels) => Partial<GracefulNodeTerminationProps>;
}[] = [
  { name: 'the defaults', values: {}, props: () => ({}) },
  {
    name: 'node auto repair with e-mail alarms',
    values: { Repair: 'on', AlarmEmail: 'oncall@example.com' },
    props: (_, s) => ({ repair: {}, alarmEmail: s.alarmEmail }),
  },
  {
    name: 'VPC, aws-auth, Spot, no reconciler, no waits, e-mail alarms, retain, a boundary',
    values: {
      ...vpcValues,
      ManageKubernetesAccess: 'false',
      SpotInterruptions: 'true',
      ReconcileMarks: 'false',
      WaitForTargets: 'false',
      WaitForVolumeDetach: 'false',
      AlarmEmail: 'oncall@example.com',
      DeadlinePolicy: 'retain',
      RetentionSetOutside: 'true',
      PermissionsBoundaryArn: 'arn:aws:iam::123456789012:policy/boundary',
      Dashboard: 'true',
      RunbookUrl: 'https://wiki.example.com/gnt',
    },
    props: (stack, s) => ({
      ...vpc(stack),
      manageKubernetesAccess: false,
      spotInterruptions: true,
      reconcileMarks: false,
      waitForTargets: false,
      waitForVolumeDetach: false,
      alarmEmail: s.alarmEmail,
      deadlinePolicy: DeadlinePolicy.RETAIN,
      permissionsBoundary: iam.ManagedPolicy.fromManagedPolicyArn(stack, 'Boundary', s.permissionsBoundary),
      dashboard: true,
      runbookUrl: 'https://wiki.example.com/gnt',
    }),
  },
  {
    name: 'VPC with Kubernetes access, an alarm topic and e-mail (the topic wins)',
    values: {
      ...vpcValues,
      AlarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:oncall',
      AlarmEmail: 'oncall@example.com',
    },
    props: (stack, s) => ({
      ...vpc(stack),
      alarmTopic: sns.Topic.fromTopicArn(stack, 'AlarmTopic', s.alarmTopicArn),
      alarmEmail: s.alarmEmail,
    }),
  },
  {
    name: 'surge before evict, DaemonSet pods, more load-balancer tags',
    values: {
      SurgeBeforeEvict: 'true',
      SurgeNamespaces: ['web', 'api'],
      SurgePodSelector: 'tier=frontend',
      SurgeTimeoutSeconds: '240',
      SurgeUntouchableManagers: ['argocd-controller'],
      EvictDaemonSetPods: 'true',
      LoadBalancerTags: 'team=platform,shared-lb',
    },
    props: (_, s) => ({ surgeBeforeEvict: surgeOf(s), evictDaemonSetPods: true }),
  },
  {
    name: 'no refresh marks, no sibling cordon, no reconciler, no out-of-service taint',
    values: {
      MarkOutdatedOnRefresh: 'false',
      CordonDoomedSiblings: 'false',
      ReconcileMarks: 'false',
      OutOfServiceAfterRelease: 'false',
    },
    props: () => ({
      markOutdatedOnRefresh: false,
      cordonDoomedSiblings: false,
      reconcileMarks: false,
      outOfServiceAfterRelease: false,
    }),
  },
  {
    name: 'a Kubernetes group, a custom service-linked role, a runbook, data retained, reserved concurrency',
    values: {
      KubernetesGroup: 'platform-drainers',
      TerminationPolicyServiceLinkedRoleArn:
        'arn:aws:iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling_eks',
      RunbookUrl: 'https://wiki.internal/runbooks/gnt',
      RemovalPolicy: 'retain',
      ReservedConcurrency: '20',
    },
    props: (_, s) => ({
      kubernetesGroup: s.kubernetesGroup,
      terminationPolicy: { ...terminationPolicyOf(s), serviceLinkedRoleArn: s.serviceLinkedRole },
      runbookUrl: s.runbookUrl,
      removalPolicy: RemovalPolicy.RETAIN,
      reservedConcurrency: s.reservedConcurrency,
    }),
  },
];

/** Resources compared by what they wait for, however the template says it (DependsOn or a conditional Ref in Metadata). */
function comparable(resources: Resources): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(resources).map(([id, r]) => {
      const { DependsOn: _, Metadata: __, Condition: ___, ...rest } = r;
      return [id, { ...rest, waitsFor: [...waitsFor({ ...r, Properties: {} })].sort() }];
    }),
  );
}
const values = (extra: Record<string, string | string[]> = {}) => ({
  ClusterName: 'prod',
  AutoScalingGroupNames: groups,
  LambdaCodeS3Bucket: 'my-artifacts',
  ...extra,
});

/** IAM's ArnLike / StringLike: `*` any run of characters, `?` one. */
const like = (pattern: string, value: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  ).test(value);
const groupArn = (name: string, region: string = pseudo['AWS::Region'], account: string = pseudo['AWS::AccountId']) =>
  `arn:aws:autoscaling:${region}:${account}:autoScalingGroup:0b7e-uuid:autoScalingGroupName/${name}`;

describe('the release template', () => {
  let release: Release;
  let resources: Resources;

  beforeAll(() => {
    release = generateRelease('9.9.9');
    resources = expandRelease(release.template, values());
  }, 300_000);

  it('is parameterised: where it runs, every setting the construct offers the template, the alarms, the code bucket and key', () => {
    const parameters = release.template['Parameters'] as Record<
      string,
      { Type: string; Default?: unknown; AllowedValues?: unknown }
    >;
    expect(Object.keys(parameters)).toEqual([
      'ClusterName',
      'AutoScalingGroupNames',
      'DeploymentName',
      'KubernetesGroup',
      'ManageKubernetesAccess',
      'Mode',
      'HeartbeatTimeoutSeconds',
      'DrainTimeoutSeconds',
      'DeadlinePolicy',
      'RetentionSetOutside',
      'BatchWaitSeconds',
      'MinEvictionWindowSeconds',
      'DrainRules',
      'EvictDaemonSetPods',
      'CordonDoomedSiblings',
      'EvictionConcurrency',
      'LaunchTimeoutSeconds',
      'WaitForTargets',
      'LoadBalancerMinWaitSeconds',
      'LoadBalancerMaxWaitSeconds',
      'LoadBalancerDelaySeconds',
      'LoadBalancerTags',
      'WaitForVolumeDetach',
      'OutOfServiceAfterRelease',
      'SurgeBeforeEvict',
      'SurgeNamespaces',
      'SurgePodSelector',
      'SurgeTimeoutSeconds',
      'SurgeUntouchableManagers',
      'SpotInterruptions',
      'MarkOutdatedOnRefresh',
      'ReconcileMarks',
      'ReconcileIntervalMinutes',
      'Repair',
      'TerminationDeferralMaxSeconds',
      'MaintenanceWindows',
      'MaintenanceTimeZone',
      'TerminationPolicyServiceLinkedRoleArn',
      'AlarmTopicArn',
      'AlarmEmail',
      'RunbookUrl',
      'Dashboard',
      'SubnetIds',
      'SecurityGroupIds',
      'MemorySizeMiB',
      'ReservedConcurrency',
      'LogRetentionDays',
      'RemovalPolicy',
      'PermissionsBoundaryArn',
      'RolePath',
      'LambdaCodeS3Bucket',
      'LambdaCodeS3Key',
    ]);
    expect(new Set(Object.keys(parameters))).toEqual(new Set(Object.values(parameterNames)));
    expect(parameters['AutoScalingGroupNames']!.Type).toBe('CommaDelimitedList');
    expect(parameters['HeartbeatTimeoutSeconds']).toMatchObject({ Type: 'Number', Default: 1800 });
    expect(parameters['DeadlinePolicy']).toMatchObject({
      Default: 'force',
      AllowedValues: ['force', 'leave', 'retain'],
    });
    expect(parameters['Repair']).toMatchObject({ Type: 'String', Default: 'off' });
    expect(parameters['LambdaCodeS3Key']!.Default).toBe(release.codeKey);
    expect(release.codeKey).toMatch(/^graceful-node-termination-9\.9\.9-lambda-[0-9a-f]{12}\.zip$/);
    expect(release.template['Transform']).toBe('AWS::LanguageExtensions');
  });

  it('makes the launch and terminate hooks in one Fn::ForEach over the group list, and no hook outside it', () => {
    const raw = release.template['Resources'] as Record<string, unknown>;
    const [identifier, collection, fragment] = raw['Fn::ForEach::LifecycleHooks'] as [string, unknown, Resources];
    expect(identifier).toBe('GroupName');
    expect(collection).toEqual({ Ref: 'AutoScalingGroupNames' });
    expect(
      Object.values(fragment).map((r) => [
        r.Type,
        r.Properties['LifecycleTransition'],
        r.Properties['AutoScalingGroupName'],
      ]),
    ).toEqual([
      ['AWS::AutoScaling::LifecycleHook', 'autoscaling:EC2_INSTANCE_LAUNCHING', { Ref: 'GroupName' }],
      ['AWS::AutoScaling::LifecycleHook', 'autoscaling:EC2_INSTANCE_TERMINATING', { Ref: 'GroupName' }],
    ]);
    expect(
      Object.values(raw).filter((r) => (r as { Type?: string }).Type === 'AWS::AutoScaling::LifecycleHook'),
    ).toEqual([]);
    const hooks = ofType(resources, 'AWS::AutoScaling::LifecycleHook').map(
      ([, r]) => `${String(r.Properties['AutoScalingGroupName'])} ${String(r.Properties['LifecycleHookName'])}`,
    );
    expect(hooks.sort()).toEqual([
      'prod-workers-a graceful-node-termination-launch',
      'prod-workers-a graceful-node-termination-terminate',
      'prod_workers.b graceful-node-termination-launch',
      'prod_workers.b graceful-node-termination-terminate',
    ]);
  });

  it('lets the drainer complete, heartbeat and untag the listed groups in its own region only, and no other group', () => {
    const lifecycle = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap(statementsOf)
      .filter((s) =>
        [
          'autoscaling:CompleteLifecycleAction',
          'autoscaling:RecordLifecycleActionHeartbeat',
          'autoscaling:DeleteTags',
        ].some((a) => grants(s, a)),
      );
    expect(lifecycle).toHaveLength(2);
    for (const s of lifecycle) {
      const allows = (arn: string, region: string) =>
        [s.Resource].flat().some((pattern) => like(String(pattern), arn)) &&
        s.Condition?.['StringEquals']?.['aws:RequestedRegion'] === region;
      for (const name of groups) expect(allows(groupArn(name), pseudo['AWS::Region'])).toBe(true);
      expect(allows(groupArn('prod-workers-a'), 'us-east-1')).toBe(false);
      expect(allows(groupArn('prod-workers-c'), pseudo['AWS::Region'])).toBe(false);
      expect(allows(groupArn('prod-workers-a-2'), pseudo['AWS::Region'])).toBe(false);
    }
  });

  it('lets Auto Scaling assume the hook role only for the listed groups of this account and region', () => {
    const [, role] = ofType(resources, 'AWS::IAM::Role').find(([, r]) =>
      JSON.stringify(r.Properties['AssumeRolePolicyDocument']).includes('autoscaling.amazonaws.com'),
    )!;
    const [trust] = (role.Properties['AssumeRolePolicyDocument'] as { Statement: Statement[] }).Statement;
    const condition = trust!.Condition!;
    const trusts = (arn: string, account: string = pseudo['AWS::AccountId']) =>
      condition['StringEquals']!['aws:SourceAccount'] === account &&
      [condition['ArnLike']!['aws:SourceArn']].flat().some((p) => like(String(p), arn)) &&
      [condition['StringLike']!['aws:SourceArn']].flat().every((p) => like(String(p), arn));
    for (const name of groups) expect(trusts(groupArn(name))).toBe(true);
    expect(trusts(groupArn('prod-workers-a', 'us-east-1'))).toBe(false);
    expect(trusts(groupArn('prod-workers-a', undefined, '999999999999'), '999999999999')).toBe(false);
    expect(trusts(groupArn('other'))).toBe(false);
  });

  it('gives the handler the listed groups and the refresh rule the same list', () => {
    const [, drainer] = ofType(resources, 'AWS::Lambda::Function').find(
      ([, r]) => r.Properties['Handler'] === 'index.handler',
    )!;
    expect(
      (drainer.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables[
        'AUTO_SCALING_GROUP_NAMES'
      ],
    ).toBe(groups.join(','));
    const [, rule] = ofType(resources, 'AWS::Events::Rule').find(([, r]) =>
      JSON.stringify(r.Properties['EventPattern']).includes('Instance Refresh'),
    )!;
    expect((rule.Properties['EventPattern'] as { detail: unknown }).detail).toEqual({ AutoScalingGroupName: groups });
  });

  it('references no CDK asset or bootstrap resource: both functions run the zip from the code parameters', () => {
    const text = JSON.stringify(release.template);
    for (const leftover of ['cdk-hnb659fds', '-assets-', 'aws:asset', 'aws:cdk', 'BootstrapVersion'])
      expect(text.includes(leftover), leftover).toBe(false);
    expect(text.match(/[0-9a-f]{64}\.zip/), 'an asset hash').toBeNull();
    const functions = ofType(resources, 'AWS::Lambda::Function');
    expect(functions).toHaveLength(2);
    for (const [, fn] of functions)
      expect(fn.Properties['Code']).toEqual({ S3Bucket: 'my-artifacts', S3Key: release.codeKey });
  });

  it.each(['force', 'retain'])(
    'under %s, makes every hook wait for everything the drainer needs to act on its notification',
    (policy) => {
      const expanded = expandRelease(release.template, values({ DeadlinePolicy: policy }));
      const hooks = ofType(expanded, 'AWS::AutoScaling::LifecycleHook');
      expect(hooks).toHaveLength(4);
      for (const [hookId, hook] of hooks) {
        for (const [what, ids] of Object.entries(drainerPrerequisites(expanded, hook))) {
          expect(ids.length, `${what}: no such resource`).toBeGreaterThan(0);
          for (const id of ids)
            expect(waitsFor(hook).has(id), `${hookId} does not wait until ${what} (${id})`).toBe(true);
        }
      }
    },
  );

  it('grants no autoscaling or eks action on "*" but the reads IAM cannot scope', () => {
    const onEverything = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap(statementsOf)
      .filter(
        (s) =>
          [s.Resource].flat().includes('*') &&
          [s.Action].flat().some((a) => a.startsWith('autoscaling:') || a.startsWith('eks:')),
      );
    // Each feature's reads, exactly as unscoped-reads.ts names and lists them.
    for (const s of onEverything)
      expect([s.Action].flat()).toEqual(unscopedReads.find((r) => r.sid === s.Sid)?.actions);
  });

  it('follows the deadline policy: ABANDON and the retained-instances alarm only under retain', () => {
    for (const [policy, result, retainedAlarms] of [
      ['force', 'CONTINUE', 0],
      ['leave', 'CONTINUE', 0],
      ['retain', 'ABANDON', 1],
    ] as const) {
      const expanded = expandRelease(release.template, values({ DeadlinePolicy: policy }));
      const terminate = ofType(expanded, 'AWS::AutoScaling::LifecycleHook').filter(
        ([, r]) => r.Properties['LifecycleTransition'] === 'autoscaling:EC2_INSTANCE_TERMINATING',
      );
      expect(terminate.map(([, r]) => r.Properties['DefaultResult'])).toEqual([result, result]);
      const alarms = ofType(expanded, 'AWS::CloudWatch::Alarm').map(([, r]) => String(r.Properties['AlarmName']));
      expect(alarms.filter((n) => n.endsWith('-InstancesRetained'))).toHaveLength(retainedAlarms);
      const [, drainer] = ofType(expanded, 'AWS::Lambda::Function').find(
        ([, r]) => r.Properties['Handler'] === 'index.handler',
      )!;
      expect(
        (drainer.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables['DEADLINE_POLICY'],
      ).toBe(policy);
    }
  });

  it('sends the alarms to the alarm topic when one is given, and nowhere otherwise', () => {
    const topic = 'arn:aws:sns:eu-west-1:123456789012:oncall';
    const actions = (r: Resources) => ofType(r, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties['AlarmActions']);
    expect(
      actions(expandRelease(release.template, values({ AlarmTopicArn: topic }))).every(
        (a) => JSON.stringify(a) === JSON.stringify([topic]),
      ),
    ).toBe(true);
    expect(actions(resources).every((a) => a === undefined)).toBe(true);
  });

  it('repairs only with Repair set: REPAIR as given, SetInstanceHealth on the groups, the RepairsHeld alarm', () => {
    const knobs = '{"maxParallelNodesRepairedCount":2}';
    const on = expandRelease(release.template, values({ Repair: knobs }));
    const [, drainer] = ofType(on, 'AWS::Lambda::Function').find(
      ([, r]) => r.Properties['Handler'] === 'index.handler',
    )!;
    expect((drainer.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables['REPAIR']).toBe(
      knobs,
    );
    expect(JSON.stringify(on)).toContain('autoscaling:SetInstanceHealth');
    expect(JSON.stringify(on)).not.toContain('ec2:RebootInstances');
    expect(ofType(on, 'AWS::CloudWatch::Alarm').map(([, a]) => String(a.Properties['AlarmName']))).toEqual(
      expect.arrayContaining([expect.stringMatching(/-RepairsHeld$/)]),
    );
    expect(JSON.stringify(resources)).not.toContain('SetInstanceHealth');
    expect(JSON.stringify(resources)).not.toContain('"REPAIR"');
  });

  // Every documented route uploads the template to S3 (TemplateURL): its quotas, not TemplateBody's
  // 51,200 bytes, are the limits. https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html
  it("fits CloudFormation's quotas for a template in S3: 1 MB, 200 parameters, 200 outputs, 500 resources", () => {
    expect(Buffer.byteLength(`${JSON.stringify(release.template)}\n`)).toBeLessThan(1_000_000);
    expect(Object.keys(release.template['Parameters'] as object).length).toBeLessThanOrEqual(200);
    expect(Object.keys(release.template['Outputs'] as object).length).toBeLessThanOrEqual(200);
    // The resource quota counts the template as processed: a hundred groups (two hooks each), every option on.
    const hundred = Array.from({ length: 100 }, (_, i) => `workers-${i}`);
    const everything = values({
      ...vpcValues,
      AutoScalingGroupNames: hundred,
      AlarmEmail: 'oncall@example.com',
      SpotInterruptions: 'true',
      Repair: 'on',
      Dashboard: 'true',
      DeadlinePolicy: 'retain',
      RetentionSetOutside: 'true',
    });
    expect(Object.keys(expandRelease(release.template, everything)).length).toBeLessThanOrEqual(500);
  });

  it('groups and labels every parameter for the console, each in one group', () => {
    const ui = (release.template['Metadata'] as Record<string, unknown>)['AWS::CloudFormation::Interface'] as {
      ParameterGroups: { Label: { default: string }; Parameters: string[] }[];
      ParameterLabels: Record<string, { default: string }>;
    };
    const parameters = Object.keys(release.template['Parameters'] as object);
    const grouped = ui.ParameterGroups.flatMap((g) => g.Parameters);
    expect([...grouped].sort()).toEqual([...parameters].sort());
    expect(new Set(grouped).size).toBe(grouped.length);
    expect(Object.keys(ui.ParameterLabels).sort()).toEqual([...parameters].sort());
    for (const [name, label] of Object.entries(ui.ParameterLabels))
      expect(label.default.length, name).toBeGreaterThan(3);
    for (const g of ui.ParameterGroups) expect(g.Parameters.length, g.Label.default).toBeGreaterThan(0);
    expect(ui.ParameterGroups[0]!.Parameters.slice(0, 2)).toEqual(['ClusterName', 'AutoScalingGroupNames']);
  });

  // Each parameter combination must expand to what the construct itself synthesizes with those
  // props: the merge of one-setting variants is only sound while the settings do not interact.
  it.each(combinations)('expands for $name exactly as the construct synthesizes it', ({ values: extra, props }) => {
    const direct = {
      ...release.template,
      Resources: variantFor((stack, s) => ({
        deadlinePolicy: DeadlinePolicy.FORCE,
        repair: undefined,
        ...props(stack, s),
      }))['Resources']!,
    };
    expect(comparable(expandRelease(release.template, values(extra)))).toEqual(
      comparable(expandRelease(direct, values(extra))),
    );
  });

  for (const variant of releaseVariants)
    describeFirstDeploy(variant, () => expandRelease(release.template, values(variant.values)));
});

describe('the release parameters', () => {
  const propsSource = readFileSync(join(root, 'infra', 'props.ts'), 'utf8');
  // The construct's own properties and those it extends, each in its own file.
  const extended = (file: string, name: string) => {
    const source = readFileSync(join(root, 'infra', file), 'utf8');
    return source.slice(source.indexOf(`export interface ${name}`)).matchAll(/^ {2}readonly (\w+)\??:/gm);
  };
  const props = [
    ...propsSource
      .slice(0, propsSource.indexOf('export interface AddAutoScalingGroupOptions'))
      .matchAll(/^ {2}readonly (\w+)\??:/gm),
    ...extended('settle-props.ts', 'SettleProps'),
    ...extended('drain-rule-props.ts', 'DrainRuleProps'),
    ...extended('surge-props.ts', 'SurgeProps'),
    ...extended('observability-props.ts', 'ObservabilityProps'),
  ].map((m) => m[1]!);
  const parameters = Object.keys(releaseParameters('key.zip'));

  it('stand for every construct property, or a documented reason says why one has none', () => {
    expect(props.length).toBeGreaterThan(30);
    expect(Object.keys(propertyCoverage).sort()).toEqual([...props].sort());
    for (const [prop, coverage] of Object.entries(propertyCoverage)) {
      if ('reason' in coverage) expect(coverage.reason.length, prop).toBeGreaterThan(20);
      else for (const parameter of coverage.parameters) expect(parameters, prop).toContain(parameter);
    }
  });

  it('are listed in docs/cloudformation.md as npm run docs generates them', () => {
    expect(readFileSync(join(root, 'docs', 'cloudformation.md'), 'utf8')).toBe(
      withParameterTables(readFileSync(join(root, 'docs', 'cloudformation.md'), 'utf8')),
    );
  });
});
