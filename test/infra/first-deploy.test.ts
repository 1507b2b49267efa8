// What a first deploy needs that no validator we run checks, on the example stack and on every
// synthesized variant (vpc, alarms, Spot, retain, all at once): functions in a VPC can create
// their network interfaces, CloudWatch can publish to the alarm topic we make, every hook
// waits for everything the drainer needs to act on its notification, and cdk-nag is clean.
import { App, RemovalPolicy, Stack, aws_ec2 as ec2 } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { DeadlinePolicy, type GracefulNodeTerminationProps } from '../../infra/graceful-node-termination.js';
import { appsWithNag, exampleContext, exampleStack, fixtureOnly, stackWith, synthWithNag, type Resource, type Resources } from './fixtures.js';
import { drainerPrerequisites, grants, ofType, policiesGranting, statementsOf, target, waitsFor } from './template-checks.js';

const alarmEmail = 'oncall@example.com';

function inVpc(s: Stack): Partial<GracefulNodeTerminationProps> {
  const vpc = new ec2.Vpc(s, 'Vpc', { maxAzs: 2, natGateways: 1 });
  fixtureOnly(vpc, 'VPC7');
  return { vpc };
}

/** The app `cdk synth` builds, with context on top of cdk.json's (buildApp registers cdk-nag). */
function example(context: Record<string, string> = {}): { app: App; stack: Stack } {
  const built = exampleStack({ ...exampleContext, ...context });
  appsWithNag.add(built.app);
  return built;
}

interface Variant {
  readonly name: string;
  build(): { app: App; stack: Stack };
  /** How many functions run in a VPC, and how many alarm topics the construct makes. */
  readonly vpcFunctions: number;
  readonly alarmTopics: number;
}

const variants: readonly Variant[] = [
  { name: 'the example stack (cdk.json)', build: () => example(), vpcFunctions: 0, alarmTopics: 0 },
  { name: 'vpc', build: () => stackWith({ setup: inVpc }), vpcFunctions: 2, alarmTopics: 0 },
  { name: 'alarmEmail', build: () => example({ alarmEmail }), vpcFunctions: 0, alarmTopics: 1 },
  { name: 'spotInterruptions', build: () => example({ spotInterruptions: 'true' }), vpcFunctions: 0, alarmTopics: 0 },
  { name: 'removalPolicy retain', build: () => stackWith({ removalPolicy: RemovalPolicy.RETAIN }), vpcFunctions: 0, alarmTopics: 0 },
  {
    name: 'all of them, with deadlinePolicy retain',
    build: () =>
      stackWith({
        setup: inVpc,
        alarmEmail,
        spotInterruptions: true,
        removalPolicy: RemovalPolicy.RETAIN,
        deadlinePolicy: DeadlinePolicy.RETAIN,
        retentionSetOutside: true,
      }),
    vpcFunctions: 2,
    alarmTopics: 1,
  },
];

const vpcAccessPolicy = 'service-role/AWSLambdaVPCAccessExecutionRole';
const eniActions = ['ec2:CreateNetworkInterface', 'ec2:DescribeNetworkInterfaces', 'ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'];

/** Whether the function's role may manage its network interfaces before the function exists. */
function hasEniRights(resources: Resources, fnId: string, fn: Resource): boolean {
  const roleId = target(fn.Properties['Role'])!;
  const managed = JSON.stringify(resources[roleId]!.Properties['ManagedPolicyArns'] ?? []);
  // On the role itself: the function's GetAtt of the role orders it after the attachment.
  if (managed.includes(vpcAccessPolicy)) return true;
  const inline = policiesGranting(resources, roleId, eniActions);
  return inline.some((id) => waitsFor(resources[fnId]!).has(id));
}

