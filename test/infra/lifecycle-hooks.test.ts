// The hooks: what they do when the drainer never answers, who may publish with their role,
// and construct IDs that do not depend on the order groups were added.
import { Fn, Stack, aws_autoscaling as autoscaling, aws_ec2 as ec2 } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { DeadlinePolicy } from '../../infra/graceful-node-termination.js';
import {
  fixtureOnly,
  grantsOf,
  resourceNamed,
  resourcesOf,
  stackWith,
  synthWithNag,
  type Resources,
} from './fixtures.js';

const launching = 'autoscaling:EC2_INSTANCE_LAUNCHING';
const terminating = 'autoscaling:EC2_INSTANCE_TERMINATING';

function defaultResults(resources: Resources): Record<string, unknown> {
  return Object.fromEntries(
    Object.values(resources)
      .filter((r) => r.Type === 'AWS::AutoScaling::LifecycleHook')
      .map((r) => [r.Properties['LifecycleTransition'], r.Properties['DefaultResult']]),
  );
}

function hookIds(resources: Resources): string[] {
  return Object.keys(resources)
    .filter((id) => resources[id]!.Type === 'AWS::AutoScaling::LifecycleHook')
    .sort();
}

// The first synthesis in a worker bundles the Lambda (esbuild): give it room under load.
describe('the lifecycle hooks', { timeout: 120_000 }, () => {
  it('default the terminate hook to ABANDON under DeadlinePolicy.RETAIN (a lost notification retains the instance), and to CONTINUE otherwise', () => {
    const retain = resourcesOf(stackWith({ deadlinePolicy: DeadlinePolicy.RETAIN, retentionSetOutside: true }).stack);
    expect(defaultResults(retain)).toEqual({ [launching]: 'CONTINUE', [terminating]: 'ABANDON' });
    for (const deadlinePolicy of [undefined, DeadlinePolicy.FORCE, DeadlinePolicy.LEAVE]) {
      expect(defaultResults(resourcesOf(stackWith({ deadlinePolicy }).stack))).toEqual({
        [launching]: 'CONTINUE',
        [terminating]: 'CONTINUE',
      });
    }
  });

  it('let Auto Scaling assume the hook role only in this account and for the served groups, those added later included (confused deputy)', () => {
    const { stack, construct } = stackWith({ autoScalingGroupNames: ['nodes-a', 'nodes-b'] });
    construct.addAutoScalingGroupName('nodes-c');
    const resources = resourcesOf(stack);
    const [, role] = resourceNamed(resources, /^GntHookRole[0-9A-F]{8}$/);
    const [trust] = (role.Properties['AssumeRolePolicyDocument'] as { Statement: Record<string, unknown>[] }).Statement;
    const lifecycle = grantsOf(resources, 'autoscaling:CompleteLifecycleAction');
    expect(lifecycle).toHaveLength(1);
    expect(trust).toEqual({
      Action: 'sts:AssumeRole',
      Effect: 'Allow',
      Principal: { Service: 'autoscaling.amazonaws.com' },
      Condition: {
        StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
        // The same ARN pattern as the drainer's lifecycle grant: the three groups, by exact name.
        ArnLike: { 'aws:SourceArn': lifecycle[0]!.Resource },
      },
    });
    expect(JSON.stringify(trust)).toContain(':autoScalingGroup:*:autoScalingGroupName/nodes-c');
    expect(lifecycle[0]!.Resource).toHaveLength(3);
  });

  it('give groups of this app, and group names given as tokens, hook IDs that do not depend on the order they were added', () => {
    const build = (order: readonly ('blue' | 'green' | 'imported')[]) =>
      stackWith({
        autoScalingGroupNames: [],
        setup: (s: Stack) => {
          const vpc = new ec2.Vpc(s, 'Vpc', {
            maxAzs: 1,
            natGateways: 0,
            subnetConfiguration: [{ name: 'p', subnetType: ec2.SubnetType.PUBLIC }],
          });
          fixtureOnly(vpc, 'VPC7');
          const group = (id: string) => {
            const asg = new autoscaling.AutoScalingGroup(s, id, {
              vpc,
              instanceType: new ec2.InstanceType('m7g.large'),
              machineImage: ec2.MachineImage.latestAmazonLinux2023({ cpuType: ec2.AmazonLinuxCpuType.ARM_64 }),
            });
            fixtureOnly(asg, 'AS3', 'EC26');
            return asg;
          };
          const groups = { blue: group('Blue'), green: group('Green'), imported: Fn.importValue('shared-nodes') };
          return {
            autoScalingGroups: order
              .filter((k) => k !== 'imported')
              .map((k) => groups[k] as autoscaling.IAutoScalingGroup),
            autoScalingGroupNames: order.includes('imported') ? [groups.imported] : [],
          };
        },
      });
    const built = build(['blue', 'green', 'imported']);
    const forward = hookIds(resourcesOf(built.stack));
    const backward = hookIds(resourcesOf(build(['imported', 'green', 'blue']).stack));
    // The grants on groups given by token are acknowledged by the names cdk-nag gives them.
    expect(() => synthWithNag(built.app)).not.toThrow();
    expect(forward).toHaveLength(6);
    expect(backward).toEqual(forward);
    for (const id of forward) expect(id).toMatch(/^GntGroup[0-9a-f]{8}(Launch|Terminate)[0-9A-F]{8}$/);
    // Names known at synthesis keep their readable IDs.
    expect(hookIds(resourcesOf(stackWith({}).stack))).toEqual([
      expect.stringMatching(/^GntGroupnodesaLaunch/),
      expect.stringMatching(/^GntGroupnodesaTerminate/),
    ]);
  });
});
