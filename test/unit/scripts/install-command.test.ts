// `graceful-node-termination install` as a user runs it: the command's main, its options parsed,
// its clients made as in production, with Auto Scaling, CloudFormation and S3 stubbed at the SDK
// edge (aws-sdk-client-mock stubs every client of a class). The lines it prints are the ones
// docs/cli.md shows, and this test fails when the page shows others.
import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeInstanceRefreshesCommand,
} from '@aws-sdk/client-auto-scaling';
import {
  CloudFormationClient,
  CreateChangeSetCommand,
  DeleteChangeSetCommand,
  DeleteStackCommand,
  DescribeChangeSetCommand,
  DescribeStacksCommand,
  ExecuteChangeSetCommand,
  type Stack,
} from '@aws-sdk/client-cloudformation';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../../scripts/install.js';

const asg = mockClient(AutoScalingClient);
const cfn = mockClient(CloudFormationClient);
const s3 = mockClient(S3Client);
const dir = mkdtempSync(join(tmpdir(), 'gnt-install-command-'));
const version = '0.4.0';
writeFileSync(
  join(dir, `graceful-node-termination-${version}.template.json`),
  JSON.stringify({
    Parameters: { ClusterName: {}, AutoScalingGroupNames: {}, LambdaCodeS3Bucket: {}, LambdaCodeS3Key: {}, Mode: {} },
  }),
);
writeFileSync(join(dir, `graceful-node-termination-${version}-lambda-9c1f6e0a2b7d.zip`), 'zip');
const docs = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'cli.md'), 'utf8');
const group = 'eksctl-prod-nodegroup-ng-1-NodeGroup-1AB2C3D4E5F6';
const outputs = [
  ['DeploymentName', 'graceful-node-termination'],
  ['FunctionName', 'graceful-node-termination-prod-Drainer1A2B3C4D-x7Yz'],
  [
    'TerminationPolicyFunctionArn',
    'arn:aws:lambda:eu-west-1:123456789012:function:graceful-node-termination-prod-Drainer1A2B3C4D-x7Yz',
  ],
];