/** The alarm topics the construct defines: topics of this template that some alarm notifies. */
function alarmTopics(resources: Resources): string[] {
  const notified = new Set(ofType(resources, 'AWS::CloudWatch::Alarm').flatMap(([, a]) => ((a.Properties['AlarmActions'] as unknown[] | undefined) ?? []).map(target)));
  return ofType(resources, 'AWS::SNS::Topic')
    .map(([id]) => id)
    .filter((id) => notified.has(id));
}

const alarmArns = {
  'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':cloudwatch:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':alarm:*']],
};

// The first synthesis in a worker bundles the Lambda (esbuild): give it room under load.
describe.each(variants)('the first deploy of $name', { timeout: 60_000 }, (variant) => {
  let app: App;
  let resources: Resources;

  beforeAll(() => {
    const built = variant.build();
    app = built.app;
    resources = Template.fromStack(built.stack).toJSON()['Resources'] as Resources;
  }, 60_000);

  it('gives every function in a VPC the network-interface rights Lambda checks at CreateFunction, in place before the function, and no other function', () => {
    const functions = ofType(resources, 'AWS::Lambda::Function');
    const inAVpc = functions.filter(([, fn]) => fn.Properties['VpcConfig'] !== undefined);
    expect(inAVpc).toHaveLength(variant.vpcFunctions);
    for (const [id, fn] of inAVpc) expect(hasEniRights(resources, id, fn), `${id} in a VPC without ENI rights`).toBe(true);
    for (const [id, fn] of functions.filter(([, f]) => f.Properties['VpcConfig'] === undefined)) {
      expect(hasEniRights(resources, id, fn), `${id} outside a VPC holds ENI rights`).toBe(false);
    }
  });

  it("lets CloudWatch publish to the alarm topic it makes, only for this account's alarms, and keeps the topic TLS-only", () => {
    const topics = alarmTopics(resources);
    expect(topics).toHaveLength(variant.alarmTopics);
    for (const topic of topics) {
      // A topic policy replaces SNS's default one, which is what lets CloudWatch publish.
      const policies = ofType(resources, 'AWS::SNS::TopicPolicy').filter(([, p]) => (p.Properties['Topics'] as unknown[]).some((t) => target(t) === topic));
      expect(policies).toHaveLength(1);
      const statements = statementsOf(policies[0]![1]);
      expect(statements.filter((s) => grants(s, 'sns:Publish'))).toEqual([
        {
          Sid: 'AllowCloudWatchAlarms',
          Effect: 'Allow',
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Action: 'sns:Publish',
          Resource: { Ref: topic },
          Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } }, ArnLike: { 'aws:SourceArn': alarmArns } },
        },
      ]);
      expect(statements).toContainEqual(expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }));
    }
  });

  it('makes every lifecycle hook wait for everything the drainer needs to act on its notification', () => {
    const hooks = ofType(resources, 'AWS::AutoScaling::LifecycleHook');
    expect(hooks.length).toBeGreaterThan(0);
    for (const [hookId, hook] of hooks) {
      const waits = waitsFor(hook);
      for (const [what, ids] of Object.entries(drainerPrerequisites(resources, hook))) {
        expect(ids.length, `${what}: no such resource`).toBeGreaterThan(0);
        for (const id of ids) expect(waits.has(id), `${hookId} does not wait until ${what} (${id})`).toBe(true);
      }
    }
  });

  it('grants no autoscaling or eks action on "*" but the reads IAM cannot scope', () => {
    const policies = [...ofType(resources, 'AWS::IAM::Policy'), ...ofType(resources, 'AWS::IAM::ManagedPolicy')];
    const onEverything = policies
      .flatMap(([, p]) => statementsOf(p))
      .filter((s) => [s.Resource].flat().includes('*') && [s.Action].flat().some((a) => a.startsWith('autoscaling:') || a.startsWith('eks:')));
    for (const s of onEverything) expect(s.Sid).toBe('ReadsWithoutResourceScope');
  });

  it('has zero unacknowledged cdk-nag AwsSolutions findings', () => {
    expect(() => synthWithNag(app)).not.toThrow();
  });
});
