// Template checks for the CDK construct and app: hooks, topic, least-privilege IAM, the
// function's environment (read back by the handler's own parser), cdk-nag, validation.
import {
  App,
  CfnParameter,
  Duration,
  RemovalPolicy,
  Stack,
  aws_autoscaling as autoscaling,
  aws_ec2 as ec2,
  aws_iam as iam,
} from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DeadlinePolicy,
  GracefulNodeTermination,
  type GracefulNodeTerminationProps,
} from '../../infra/graceful-node-termination.js';
import { DeadlinePolicy as HandlerDeadlinePolicy, parseConfig } from '../../lambda/shared/config.js';
import { renderRbacYaml } from '../../lambda/installer/rbac-yaml.js';
import { unscopedReads } from '../../infra/unscoped-reads.js';
import {
  appsWithNag,
  exampleContext,
  exampleStack,
  fixtureOnly,
  resourcesOf,
  root,
  stackWith,
  statements,
  synthWithNag,
  type Resources,
} from './fixtures.js';

/** What reading the load balancers needs (waitForTargets): five Describe actions, nothing that registers. */
const loadBalancerReads = [
  'elasticloadbalancing:DescribeTargetGroups',
  'elasticloadbalancing:DescribeTargetHealth',
  'elasticloadbalancing:DescribeLoadBalancers',
  'elasticloadbalancing:DescribeInstanceHealth',
  'elasticloadbalancing:DescribeTags',
];