let printed: string[];
beforeEach(() => {
  printed = [];
  vi.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(line));
  vi.spyOn(console, 'error').mockImplementation((line: string) => void printed.push(`stderr: ${line}`));
  vi.stubEnv('AWS_REGION', 'eu-west-1');
  vi.stubEnv('AWS_PROFILE', '');
  for (const m of [asg, cfn, s3]) m.reset();
  asg.on(DescribeAutoScalingGroupsCommand).resolves({ AutoScalingGroups: [] });
  asg
    .on(DescribeAutoScalingGroupsCommand, { Filters: [{ Name: 'tag:alpha.eksctl.io/cluster-name', Values: ['prod'] }] })
    .resolves({
      AutoScalingGroups: [
        {
          AutoScalingGroupName: group,
          Tags: [
            { Key: 'alpha.eksctl.io/nodegroup-name', Value: 'ng-1' },
            { Key: 'alpha.eksctl.io/nodegroup-type', Value: 'unmanaged' },
          ],
        },
      ] as never,
    });
  asg.on(DescribeAutoScalingGroupsCommand, { AutoScalingGroupNames: [group] }).resolves({
    AutoScalingGroups: [{ AutoScalingGroupName: group }] as never,
  });
  asg.on(DescribeInstanceRefreshesCommand).resolves({ InstanceRefreshes: [] });
  s3.on(HeadObjectCommand).rejects(Object.assign(new Error('NotFound'), { $metadata: { httpStatusCode: 404 } }));
  s3.on(PutObjectCommand).resolves({});
  cfn.on(CreateChangeSetCommand).resolves({});
  cfn.on(DeleteChangeSetCommand).resolves({});
  cfn.on(DeleteStackCommand).resolves({});
  cfn.on(ExecuteChangeSetCommand).resolves({});
  cfn.on(DescribeChangeSetCommand).resolves({
    Status: 'CREATE_COMPLETE',
    Changes: [
      ['LaunchHook0', 'AWS::AutoScaling::LifecycleHook'],
      ['TerminateHook0', 'AWS::AutoScaling::LifecycleHook'],
      ['Topic', 'AWS::SNS::Topic'],
      ['Drainer', 'AWS::Lambda::Function'],
    ].map(([id, type]) => ({ ResourceChange: { Action: 'Add' as const, LogicalResourceId: id, ResourceType: type } })),
  });
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const args = [
  '--bucket',
  'my-artifacts',
  '--eksctl-cluster',
  'prod',
  '--parameter',
  'Mode=observe',
  '--release-dir',
  dir,
];
const shown = (lines: string[]) => lines.join('\n').replaceAll(dir, '<release>');

describe('graceful-node-termination install', () => {
  it('finds the eksctl groups, uploads, shows the plan, deploys nothing without --approve and removes the plan', async () => {
    cfn.on(DescribeStacksCommand).rejects(new Error('Stack with id graceful-node-termination-prod does not exist'));
    expect(await main(args)).toBe(0);
    const out = shown(printed);
    expect(out).toBe(
      [
        `  eksctl cluster prod: nodegroup ng-1: group ${group}`,
        `  s3://my-artifacts/graceful-node-termination/graceful-node-termination-${version}-lambda-9c1f6e0a2b7d.zip: uploaded`,
        `  s3://my-artifacts/graceful-node-termination/graceful-node-termination-${version}.template.json: uploaded`,
        `install: graceful-node-termination ${version}, stack graceful-node-termination-prod in eu-west-1, groups ${group}`,
        'plan (a new stack, 4 change(s)):',
        '  Add     LaunchHook0  AWS::AutoScaling::LifecycleHook',
        '  Add     TerminateHook0  AWS::AutoScaling::LifecycleHook',
        '  Add     Topic  AWS::SNS::Topic',
        '  Add     Drainer  AWS::Lambda::Function',
        'not deployed: pass --approve to deploy it (the plan was discarded)',
      ].join('\n'),
    );
    expect(cfn.commandCalls(ExecuteChangeSetCommand)).toHaveLength(0);
    expect(cfn.commandCalls(DeleteStackCommand)).toHaveLength(1);
    expect(docs).toContain(
      `$ graceful-node-termination install --bucket my-artifacts --eksctl-cluster prod --parameter Mode=observe\n${out}\n`,
    );
  });

  it('with --approve executes the change set, follows the stack and prints its outputs', async () => {
    cfn
      .on(DescribeStacksCommand)
      .rejectsOnce(new Error('Stack with id graceful-node-termination-prod does not exist'))
      .resolvesOnce({ Stacks: [{ StackName: 's', StackStatus: 'CREATE_IN_PROGRESS' } as Stack] })
      .resolves({
        Stacks: [
          {
            StackName: 's',
            StackStatus: 'CREATE_COMPLETE',
            Outputs: outputs.map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })),
          } as Stack,
        ],
      });
    // The stack is polled every 5 s: fake timers run the wait at once.
    vi.useFakeTimers();
    try {
      const done = main([...args, '--approve']);
      for (let i = 0; i < 5; i++) await vi.advanceTimersByTimeAsync(5_000);
      expect(await done).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    const lines = printed.join('\n').split('\n');
    const out = shown(lines.slice(lines.indexOf('plan (a new stack, 4 change(s)):') + 5));
    expect(out).toBe(
      [
        '  stack graceful-node-termination-prod: CREATE_IN_PROGRESS',
        '  stack graceful-node-termination-prod: CREATE_COMPLETE',
        'deployed: stack graceful-node-termination-prod is CREATE_COMPLETE',
        ...outputs.map(([k, v]) => `  ${k}: ${v}`),
        `next: graceful-node-termination check <group>; optionally termination-policy enable <group> --function-arn ${outputs[2]![1]}`,
      ].join('\n'),
    );
    expect(docs).toContain(`$ graceful-node-termination install ... --approve\n...\n${out}\n`);
  });
});
