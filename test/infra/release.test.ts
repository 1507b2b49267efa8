// The release template (npm run release): generated from the construct, every variant it is
// made of synthesized through cdk-nag (generateRelease throws on a finding, and on any value
// derived from a parameter that its rewrite missed). Here: its parameters, the Fn::ForEach,
// the IAM scoping to the listed groups, no CDK asset left, and the first-deploy checks on it
// as CloudFormation would expand it. cfn-lint runs on it in `npm run release`.
import { beforeAll, describe, expect, it } from 'vitest';
import { generateRelease, type Release } from '../../infra/release.js';
import type { Resources, Statement } from './fixtures.js';
import { expandRelease, pseudo } from './release-expand.js';
import { drainerPrerequisites, grants, ofType, statementsOf, waitsFor } from './template-checks.js';

const groups = ['prod-workers-a', 'prod_workers.b'];
const values = (extra: Record<string, string> = {}) => ({ ClusterName: 'prod', AutoScalingGroupNames: groups, LambdaCodeS3Bucket: 'my-artifacts', ...extra });

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

  it('is parameterised: cluster, groups as a list, deployment, hook and drain settings, alarm topic, the code bucket and key', () => {
    const parameters = release.template['Parameters'] as Record<string, { Type: string; Default?: unknown; AllowedValues?: unknown }>;
    expect(Object.keys(parameters)).toEqual([
      'ClusterName',
      'AutoScalingGroupNames',
      'DeploymentName',
      'HeartbeatTimeoutSeconds',
      'DrainTimeoutSeconds',
      'LoadBalancerDelaySeconds',
      'LaunchTimeoutSeconds',
      'DeadlinePolicy',
      'AlarmTopicArn',
      'LambdaCodeS3Bucket',
      'LambdaCodeS3Key',
    ]);
    expect(parameters['AutoScalingGroupNames']!.Type).toBe('CommaDelimitedList');
    expect(parameters['HeartbeatTimeoutSeconds']).toMatchObject({ Type: 'Number', Default: 1800 });
    expect(parameters['DeadlinePolicy']).toMatchObject({ Default: 'force', AllowedValues: ['force', 'leave', 'retain'] });
    expect(parameters['LambdaCodeS3Key']!.Default).toBe(release.codeKey);
    expect(release.codeKey).toMatch(/^graceful-node-termination-9\.9\.9-lambda-[0-9a-f]{12}\.zip$/);
    expect(release.template['Transform']).toBe('AWS::LanguageExtensions');
  });

  it('makes the launch and terminate hooks in one Fn::ForEach over the group list, and no hook outside it', () => {
    const raw = release.template['Resources'] as Record<string, unknown>;
    const [identifier, collection, fragment] = raw['Fn::ForEach::LifecycleHooks'] as [string, unknown, Resources];
    expect(identifier).toBe('GroupName');
    expect(collection).toEqual({ Ref: 'AutoScalingGroupNames' });
    expect(Object.values(fragment).map((r) => [r.Type, r.Properties['LifecycleTransition'], r.Properties['AutoScalingGroupName']])).toEqual([
      ['AWS::AutoScaling::LifecycleHook', 'autoscaling:EC2_INSTANCE_LAUNCHING', { Ref: 'GroupName' }],
      ['AWS::AutoScaling::LifecycleHook', 'autoscaling:EC2_INSTANCE_TERMINATING', { Ref: 'GroupName' }],
    ]);
    expect(Object.values(raw).filter((r) => (r as { Type?: string }).Type === 'AWS::AutoScaling::LifecycleHook')).toEqual([]);
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
      .filter((s) => ['autoscaling:CompleteLifecycleAction', 'autoscaling:RecordLifecycleActionHeartbeat', 'autoscaling:DeleteTags'].some((a) => grants(s, a)));
    expect(lifecycle).toHaveLength(2);
    for (const s of lifecycle) {
      const allows = (arn: string, region: string) =>
        [s.Resource].flat().some((pattern) => like(String(pattern), arn)) && s.Condition?.['StringEquals']?.['aws:RequestedRegion'] === region;
      for (const name of groups) expect(allows(groupArn(name), pseudo['AWS::Region'])).toBe(true);
      expect(allows(groupArn('prod-workers-a'), 'us-east-1')).toBe(false);
      expect(allows(groupArn('prod-workers-c'), pseudo['AWS::Region'])).toBe(false);
      expect(allows(groupArn('prod-workers-a-2'), pseudo['AWS::Region'])).toBe(false);
    }
  });

  it('lets Auto Scaling assume the hook role only for the listed groups of this account and region', () => {
    const [, role] = ofType(resources, 'AWS::IAM::Role').find(([, r]) => JSON.stringify(r.Properties['AssumeRolePolicyDocument']).includes('autoscaling.amazonaws.com'))!;
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
    const [, drainer] = ofType(resources, 'AWS::Lambda::Function').find(([, r]) => r.Properties['Handler'] === 'index.handler')!;
    expect((drainer.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables['AUTO_SCALING_GROUP_NAMES']).toBe(groups.join(','));
    const [, rule] = ofType(resources, 'AWS::Events::Rule').find(([, r]) => JSON.stringify(r.Properties['EventPattern']).includes('Instance Refresh'))!;
    expect((rule.Properties['EventPattern'] as { detail: unknown }).detail).toEqual({ AutoScalingGroupName: groups });
  });

  it('references no CDK asset or bootstrap resource: both functions run the zip from the code parameters', () => {
    const text = JSON.stringify(release.template);
    for (const leftover of ['cdk-hnb659fds', '-assets-', 'aws:asset', 'aws:cdk', 'BootstrapVersion']) expect(text.includes(leftover), leftover).toBe(false);
    expect(text.match(/[0-9a-f]{64}\.zip/), 'an asset hash').toBeNull();
    const functions = ofType(resources, 'AWS::Lambda::Function');
    expect(functions).toHaveLength(2);
    for (const [, fn] of functions) expect(fn.Properties['Code']).toEqual({ S3Bucket: 'my-artifacts', S3Key: release.codeKey });
  });

  it.each(['force', 'retain'])('under %s, makes every hook wait for everything the drainer needs to act on its notification', (policy) => {
    const expanded = expandRelease(release.template, values({ DeadlinePolicy: policy }));
    const hooks = ofType(expanded, 'AWS::AutoScaling::LifecycleHook');
    expect(hooks).toHaveLength(4);
    for (const [hookId, hook] of hooks) {
      for (const [what, ids] of Object.entries(drainerPrerequisites(expanded, hook))) {
        expect(ids.length, `${what}: no such resource`).toBeGreaterThan(0);
        for (const id of ids) expect(waitsFor(hook).has(id), `${hookId} does not wait until ${what} (${id})`).toBe(true);
      }
    }
  });

  it('grants no autoscaling or eks action on "*" but the reads IAM cannot scope', () => {
    const onEverything = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap(statementsOf)
      .filter((s) => [s.Resource].flat().includes('*') && [s.Action].flat().some((a) => a.startsWith('autoscaling:') || a.startsWith('eks:')));
    for (const s of onEverything) expect(s.Sid).toBe('ReadsWithoutResourceScope');
  });

  it('follows the deadline policy: ABANDON and the retained-instances alarm only under retain', () => {
    for (const [policy, result, retainedAlarms] of [
      ['force', 'CONTINUE', 0],
      ['leave', 'CONTINUE', 0],
      ['retain', 'ABANDON', 1],
    ] as const) {
      const expanded = expandRelease(release.template, values({ DeadlinePolicy: policy }));
      const terminate = ofType(expanded, 'AWS::AutoScaling::LifecycleHook').filter(([, r]) => r.Properties['LifecycleTransition'] === 'autoscaling:EC2_INSTANCE_TERMINATING');
      expect(terminate.map(([, r]) => r.Properties['DefaultResult'])).toEqual([result, result]);
      const alarms = ofType(expanded, 'AWS::CloudWatch::Alarm').map(([, r]) => String(r.Properties['AlarmName']));
      expect(alarms.filter((n) => n.endsWith('-InstancesRetained'))).toHaveLength(retainedAlarms);
      const [, drainer] = ofType(expanded, 'AWS::Lambda::Function').find(([, r]) => r.Properties['Handler'] === 'index.handler')!;
      expect((drainer.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables['DEADLINE_POLICY']).toBe(policy);
    }
  });

  it('sends the alarms to the alarm topic when one is given, and nowhere otherwise', () => {
    const topic = 'arn:aws:sns:eu-west-1:123456789012:oncall';
    const actions = (r: Resources) => ofType(r, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties['AlarmActions']);
    expect(actions(expandRelease(release.template, values({ AlarmTopicArn: topic }))).every((a) => JSON.stringify(a) === JSON.stringify([topic]))).toBe(true);
    expect(actions(resources).every((a) => a === undefined)).toBe(true);
  });

  it('fits in a TemplateBody, so aws cloudformation deploy needs no bucket for it', () => {
    expect(Buffer.byteLength(`${JSON.stringify(release.template, null, 1)}\n`)).toBeLessThan(51_200);
  });
});