// Under load (two cores, the release suite beside it) even a short check can wait for the CPU.
describe('the example stack (npm run synth)', { timeout: 120_000 }, () => {
  let template: Template;
  let resources: Resources;
  let app: App;

  // The first synthesis in a worker bundles the Lambda (esbuild): give it room under load.
  beforeAll(() => {
    const built = exampleStack();
    app = built.app;
    template = Template.fromStack(built.stack);
    resources = template.toJSON()['Resources'] as Resources;
  }, 60_000);

  it('puts a launch and a terminate hook on each group: 1800 s, CONTINUE, metadata naming the cluster', () => {
    template.resourceCountIs('AWS::AutoScaling::LifecycleHook', 4);
    for (const group of exampleContext['autoScalingGroupNames']!.split(',')) {
      for (const transition of ['autoscaling:EC2_INSTANCE_LAUNCHING', 'autoscaling:EC2_INSTANCE_TERMINATING']) {
        template.hasResourceProperties('AWS::AutoScaling::LifecycleHook', {
          AutoScalingGroupName: group,
          LifecycleTransition: transition,
          HeartbeatTimeout: 1800,
          DefaultResult: 'CONTINUE',
          NotificationMetadata: JSON.stringify({ clusterName: exampleContext['clusterName'] }),
          NotificationTargetARN: { Ref: Match.stringLikeRegexp('Topic') },
          RoleARN: { 'Fn::GetAtt': [Match.stringLikeRegexp('HookRole'), 'Arn'] },
        });
      }
    }
  });

  it('has one topic, encrypted with a rotating customer managed key, TLS only, published only by the hook role', () => {
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::Topic', {
      KmsMasterKeyId: { 'Fn::GetAtt': [Match.stringLikeRegexp('Key'), 'Arn'] },
    });
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    const policy = Object.values(resources).find((r) => r.Type === 'AWS::SNS::TopicPolicy')!;
    const denies = (policy.Properties['PolicyDocument'] as { Statement: Record<string, unknown>[] }).Statement.filter(
      (s) => s['Effect'] === 'Deny',
    );
    expect(denies).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        expect.objectContaining({
          Action: 'sns:Publish',
          Condition: {
            ArnNotEquals: {
              'aws:PrincipalArn': [
                { 'Fn::GetAtt': [expect.stringMatching(/HookRole/), 'Arn'] },
                { 'Fn::GetAtt': [expect.stringMatching(/GracefulNodeTerminationRole/), 'Arn'] },
              ],
            },
          },
        }),
      ]),
    );
  });

  it('grants on "*" only the reads IAM cannot scope, in this region, each feature\'s in a statement named after it', () => {
    const onEverything = statements(resources).filter((s) => [s.Resource].flat().includes('*'));
    expect(onEverything.map((s) => [s.Sid, s.Action, s.Effect])).toEqual([
      ['ReadsWithoutResourceScope', ['ec2:DescribeInstances', 'autoscaling:DescribeAutoScalingInstances'], 'Allow'],
      ['SiblingReadsWithoutResourceScope', 'autoscaling:DescribeAutoScalingGroups', 'Allow'],
      [
        'RefreshReadsWithoutResourceScope',
        [
          'ec2:DescribeLaunchTemplates',
          'autoscaling:DescribeAutoScalingGroups',
          'autoscaling:DescribeInstanceRefreshes',
        ],
        'Allow',
      ],
      [
        'ReconcilerReadsWithoutResourceScope',
        ['autoscaling:DescribeAutoScalingGroups', 'autoscaling:DescribeInstanceRefreshes'],
        'Allow',
      ],
      ['LoadBalancerReadsWithoutResourceScope', loadBalancerReads, 'Allow'],
    ]);
    for (const s of onEverything)
      expect(s.Condition).toEqual({ StringEquals: { 'aws:RequestedRegion': expect.anything() } });
    // What is granted on "*" altogether, for some settings.
    const unscoped = (props: Partial<GracefulNodeTerminationProps>) =>
      [
        ...new Set(
          statements(
            Template.fromStack(stackWith({ waitForTargets: false, ...props }).stack).toJSON()['Resources'] as Resources,
          )
            .filter((s) => [s.Resource].flat().includes('*'))
            .flatMap((s) => [s.Action].flat()),
        ),
      ].sort();
    // DescribeAutoScalingInstances always (launch give-back check, Spot, reconciler).
    expect(unscoped({ cordonDoomedSiblings: false, markOutdatedOnRefresh: false, reconcileMarks: false })).toEqual([
      'autoscaling:DescribeAutoScalingInstances',
      'ec2:DescribeInstances',
    ]);
    // The reconciler reads the groups' tags and their refreshes.
    expect(unscoped({ cordonDoomedSiblings: false, markOutdatedOnRefresh: false })).toEqual([
      'autoscaling:DescribeAutoScalingGroups',
      'autoscaling:DescribeAutoScalingInstances',
      'autoscaling:DescribeInstanceRefreshes',
      'ec2:DescribeInstances',
    ]);
    // Sibling cordoning reads only the group's instances.
    expect(unscoped({ markOutdatedOnRefresh: false, reconcileMarks: false })).toEqual([
      'autoscaling:DescribeAutoScalingGroups',
      'autoscaling:DescribeAutoScalingInstances',
      'ec2:DescribeInstances',
    ]);
    // Spot warnings are believed only once EC2's Spot request says it gave notice.
    expect(
      unscoped({
        cordonDoomedSiblings: false,
        markOutdatedOnRefresh: false,
        reconcileMarks: false,
        spotInterruptions: true,
      }),
    ).toEqual([
      'autoscaling:DescribeAutoScalingInstances',
      'ec2:DescribeInstances',
      'ec2:DescribeSpotInstanceRequests',
    ]);
    // Reading the load balancers: their five Describe actions, nothing that registers or deregisters.
    expect(
      unscoped({
        cordonDoomedSiblings: false,
        markOutdatedOnRefresh: false,
        reconcileMarks: false,
        waitForTargets: true,
      }),
    ).toEqual(['autoscaling:DescribeAutoScalingInstances', 'ec2:DescribeInstances', ...loadBalancerReads].sort());
    const { stack } = stackWith({
      cordonDoomedSiblings: false,
      markOutdatedOnRefresh: false,
      reconcileMarks: false,
      outOfServiceAfterRelease: false,
    });
    Template.fromStack(stack).resourceCountIs('AWS::Events::Rule', 0);
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ CORDON_DOOMED_SIBLINGS: 'false' }) },
    });
  });

  it('tells the function whether to drain on Spot warnings: a deployment without spotInterruptions refuses them', () => {
    const spotOf = (o: Parameters<typeof stackWith>[0]) =>
      Template.fromStack(stackWith(o).stack).findResources('AWS::Lambda::Function', {
        Properties: { Handler: 'index.handler' },
      });
    const value = (o: Parameters<typeof stackWith>[0]) =>
      Object.values(spotOf(o)).map(
        (f) =>
          (f as { Properties: { Environment: { Variables: Record<string, string> } } }).Properties.Environment
            .Variables['SPOT_INTERRUPTIONS'],
      );
    expect(value({})).toEqual(['false']);
    expect(value({ spotInterruptions: true })).toEqual(['true']);
  });

  it('never grants autoscaling or eks writes on "*"', () => {
    const scoped = statements(resources).filter(
      (s) =>
        [s.Action].flat().some((a) => a.startsWith('autoscaling:') || a.startsWith('eks:')) &&
        !([s.Resource].flat().includes('*') && unscopedReads.some((r) => r.sid === s.Sid)),
    );
    expect(scoped.length).toBeGreaterThanOrEqual(3);
    for (const s of scoped) expect([s.Resource].flat()).not.toContain('*');
    const lifecycle = scoped.find((s) => [s.Action].flat().includes('autoscaling:CompleteLifecycleAction'))!;
    expect(JSON.stringify(lifecycle.Resource)).toContain(':autoScalingGroup:*:autoScalingGroupName/example-nodes-a');
    expect([lifecycle.Resource].flat()).toHaveLength(2);
  });

  it("gives the function an environment the handler's parser accepts, naming the groups and hooks", () => {
    const fn = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties['Handler'] === 'index.handler',
    )!;
    expect(fn.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Timeout: 900,
      MemorySize: 256,
    });
    const env = (fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables;
    // The topic ARN is a reference until deployment; give the parser the shape it will have.
    const config = parseConfig({
      ...env,
      HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:GracefulNodeTermination-Topic',
    });
    expect(config.clusterName).toBe('example-cluster');
    expect(config.heartbeatTimeoutSeconds).toBe(1800);
    expect(env['HAND_OFF_TOPIC_ARN']).toEqual({ Ref: expect.stringMatching(/Topic/) });
    expect(config.handOffTopicArn).toBeDefined();
    expect([...config.autoScalingGroupNames]).toEqual(['example-nodes-a', 'example-nodes-b']);
    const hookNames = Object.values(resources)
      .filter((r) => r.Type === 'AWS::AutoScaling::LifecycleHook')
      .map((r) => r.Properties['LifecycleHookName']);
    expect(new Set(hookNames)).toEqual(config.lifecycleHookNames);
  });

  it('keeps failed notifications in an encrypted queue and alarms on errors, that queue and timed-out drains', () => {
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      MaximumRetryAttempts: 2,
      // Not above the hooks' heartbeat timeout (1800 s): later, the action is over anyway.
      MaximumEventAgeInSeconds: 1800,
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [Match.stringLikeRegexp('FailedNotifications'), 'Arn'] } },
      },
    });
    template.hasResourceProperties('AWS::SQS::Queue', { KmsMasterKeyId: Match.anyValue() });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 5);
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      MetricTransformations: [Match.objectLike({ MetricName: 'DrainsTimedOut' })],
    });
  });

  it('maps the function role to the Kubernetes group and installs the RBAC with a separate role', () => {
    template.hasResourceProperties('AWS::EKS::AccessEntry', {
      ClusterName: 'example-cluster',
      Type: 'STANDARD',
      // The deployment's own group, derived from the stack name and the construct's path.
      KubernetesGroups: [Match.stringLikeRegexp('^graceful-node-termination-[0-9a-f]{8}$')],
      PrincipalArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('GracefulNodeTerminationRole'), 'Arn'] },
    });
    // No entry holds an access policy: the installer associates cluster admin only while it acts.
    template.hasResourceProperties('AWS::EKS::AccessEntry', {
      PrincipalArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('RbacInstallerRole'), 'Arn'] },
      Type: 'STANDARD',
    });
    const entries = Object.values(resources).filter((r) => r.Type === 'AWS::EKS::AccessEntry');
    expect(entries).toHaveLength(2);
    for (const entry of entries) expect(entry.Properties['AccessPolicies']).toBeUndefined();
    template.hasResourceProperties('Custom::KubernetesRbac', {
      ClusterName: 'example-cluster',
      KubernetesGroup: Match.stringLikeRegexp('^graceful-node-termination-[0-9a-f]{8}$'),
    });
  });

  it('keeps the logical IDs of the version before the construct was split into parts (they are a public contract)', () => {
    // Every resource of the previous version, by the ID CloudFormation knows it by: a changed
    // ID replaces the resource (an access entry or a named alarm would collide with itself).
    const before = [
      'GracefulNodeTerminationAccessEntryBDDB5525',
      'GracefulNodeTerminationDrainsTimedOut8657D309',
      'GracefulNodeTerminationDrainsTimedOutFilter3F6C0184',
      'GracefulNodeTerminationFailedNotifications55D038CA',
      'GracefulNodeTerminationFailedNotificationsPolicyE46ED1A6',
      'GracefulNodeTerminationFailedNotificationsVisibleB979EA84',
      'GracefulNodeTerminationFunction71BE3A97',
      'GracefulNodeTerminationFunctionAllowInvokeGracefulNodeTerminationTopicA185D351AB127A8D',
      'GracefulNodeTerminationFunctionErrors5DD4A675',
      'GracefulNodeTerminationFunctionEventInvokeConfig20F4DDBF',
      'GracefulNodeTerminationFunctionTopic6B9F4765',
      'GracefulNodeTerminationGroupexamplenodesaLaunchAEBDBFAF',
      'GracefulNodeTerminationGroupexamplenodesaTerminate277FEB09',
      'GracefulNodeTerminationGroupexamplenodesbLaunch1BB58DAA',
      'GracefulNodeTerminationGroupexamplenodesbTerminate31CDF0DA',
      'GracefulNodeTerminationHookRoleB7A1B7AE',
      'GracefulNodeTerminationHookRoleDefaultPolicyAA47EE92',
      'GracefulNodeTerminationInstanceRefreshes4FC16875',
      'GracefulNodeTerminationInstanceRefreshesAllowEventRuleGracefulNodeTerminationFunction5FD73B4C84A9E107',
      'GracefulNodeTerminationKey7F9E8436',
      'GracefulNodeTerminationLaunchesAbandoned5522E64E',
      'GracefulNodeTerminationLaunchesAbandonedFilterD0A44CCA',
      'GracefulNodeTerminationLaunchesUnchecked564F8821',
      'GracefulNodeTerminationLaunchesUncheckedFilter58724448',
      'GracefulNodeTerminationLifecyclePolicy6E0E6B1E',
      'GracefulNodeTerminationLogsDF992773',
      'GracefulNodeTerminationRbacBBB81D88',
      'GracefulNodeTerminationRbacInstaller2A107BA5',
      'GracefulNodeTerminationRbacInstallerAccessEntry2F798686',
      'GracefulNodeTerminationRbacInstallerLogsCBAE38F4',
      'GracefulNodeTerminationRbacInstallerRole3A3ECA8A',
      'GracefulNodeTerminationRbacInstallerRoleDefaultPolicy319943A9',
      'GracefulNodeTerminationRole7E689647',
      'GracefulNodeTerminationRoleDefaultPolicy4BE45246',
      'GracefulNodeTerminationTopic9B5D0B84',
      'GracefulNodeTerminationTopicPolicy9247FADC',
    ];
    const ids = Object.keys(resources);
    expect(ids).toEqual(expect.arrayContaining(before));
    // New since: the saved Logs Insights queries, the reconciler's schedule and its permission to invoke the function,
    // Auto Scaling's permission to call it as a termination policy, the instance-termination rule and its permission.
    expect(ids.filter((id) => !before.includes(id)).sort()).toEqual([
      expect.stringMatching(/^GracefulNodeTerminationFunctionAutoScalingTerminationPolicy[0-9A-F]{8}$/),
      expect.stringMatching(/^GracefulNodeTerminationInstanceTerminations[0-9A-F]{8}$/),
      expect.stringMatching(
        /^GracefulNodeTerminationInstanceTerminationsAllowEventRuleGracefulNodeTerminationFunction[0-9A-F]{16}$/,
      ),
      expect.stringMatching(/^GracefulNodeTerminationQueryslowestdrains[0-9A-F]{8}$/),
      expect.stringMatching(/^GracefulNodeTerminationQuerytimelineofoneinstance[0-9A-F]{8}$/),
      expect.stringMatching(/^GracefulNodeTerminationQuerywhatblocked[0-9A-F]{8}$/),
      expect.stringMatching(/^GracefulNodeTerminationReconcileSchedule[0-9A-F]{8}$/),
      expect.stringMatching(
        /^GracefulNodeTerminationReconcileScheduleAllowEventRuleGracefulNodeTerminationFunction[0-9A-F]{16}$/,
      ),
    ]);
  });

  it('has zero unacknowledged cdk-nag AwsSolutions findings', () => {
    appsWithNag.add(app); // buildApp registered the pack
    expect(() => app.synth({ force: true })).not.toThrow();
  });

  it('would fail the synth on an unacknowledged finding (the check is live)', () => {
    const built = exampleStack();
    new iam.Policy(built.stack, 'TooBroad', {
      statements: [new iam.PolicyStatement({ actions: ['autoscaling:*'], resources: ['*'] })],
    }).attachToRole(
      new iam.Role(built.stack, 'SomeRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') }),
    );
    appsWithNag.add(built.app);
    expect(() => built.app.synth({ force: true })).toThrow(/AwsSolutions-IAM5/);
  });
});

