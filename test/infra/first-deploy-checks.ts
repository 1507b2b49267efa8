// What a first deploy needs that no validator we run checks, as one suite that runs on every
// synthesized variant (first-deploy.test.ts) and on the release template expanded for its
// variants (release.test.ts): functions in a VPC can create their network interfaces,
// CloudWatch can publish to the alarm topic we make, every hook waits for everything the drainer
// needs to act on its notification, nothing but the unscopable reads on "*".
import { beforeAll, describe, expect, it } from 'vitest';
import type { Resource, Resources } from './fixtures.js';
import { pseudo } from './release-expand.js';
import {
  drainerPrerequisites,
  grants,
  ofType,
  policiesGranting,
  statementsOf,
  target,
  waitsFor,
} from './template-checks.js';
import { unscopedReads } from '../../infra/unscoped-reads.js';

export interface FirstDeployVariant {
  readonly name: string;
  /** How many functions run in a VPC, and how many alarm topics the construct makes. */
  readonly vpcFunctions: number;
  readonly alarmTopics: number;
  /** The release template as CloudFormation expands it: pseudo parameters resolved. */
  readonly expanded?: boolean;
}

const vpcAccessPolicy = 'service-role/AWSLambdaVPCAccessExecutionRole';
const eniActions = [
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
];

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
  const notified = new Set(
    ofType(resources, 'AWS::CloudWatch::Alarm').flatMap(([, a]) =>
      ((a.Properties['AlarmActions'] as unknown[] | undefined) ?? []).map(target),
    ),
  );
  return ofType(resources, 'AWS::SNS::Topic')
    .map(([id]) => id)
    .filter((id) => notified.has(id));
}

const alarmArns = {
  'Fn::Join': [
    '',
    [
      'arn:',
      { Ref: 'AWS::Partition' },
      ':cloudwatch:',
      { Ref: 'AWS::Region' },
      ':',
      { Ref: 'AWS::AccountId' },
      ':alarm:*',
    ],
  ],
};
const expandedAlarmArns = `arn:${pseudo['AWS::Partition']}:cloudwatch:${pseudo['AWS::Region']}:${pseudo['AWS::AccountId']}:alarm:*`;

/** The checks, on the resources `load` gives (called in a beforeAll); `nagClean` as the last check when given. */
export function describeFirstDeploy(variant: FirstDeployVariant, load: () => Resources, nagClean?: () => void): void {
  // The first synthesis in a worker bundles the Lambda (esbuild): give it room under load.
  describe(`the first deploy of ${variant.name}`, { timeout: 120_000 }, () => {
    let resources: Resources;

    beforeAll(() => {
      resources = load();
    }, 60_000);

    it('gives every function in a VPC the network-interface rights Lambda checks at CreateFunction, in place before the function, and no other function', () => {
      const functions = ofType(resources, 'AWS::Lambda::Function');
      const inAVpc = functions.filter(([, fn]) => fn.Properties['VpcConfig'] !== undefined);
      expect(inAVpc).toHaveLength(variant.vpcFunctions);
      for (const [id, fn] of inAVpc)
        expect(hasEniRights(resources, id, fn), `${id} in a VPC without ENI rights`).toBe(true);
      for (const [id, fn] of functions.filter(([, f]) => f.Properties['VpcConfig'] === undefined)) {
        expect(hasEniRights(resources, id, fn), `${id} outside a VPC holds ENI rights`).toBe(false);
      }
    });

    it("lets CloudWatch publish to the alarm topic it makes, only for this account's alarms, and keeps the topic TLS-only", () => {
      const topics = alarmTopics(resources);
      expect(topics).toHaveLength(variant.alarmTopics);
      const account = variant.expanded ? pseudo['AWS::AccountId'] : { Ref: 'AWS::AccountId' };
      for (const topic of topics) {
        // A topic policy replaces SNS's default one, which is what lets CloudWatch publish.
        const policies = ofType(resources, 'AWS::SNS::TopicPolicy').filter(([, p]) =>
          (p.Properties['Topics'] as unknown[]).some((t) => target(t) === topic),
        );
        expect(policies).toHaveLength(1);
        const statements = statementsOf(policies[0]![1]);
        expect(statements.filter((s) => grants(s, 'sns:Publish'))).toEqual([
          {
            Sid: 'AllowCloudWatchAlarms',
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Resource: { Ref: topic },
            Condition: {
              StringEquals: { 'aws:SourceAccount': account },
              ArnLike: { 'aws:SourceArn': variant.expanded ? expandedAlarmArns : alarmArns },
            },
          },
        ]);
        expect(statements).toContainEqual(
          expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        );
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
        .filter(
          (s) =>
            [s.Resource].flat().includes('*') &&
            [s.Action].flat().some((a) => a.startsWith('autoscaling:') || a.startsWith('eks:')),
        );
      // Each feature's reads, exactly as unscoped-reads.ts names and lists them.
      for (const s of onEverything)
        expect([s.Action].flat()).toEqual(unscopedReads.find((r) => r.sid === s.Sid)?.actions);
    });

    if (nagClean) it('has zero unacknowledged cdk-nag AwsSolutions findings', () => expect(nagClean).not.toThrow());
  });
}