describe('the construct', () => {
  it("keeps a token-named group's hooks where a version before 0.2 put them when given their id, and names them by hash otherwise", () => {
    const withGroup = (id?: string) => {
      const { stack, construct } = stackWith({ autoScalingGroupNames: [] });
      construct.addAutoScalingGroupName(
        new CfnParameter(stack, 'GroupName').valueAsString,
        id === undefined ? {} : { id },
      );
      return Object.keys(resourcesOf(stack)).filter((k) => /^GntGroup.*(Launch|Terminate)/.test(k));
    };
    // 84f950b numbered token-named groups from 1: GntGroup1Launch..., GntGroup1Terminate...
    expect(withGroup('Group1')).toEqual([
      expect.stringMatching(/^GntGroup1Launch[0-9A-F]{8}$/),
      expect.stringMatching(/^GntGroup1Terminate[0-9A-F]{8}$/),
    ]);
    // By hash of what the token stands for: the same whatever the order groups are added in.
    expect(withGroup()).toEqual([
      expect.stringMatching(/^GntGroup[0-9a-f]{8}Launch[0-9A-F]{8}$/),
      expect.stringMatching(/^GntGroup[0-9a-f]{8}Terminate[0-9A-F]{8}$/),
    ]);
    expect(withGroup()).toEqual(withGroup());
  });

  it('attaches to groups defined in the same app and to groups added later', () => {
    const { app, stack, construct } = stackWith({
      autoScalingGroupNames: [],
      setup: (s) => {
        const vpc = new ec2.Vpc(s, 'Vpc', {
          maxAzs: 2,
          natGateways: 0,
          subnetConfiguration: [{ name: 'p', subnetType: ec2.SubnetType.PUBLIC }],
        });
        const group = new autoscaling.AutoScalingGroup(s, 'Nodes', {
          vpc,
          instanceType: new ec2.InstanceType('m7g.large'),
          machineImage: ec2.MachineImage.latestAmazonLinux2023({ cpuType: ec2.AmazonLinuxCpuType.ARM_64 }),
        });
        fixtureOnly(vpc, 'VPC7');
        fixtureOnly(group, 'AS3', 'EC26');
        return { autoScalingGroups: [group] };
      },
    });
    construct.addAutoScalingGroupName('legacy-nodes');
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::AutoScaling::LifecycleHook', 4);
    template.hasResourceProperties('AWS::AutoScaling::LifecycleHook', {
      AutoScalingGroupName: { Ref: Match.stringLikeRegexp('NodesASG') },
      DefaultResult: 'CONTINUE',
    });
    template.hasResourceProperties('AWS::AutoScaling::LifecycleHook', { AutoScalingGroupName: 'legacy-nodes' });
    // The hooks' role and the function's environment follow the added group.
    const fn = Object.values(template.toJSON()['Resources'] as Resources).find(
      (r) => r.Properties['Handler'] === 'index.handler',
    )!;
    expect(JSON.stringify(fn.Properties['Environment'])).toContain('legacy-nodes');
    expect(() => synthWithNag(app)).not.toThrow();
  });

  it('places both functions in a VPC when asked, with a clean cdk-nag report', () => {
    const { app, stack } = stackWith({
      setup: (s) => {
        const vpc = new ec2.Vpc(s, 'Vpc', { maxAzs: 2, natGateways: 1 });
        fixtureOnly(vpc, 'VPC7');
        return { vpc };
      },
    });
    const functions = Object.values(Template.fromStack(stack).toJSON()['Resources'] as Resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function',
    );
    expect(functions).toHaveLength(2);
    for (const fn of functions) expect(fn.Properties['VpcConfig']).toBeDefined();
    expect(() => synthWithNag(app)).not.toThrow();
  });

  it('leaves Kubernetes access out when manageKubernetesAccess is false (aws-auth clusters)', () => {
    const { stack } = stackWith({ manageKubernetesAccess: false });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::EKS::AccessEntry', 0);
    template.resourceCountIs('Custom::KubernetesRbac', 0);
    template.resourceCountIs('AWS::Lambda::Function', 1);
  });

  it('honours a custom heartbeat timeout, drain timeout and load-balancer delay', () => {
    const { stack } = stackWith({
      heartbeatTimeout: Duration.hours(1),
      drainTimeout: Duration.minutes(10),
      loadBalancerDelay: Duration.seconds(0),
    });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::AutoScaling::LifecycleHook', { HeartbeatTimeout: 3600 });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          DRAIN_TIMEOUT_SECONDS: '600',
          LOAD_BALANCER_DELAY_SECONDS: '0',
          HEARTBEAT_TIMEOUT_SECONDS: '3600',
          BATCH_WAIT_SECONDS: '3600',
        }),
      },
    });
  });

  it('makes every lifecycle hook wait for the subscription, the access entry and the RBAC (no termination reaches a drainer that cannot act)', () => {
    const resources = Template.fromStack(stackWith({}).stack).toJSON()['Resources'] as Record<
      string,
      { Type: string; DependsOn?: string[]; Properties: Record<string, unknown> }
    >;
    const hooks = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::AutoScaling::LifecycleHook');
    expect(hooks).toHaveLength(2);
    const idOf = (type: string, match: (id: string) => boolean = () => true) =>
      Object.entries(resources).find(([id, r]) => r.Type === type && match(id))![0];
    const subscription = idOf('AWS::SNS::Subscription');
    const drainerEntry = idOf('AWS::EKS::AccessEntry', (id) => !id.includes('Installer'));
    const rbac = idOf('Custom::KubernetesRbac');
    for (const [, hook] of hooks)
      expect(hook.DependsOn).toEqual(expect.arrayContaining([subscription, drainerEntry, rbac]));
  });

  it("binds the group before the drainer's entry switches to it, and installs only once the installer may act", () => {
    const resources = Template.fromStack(stackWith({}).stack).toJSON()['Resources'] as Record<
      string,
      { Type: string; DependsOn?: string[]; Properties: Record<string, unknown> }
    >;
    const idOf = (match: (id: string) => boolean) => Object.keys(resources).find(match)!;
    const drainerEntry = idOf((id) => id.startsWith('GntAccessEntry'));
    const installerEntry = idOf((id) => id.startsWith('GntRbacInstallerAccessEntry'));
    const installerRole = idOf((id) => /^GntRbacInstallerRole[0-9A-F]{8}$/.test(id));
    const installerPolicy = idOf((id) => id.startsWith('GntRbacInstallerRoleDefaultPolicy'));
    const rbac = idOf((id) => resources[id]!.Type === 'Custom::KubernetesRbac');
    expect(resources[drainerEntry]!.DependsOn).toContain(rbac);
    // The installer's entry and the policy that lets it associate cluster admin exist first.
    expect(resources[rbac]!.DependsOn).toEqual(
      expect.arrayContaining([installerEntry, installerRole, installerPolicy]),
    );
    expect(resources[rbac]!.DependsOn).not.toContain(drainerEntry);
  });

  it('gives the RBAC installer its cluster, group and policy in its environment, a service timeout, and pods delete only with force', () => {
    const template = Template.fromStack(stackWith({}).stack);
    const resources = template.toJSON()['Resources'] as Record<
      string,
      { Type: string; Properties: Record<string, unknown> }
    >;
    const installer = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties['Handler'] === 'rbac-installer.handler',
    )!;
    const name = (installer.Properties['Environment'] as { Variables: Record<string, string> }).Variables['RBAC_NAME']!;
    expect(name).toMatch(/^graceful-node-termination-[0-9a-f]{8}$/);
    expect(installer.Properties['Environment']).toEqual({
      Variables: {
        RBAC_NAME: name,
        CLUSTER_NAME: 'prod',
        KUBERNETES_GROUP: name,
        DEADLINE_POLICY: 'force',
        // Whose entry it associates cluster admin with, and the one stack it answers.
        INSTALLER_ROLE_ARN: { 'Fn::GetAtt': [expect.stringMatching(/^GntRbacInstallerRole/), 'Arn'] },
        STACK_ID: { Ref: 'AWS::StackId' },
      },
    });
    const rbac = Object.values(resources).find((r) => r.Type === 'Custom::KubernetesRbac')!;
    expect(rbac.Properties['ServiceTimeout']).toBe('360');
    const leave = Template.fromStack(stackWith({ deadlinePolicy: DeadlinePolicy.LEAVE }).stack);
    leave.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ DEADLINE_POLICY: 'leave' }) },
      Handler: 'rbac-installer.handler',
    });
    const digests = [template, leave].map(
      (t) => Object.values(t.findResources('Custom::KubernetesRbac'))[0]!.Properties['RbacDigest'],
    );
    expect(digests[0]).not.toEqual(digests[1]);
  });

  it('with deadlinePolicy retain: sets the retention policy on groups of this app, refuses groups by name unless told it is set, adds the InstancesRetained alarm', () => {
    const { stack } = stackWith({
      autoScalingGroupNames: [],
      deadlinePolicy: DeadlinePolicy.RETAIN,
      setup: (s) => {
        const vpc = new ec2.Vpc(s, 'Vpc', { maxAzs: 1, natGateways: 0 });
        const workers = new autoscaling.AutoScalingGroup(s, 'Workers', {
          vpc,
          instanceType: new ec2.InstanceType('m7g.large'),
          machineImage: ec2.MachineImage.latestAmazonLinux2023({ cpuType: ec2.AmazonLinuxCpuType.ARM_64 }),
        });
        return { autoScalingGroups: [workers] };
      },
    });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::AutoScaling::AutoScalingGroup', {
      InstanceLifecyclePolicy: { RetentionTriggers: { TerminateHookAbandon: 'retain' } },
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmDescription: Match.stringLikeRegexp('DEADLINE_POLICY=retain'),
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ DEADLINE_POLICY: 'retain' }) },
      Handler: 'index.handler',
    });
    expect(() => stackWith({ deadlinePolicy: DeadlinePolicy.RETAIN })).toThrow(
      /deadlinePolicy 'retain' needs group nodes-a to retain instances on ABANDON.*retentionSetOutside: true/,
    );
    expect(() => stackWith({ deadlinePolicy: DeadlinePolicy.RETAIN, retentionSetOutside: true })).not.toThrow();
  });

  it('lets two deployments for one cluster coexist: every Kubernetes name, hook name and metric dimension is their own', () => {
    const app = new App();
    const built = ['TeamA', 'TeamB'].map((id) => {
      const stack = new Stack(app, id);
      return {
        stack,
        construct: new GracefulNodeTermination(stack, 'Gnt', {
          clusterName: 'prod',
          autoScalingGroupNames: [`${id.toLowerCase()}-nodes`],
        }),
      };
    });
    const names = built.map(({ stack, construct }) => {
      const t = Template.fromStack(stack).toJSON()['Resources'] as Record<
        string,
        { Type: string; Properties: Record<string, unknown> }
      >;
      const of = (type: string) => Object.values(t).filter((r) => r.Type === type);
      return {
        deployment: construct.deploymentName,
        hooks: of('AWS::AutoScaling::LifecycleHook').map((r) => r.Properties['LifecycleHookName']),
        groups: of('AWS::EKS::AccessEntry').flatMap(
          (r) => (r.Properties['KubernetesGroups'] as string[] | undefined) ?? [],
        ),
        rbac: (
          of('AWS::Lambda::Function').find((r) => r.Properties['Handler'] === 'rbac-installer.handler')!.Properties[
            'Environment'
          ] as { Variables: Record<string, string> }
        ).Variables['RBAC_NAME'],
        alarmDimensions: of('AWS::CloudWatch::Alarm').flatMap((r) =>
          ((r.Properties['Dimensions'] as { Name: string; Value: string }[] | undefined) ?? [])
            .filter((d) => d.Name === 'service')
            .map((d) => d.Value),
        ),
      };
    });
    const [a, b] = names as [(typeof names)[0], (typeof names)[0]];
    expect(a.deployment).not.toBe(b.deployment);
    expect(a.hooks).toEqual([`${a.deployment}-launch`, `${a.deployment}-terminate`]);
    expect(b.hooks).toEqual([`${b.deployment}-launch`, `${b.deployment}-terminate`]);
    expect([a.groups, a.rbac, b.groups, b.rbac]).toEqual([[a.deployment], a.deployment, [b.deployment], b.deployment]);
    expect(new Set(a.alarmDimensions)).toEqual(new Set([a.deployment]));
    expect(new Set(b.alarmDimensions)).toEqual(new Set([b.deployment]));
    expect(() => stackWith({ deploymentName: 'Team_A' })).toThrow(/deploymentName "Team_A" is invalid/);
  });

  it('sets reserved concurrency and the eviction window when asked', () => {
    const { stack } = stackWith({ reservedConcurrency: 50, minEvictionWindow: Duration.minutes(2) });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::Lambda::Function', {
      ReservedConcurrentExecutions: 50,
      Environment: { Variables: Match.objectLike({ MIN_EVICTION_WINDOW_SECONDS: '120' }) },
    });
    expect(() => stackWith({ reservedConcurrency: 0 })).toThrow(/reservedConcurrency 0 is invalid/);
  });

  it('fits the default launch timeout in a short heartbeat timeout, and refuses an explicit one that does not fit', () => {
    // Five minutes leaves the reconciler no schedule to resume a lost hand-off in: without it.
    const { stack } = stackWith({ heartbeatTimeout: Duration.minutes(5), reconcileMarks: false });
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ LAUNCH_TIMEOUT_SECONDS: '280' }) },
    });
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      MaximumEventAgeInSeconds: 300,
    });
    expect(() =>
      stackWith({ heartbeatTimeout: Duration.minutes(5), launchTimeout: Duration.minutes(5), reconcileMarks: false }),
    ).toThrow(/launchTimeout 300 s does not fit in the hooks' heartbeatTimeout 300 s/);
  });

  it('routes the alarms to an encrypted email topic when alarmEmail is given, and warns at synth when nothing receives them', () => {
    const { stack } = stackWith({ alarmEmail: 'oncall@example.com' });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' });
    template.hasResourceProperties('AWS::SNS::Topic', {
      DisplayName: 'Graceful node termination alarms',
      KmsMasterKeyId: Match.anyValue(),
    });
    const alarms = template.findResources('AWS::CloudWatch::Alarm');
    expect(Object.values(alarms).every((a) => (a.Properties.AlarmActions as unknown[] | undefined)?.length === 1)).toBe(
      true,
    );
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('alarms notify no one'))).toEqual([]);
    const { stack: silent } = stackWith({});
    expect(
      Annotations.fromStack(silent).findWarning('*', Match.stringLikeRegexp('alarms notify no one: pass alarmEmail')),
    ).toHaveLength(1);
  });

  it('sends Spot interruption warnings and rebalance recommendations to the function when spotInterruptions is on, with the Spot request read they are confirmed by', () => {
    const { app, stack } = stackWith({ spotInterruptions: true });
    expect(() => synthWithNag(app)).not.toThrow();
    const onEverything = statements(Template.fromStack(stack).toJSON()['Resources'] as Resources).filter((s) =>
      [s.Resource].flat().includes('*'),
    );
    expect(onEverything.filter((s) => s.Sid === 'SpotReadsWithoutResourceScope')).toEqual([
      expect.objectContaining({ Action: 'ec2:DescribeSpotInstanceRequests', Effect: 'Allow' }),
    ]);
    Template.fromStack(stack).hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.ec2'],
        'detail-type': ['EC2 Spot Instance Interruption Warning', 'EC2 Instance Rebalance Recommendation'],
      },
      Targets: [Match.objectLike({ RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 120 } })],
    });
    // Without Spot, the rules are the instance refresh one, the instance terminations (out-of-service) and the reconciler's schedule.
    Template.fromStack(stackWith({}).stack).resourceCountIs('AWS::Events::Rule', 3);
    Template.fromStack(stackWith({}).stack).hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.ec2'],
        'detail-type': ['EC2 Instance State-change Notification'],
        detail: { state: ['terminated'] },
      },
    });
  });

  it("sends the served groups' instance refresh events to the function, and names the alarms upgrade puts in a refresh", () => {
    const { stack, construct } = stackWith({});
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.autoscaling'],
        'detail-type': Match.arrayWith([
          'EC2 Auto Scaling Instance Refresh Started',
          'EC2 Auto Scaling Instance Refresh Cancelled',
        ]),
        detail: { AutoScalingGroupName: ['nodes-a'] },
      },
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `${construct.deploymentName}-DrainsTimedOut`,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `${construct.deploymentName}-LaunchesAbandoned`,
    });
  });

  it('deletes the key, the log groups and the failed-notifications queue with the stack by default, and keeps them with RemovalPolicy.RETAIN', () => {
    const policies = (props: Partial<GracefulNodeTerminationProps>) =>
      Object.values(
        Template.fromStack(stackWith(props).stack).toJSON()['Resources'] as Record<
          string,
          { Type: string; DeletionPolicy?: string; UpdateReplacePolicy?: string }
        >,
      )
        .filter((r) => ['AWS::KMS::Key', 'AWS::Logs::LogGroup', 'AWS::SQS::Queue'].includes(r.Type))
        .map((r) => [r.Type, r.DeletionPolicy, r.UpdateReplacePolicy])
        .sort();
    expect(policies({})).toEqual([
      ['AWS::KMS::Key', 'Delete', 'Delete'],
      ['AWS::Logs::LogGroup', 'Delete', 'Delete'],
      ['AWS::Logs::LogGroup', 'Delete', 'Delete'],
      ['AWS::SQS::Queue', 'Delete', 'Delete'],
    ]);
    expect(policies({ removalPolicy: RemovalPolicy.RETAIN })).toEqual([
      ['AWS::KMS::Key', 'Retain', 'Retain'],
      ['AWS::Logs::LogGroup', 'Retain', 'Retain'],
      ['AWS::Logs::LogGroup', 'Retain', 'Retain'],
      ['AWS::SQS::Queue', 'Retain', 'Retain'],
    ]);
  });

  it("takes the deadline policy as the handler's own DeadlinePolicy enum, re-exported by the construct module", () => {
    expect(DeadlinePolicy).toBe(HandlerDeadlinePolicy);
    const { stack } = stackWith({ deadlinePolicy: DeadlinePolicy.LEAVE });
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Environment: { Variables: Match.objectLike({ DEADLINE_POLICY: 'leave' }) },
    });
  });

  it('fails when the cluster name is not an EKS cluster name', () => {
    expect(() => stackWith({ clusterName: 'prod cluster!' })).toThrow(
      /clusterName "prod cluster!" is not an EKS cluster name/,
    );
  });

  it("fails when the drain timeout exceeds the hook's global cap", () => {
    expect(() => stackWith({ heartbeatTimeout: Duration.minutes(1), drainTimeout: Duration.hours(2) })).toThrow(
      /drainTimeout 7200 s plus the load-balancer delay exceeds .* = 6000 s/,
    );
  });

  it('fails when the heartbeat timeout is beyond what Auto Scaling accepts', () => {
    expect(() => stackWith({ heartbeatTimeout: Duration.hours(3) })).toThrow(
      /heartbeatTimeout 10800 s is outside what Auto Scaling accepts/,
    );
  });

  it('fails when the drain timeout or load-balancer delay is out of range', () => {
    expect(() => stackWith({ drainTimeout: Duration.days(3) })).toThrow(
      /drainTimeout 259200 s is invalid: expected an integer from 0 to 172800/,
    );
    expect(() => stackWith({ loadBalancerDelay: Duration.hours(2) })).toThrow(/loadBalancerDelay 7200 s is invalid/);
  });

  it('fails when the launch timeout is longer than one invocation', () => {
    expect(() => stackWith({ launchTimeout: Duration.minutes(20) })).toThrow(
      /launchTimeout 1200 s is longer than one invocation allows/,
    );
  });

  it("fails when the batch wait does not fit the hook's global cap", () => {
    expect(() => stackWith({ heartbeatTimeout: Duration.minutes(10), batchWait: Duration.hours(17) })).toThrow(
      /batchWait 61200 s plus drainTimeout .* exceeds .*\(60000 s\)/,
    );
  });

  it('fails when the Kubernetes group is reserved', () => {
    expect(() => stackWith({ kubernetesGroup: 'system:masters' })).toThrow(
      /kubernetesGroup "system:masters" is invalid/,
    );
  });

  it('fails when a group is added twice or has a comma in its name', () => {
    expect(() => stackWith({ autoScalingGroupNames: ['a', 'a'] })).toThrow(/Auto Scaling group a was added twice/);
    expect(() => stackWith({ autoScalingGroupNames: ['a,b'] })).toThrow(/Auto Scaling group name "a,b" is invalid/);
  });

  it('fails when no Auto Scaling group is given', () => {
    const { app } = stackWith({ autoScalingGroupNames: [] });
    expect(() => app.synth()).toThrow(/has no Auto Scaling group/);
  });

  it('fails when subnets are given without a VPC', () => {
    expect(() => stackWith({ vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS } })).toThrow(
      /vpcSubnets and securityGroups need vpc/,
    );
  });
});

describe('infra/kubernetes/rbac.yaml', () => {
  it('is the rendering of lambda/rbac.ts (run `npx tsx scripts/write-rbac-yaml.ts` after changing it)', () => {
    expect(readFileSync(join(root, 'infra', 'kubernetes', 'rbac.yaml'), 'utf8')).toBe(renderRbacYaml());
  });
});
