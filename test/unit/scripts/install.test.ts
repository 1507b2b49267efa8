// install and uninstall (scripts/install.ts, scripts/uninstall.ts) against local stand-ins:
// Auto Scaling, CloudFormation and S3 stubbed at the SDK edge (aws-sdk-client-mock), the release
// files written to a temp directory, the nodes in memory. What is checked: what each command
// sends, in which order, what it refuses, and that a second run changes nothing.
import {
  AutoScalingClient,
  DeleteTagsCommand,
  DescribeAutoScalingGroupsCommand,
  DescribeInstanceRefreshesCommand,
  DescribeLifecycleHooksCommand,
  DescribeTagsCommand,
  UpdateAutoScalingGroupCommand,
} from '@aws-sdk/client-auto-scaling';
import {
  CloudFormationClient,
  CreateChangeSetCommand,
  DeleteChangeSetCommand,
  DeleteStackCommand,
  DescribeChangeSetCommand,
  DescribeStackEventsCommand,
  DescribeStacksCommand,
  ExecuteChangeSetCommand,
  type Stack,
} from '@aws-sdk/client-cloudformation';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../../lambda/cluster/model.js';
import { autoScalingGroupTags, type CleanupDeps } from '../../../scripts/cleanup.js';
import { eksctlGroups } from '../../../scripts/eksctl-groups.js';
import {
  applyInstall,
  discardPlan,
  parseSettings,
  planInstall,
  renderInstall,
  type InstallDeps,
  type InstallRequest,
} from '../../../scripts/install.js';
import { releaseFiles } from '../../../scripts/release-stack.js';
import { applyUninstall, planUninstall, renderUninstall, type UninstallDeps } from '../../../scripts/uninstall.js';

const asg = mockClient(AutoScalingClient);
const cfn = mockClient(CloudFormationClient);
const s3 = mockClient(S3Client);
const region = 'eu-west-1';
const version = '0.4.0-dev.312+abc1234';
const dir = mkdtempSync(join(tmpdir(), 'gnt-install-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const template = `graceful-node-termination-${version}.template.json`;
const code = `graceful-node-termination-${version}-lambda-0123abcd.zip`;
const parameters = {
  ClusterName: {},
  AutoScalingGroupNames: {},
  LambdaCodeS3Bucket: {},
  LambdaCodeS3Key: { Default: code },
  Mode: { Default: 'enforce' },
  AlarmEmail: { Default: '' },
  DrainTimeoutSeconds: { Default: 900 },
  DrainRules: { Default: '[]' },
};
writeFileSync(join(dir, template), JSON.stringify({ Parameters: parameters }));
writeFileSync(join(dir, code), 'zip bytes');
const release = releaseFiles(dir);
const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const notFound = () => Object.assign(new Error('NotFound'), { name: 'NotFound', $metadata: { httpStatusCode: 404 } });
const noStack = () => Object.assign(new Error('Stack with id gnt does not exist'), { name: 'ValidationError' });

const said: string[] = [];
const installDeps = (): InstallDeps => ({
  autoScaling: new AutoScalingClient({ region }),
  cloudFormation: new CloudFormationClient({ region }),
  s3: new S3Client({ region }),
  region,
  sleep: async () => {},
  say: (line) => said.push(line),
});
const request: InstallRequest = {
  cluster: 'prod',
  groups: ['workers-a', 'workers-b'],
  bucket: 'artifacts',
  prefix: 'graceful-node-termination/',
  stack: 'graceful-node-termination-prod',
  release,
  settings: { Mode: 'observe' },
};

function groupsExist(...names: string[]) {
  asg.on(DescribeAutoScalingGroupsCommand).callsFake((input: { AutoScalingGroupNames?: string[] }) => ({
    AutoScalingGroups: (input.AutoScalingGroupNames ?? [])
      .filter((g) => names.includes(g))
      .map((g) => ({
        AutoScalingGroupName: g,
        TerminationPolicies: ['Default'],
        Instances: [],
      })),
  }));
}

beforeEach(() => {
  asg.reset();
  cfn.reset();
  s3.reset();
  said.length = 0;
  asg
    .on(DescribeInstanceRefreshesCommand)
    .resolves({ InstanceRefreshes: [{ InstanceRefreshId: 'r-0', Status: 'Successful' }] });
  s3.on(PutObjectCommand).resolves({});
  cfn.on(CreateChangeSetCommand).resolves({ Id: 'cs' });
  cfn.on(DeleteChangeSetCommand).resolves({});
  cfn.on(ExecuteChangeSetCommand).resolves({});
  cfn.on(DeleteStackCommand).resolves({});
});

describe('the release files', () => {
  it('are one template and one zip, with the version and the parameters the template declares', () => {
    expect(release).toMatchObject({ template, code, version });
    expect(Object.keys(release.parameters)).toContain('Mode');
  });

  it('are refused when the directory holds none, or two releases', () => {
    expect(() => releaseFiles(join(dir, 'nowhere'))).toThrow(
      /holds 0 template\(s\) and 0 zip\(s\): pass --release-dir/,
    );
    const two = join(dir, 'two');
    mkdirSync(two);
    writeFileSync(join(two, template), '{}');
    writeFileSync(join(two, 'graceful-node-termination-0.3.0.template.json'), '{}');
    writeFileSync(join(two, code), 'x');
    expect(() => releaseFiles(two)).toThrow(/holds 2 template\(s\) and 1 zip\(s\)/);
  });

  it('take --parameter Key=Value for the settings, and name the nearest parameter for a typo', () => {
    expect(parseSettings(['Mode=observe', 'AlarmEmail=a@b'], release)).toEqual({ Mode: 'observe', AlarmEmail: 'a@b' });
    expect(() => parseSettings(['DrainTimeout=60'], release)).toThrow(
      'the template has no parameter DrainTimeout; nearest: DrainTimeoutSeconds, DrainRules',
    );
    expect(() => parseSettings(['ClusterName=x'], release)).toThrow(/set by install itself/);
    expect(() => parseSettings(['Mode'], release)).toThrow(/is not Key=Value/);
  });
});

describe('the groups of an eksctl cluster', () => {
  it("are its unmanaged nodegroups' groups, by the current and the old cluster tag; EKS-managed groups are left out", async () => {
    const tags = (pairs: Record<string, string>) => Object.entries(pairs).map(([Key, Value]) => ({ Key, Value }));
    asg
      .on(DescribeAutoScalingGroupsCommand, {
        Filters: [{ Name: 'tag:alpha.eksctl.io/cluster-name', Values: ['prod'] }],
      })
      .resolves({
        AutoScalingGroups: [
          {
            AutoScalingGroupName: 'eksctl-prod-nodegroup-ng-1-NodeGroup-A',
            Tags: tags({ 'alpha.eksctl.io/nodegroup-name': 'ng-1', 'alpha.eksctl.io/nodegroup-type': 'unmanaged' }),
          },
          { AutoScalingGroupName: 'eks-ng-managed-1234', Tags: tags({ 'eks:nodegroup-name': 'managed' }) },
        ] as never,
      });
    asg
      .on(DescribeAutoScalingGroupsCommand, {
        Filters: [{ Name: 'tag:eksctl.cluster.k8s.io/v1alpha1/cluster-name', Values: ['prod'] }],
      })
      .resolves({
        AutoScalingGroups: [
          {
            AutoScalingGroupName: 'eksctl-prod-nodegroup-old-NodeGroup-B',
            Tags: tags({ 'eksctl.io/v1alpha2/nodegroup-name': 'old' }),
          },
        ] as never,
      });
    const client = new AutoScalingClient({ region });
    expect(await eksctlGroups(client, 'prod')).toEqual([
      { group: 'eksctl-prod-nodegroup-ng-1-NodeGroup-A', nodegroup: 'ng-1' },
      { group: 'eksctl-prod-nodegroup-old-NodeGroup-B', nodegroup: 'old' },
    ]);
    expect(await eksctlGroups(client, 'prod', ['old'])).toEqual([
      { group: 'eksctl-prod-nodegroup-old-NodeGroup-B', nodegroup: 'old' },
    ]);
  });
});

describe('install', () => {
  it('uploads the zip and the template, plans a new stack as a change set, and deploys only when applied', async () => {
    groupsExist('workers-a', 'workers-b');
    cfn.on(DescribeStacksCommand).rejectsOnce(noStack());
    s3.on(HeadObjectCommand).rejects(notFound());
    cfn
      .on(DescribeChangeSetCommand)
      .resolvesOnce({ Status: 'CREATE_PENDING' })
      .resolvesOnce({ Status: 'CREATE_COMPLETE' })
      .resolves({
        Status: 'CREATE_COMPLETE',
        Changes: [
          { ResourceChange: { Action: 'Add', LogicalResourceId: 'Topic', ResourceType: 'AWS::SNS::Topic' } },
          { ResourceChange: { Action: 'Add', LogicalResourceId: 'Function', ResourceType: 'AWS::Lambda::Function' } },
        ],
      });
    const plan = await planInstall(request, installDeps());

    expect(s3.commandCalls(PutObjectCommand).map((c) => c.args[0].input.Key)).toEqual([
      `graceful-node-termination/${code}`,
      `graceful-node-termination/${template}`,
    ]);
    expect(s3.commandCalls(PutObjectCommand)[0]!.args[0].input.Metadata).toEqual({ sha256: sha('zip bytes') });
    const created = cfn.commandCalls(CreateChangeSetCommand)[0]!.args[0].input;
    expect(created).toMatchObject({
      StackName: 'graceful-node-termination-prod',
      ChangeSetType: 'CREATE',
      // S3 would read a bare "+" in the path as a space.
      TemplateURL: `https://artifacts.s3.eu-west-1.amazonaws.com/graceful-node-termination/graceful-node-termination-0.4.0-dev.312%2Babc1234.template.json`,
      Capabilities: ['CAPABILITY_IAM', 'CAPABILITY_AUTO_EXPAND'],
      Tags: [{ Key: 'graceful-node-termination:version', Value: version }],
    });
    expect(created.Parameters).toEqual([
      { ParameterKey: 'ClusterName', ParameterValue: 'prod' },
      { ParameterKey: 'AutoScalingGroupNames', ParameterValue: 'workers-a,workers-b' },
      { ParameterKey: 'LambdaCodeS3Bucket', ParameterValue: 'artifacts' },
      { ParameterKey: 'LambdaCodeS3Key', ParameterValue: `graceful-node-termination/${code}` },
      { ParameterKey: 'Mode', ParameterValue: 'observe' },
    ]);
    expect(cfn.commandCalls(ExecuteChangeSetCommand)).toHaveLength(0);
    expect(renderInstall(plan).split('\n')).toEqual([
      `install: graceful-node-termination ${version}, stack graceful-node-termination-prod in eu-west-1, groups workers-a, workers-b`,
      'plan (a new stack, 2 change(s)):',
      '  Add     Topic  AWS::SNS::Topic',
      '  Add     Function  AWS::Lambda::Function',
    ]);

    cfn
      .on(DescribeStacksCommand)
      .resolvesOnce({ Stacks: [{ StackName: 'gnt', StackStatus: 'CREATE_IN_PROGRESS' } as Stack] })
      .resolves({
        Stacks: [
          {
            StackName: 'gnt',
            StackStatus: 'CREATE_COMPLETE',
            Outputs: [{ OutputKey: 'DeploymentName', OutputValue: 'graceful-node-termination' }],
          } as Stack,
        ],
      });
    const result = await applyInstall(plan, installDeps());
    expect(cfn.commandCalls(ExecuteChangeSetCommand)[0]!.args[0].input).toEqual({
      StackName: 'graceful-node-termination-prod',
      ChangeSetName: plan.changeSet,
    });
    expect(result).toMatchObject({
      applied: true,
      status: 'CREATE_COMPLETE',
      outputs: { DeploymentName: 'graceful-node-termination' },
    });
    expect(said).toContain('  stack graceful-node-termination-prod: CREATE_COMPLETE');
  });

  it('run again with the same release uploads nothing, keeps the other settings and finds nothing to change', async () => {
    groupsExist('workers-a', 'workers-b');
    cfn.on(DescribeStacksCommand).resolves({
      Stacks: [
        {
          StackName: 'gnt',
          StackStatus: 'UPDATE_COMPLETE',
          Parameters: ['ClusterName', 'AutoScalingGroupNames', 'Mode', 'AlarmEmail', 'DrainTimeoutSeconds'].map(
            (k) => ({
              ParameterKey: k,
              ParameterValue: 'x',
            }),
          ),
        } as Stack,
      ],
    });
    s3.on(HeadObjectCommand, { Key: `graceful-node-termination/${code}` }).resolves({
      Metadata: { sha256: sha('zip bytes') },
    });
    s3.on(HeadObjectCommand, { Key: `graceful-node-termination/${template}` }).resolves({
      Metadata: { sha256: sha(JSON.stringify({ Parameters: parameters })) },
    });
    cfn.on(DescribeChangeSetCommand).resolves({
      Status: 'FAILED',
      StatusReason:
        "The submitted information didn't contain changes. Submit different information to create a change set.",
    });
    const plan = await planInstall({ ...request, settings: {} }, installDeps());

    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(0);
    const parametersSent = cfn.commandCalls(CreateChangeSetCommand)[0]!.args[0].input.Parameters!;
    expect(parametersSent.filter((p) => p.UsePreviousValue)).toEqual([
      { ParameterKey: 'Mode', UsePreviousValue: true },
      { ParameterKey: 'AlarmEmail', UsePreviousValue: true },
      { ParameterKey: 'DrainTimeoutSeconds', UsePreviousValue: true },
    ]);
    expect(cfn.commandCalls(CreateChangeSetCommand)[0]!.args[0].input.ChangeSetType).toBe('UPDATE');
    expect(cfn.commandCalls(DeleteChangeSetCommand)).toHaveLength(1);
    expect(plan.changes).toBeUndefined();
    expect(renderInstall(plan)).toContain('nothing to change: the stack already runs this release with these settings');
  });

  it('refuses while an instance refresh replaces the nodes of a group, before writing anything', async () => {
    groupsExist('workers-a', 'workers-b');
    asg.on(DescribeInstanceRefreshesCommand, { AutoScalingGroupName: 'workers-b' }).resolves({
      InstanceRefreshes: [{ InstanceRefreshId: 'r-1', Status: 'InProgress' }],
    });
    cfn.on(DescribeStacksCommand).rejects(noStack());
    const plan = await planInstall(request, installDeps());
    expect(plan.refused).toEqual([
      'group workers-b: instance refresh r-1 is InProgress: the nodes it replaces would leave without a drain or with half the hooks; wait for it to end, or cancel it (aws autoscaling cancel-instance-refresh --auto-scaling-group-name workers-b)',
    ]);
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(0);
    expect(cfn.commandCalls(CreateChangeSetCommand)).toHaveLength(0);
  });

  it('refuses a group that does not exist (bad usage) and a stack CloudFormation is busy with', async () => {
    groupsExist('workers-a');
    await expect(planInstall(request, installDeps())).rejects.toThrow('no Auto Scaling group workers-b in this region');
    groupsExist('workers-a', 'workers-b');
    cfn
      .on(DescribeStacksCommand)
      .resolves({ Stacks: [{ StackName: 'gnt', StackStatus: 'UPDATE_IN_PROGRESS' } as Stack] });
    expect((await planInstall(request, installDeps())).refused).toEqual([
      'stack graceful-node-termination-prod is UPDATE_IN_PROGRESS: wait until CloudFormation is done with it',
    ]);
  });

  it('discards an unapproved plan, and the empty stack a new plan made to hold it', async () => {
    await discardPlan(
      { stack: 'gnt', changeSet: 'install-1', type: 'CREATE' } as never,
      new CloudFormationClient({ region }),
    );
    expect(cfn.commandCalls(DeleteChangeSetCommand)[0]!.args[0].input).toEqual({
      StackName: 'gnt',
      ChangeSetName: 'install-1',
    });
    expect(cfn.commandCalls(DeleteStackCommand)[0]!.args[0].input).toEqual({ StackName: 'gnt' });
  });

  it('fails with the reasons CloudFormation gave when the stack rolls back', async () => {
    cfn
      .on(DescribeStacksCommand)
      .resolves({ Stacks: [{ StackName: 'gnt', StackStatus: 'ROLLBACK_COMPLETE' } as Stack] });
    cfn.on(DescribeStackEventsCommand).resolves({
      StackEvents: [
        {
          LogicalResourceId: 'LaunchHook',
          ResourceStatus: 'CREATE_FAILED',
          ResourceStatusReason: 'Group not found',
          Timestamp: new Date(Date.now() + 1000),
        } as never,
      ],
    });
    await expect(applyInstall({ stack: 'gnt', changeSet: 'c' } as never, installDeps())).rejects.toThrow(
      'stack gnt ended ROLLBACK_COMPLETE: LaunchHook: CREATE_FAILED: Group not found',
    );
  });
});

describe('uninstall', () => {
  const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:gnt-drainer';
  const order: string[] = [];
  const marked: NodeInfo = {
    name: 'n-1',
    uid: 'u',
    providerId: 'aws:///eu-west-1a/i-1',
    unschedulable: false,
    ready: true,
    taints: [],
    handOffClaim: 'sha256:x/1/r',
    labels: { 'graceful-node-termination/owner': 'gnt' },
  };
  let nodes: NodeInfo[] = [];
  const cleanup = (): CleanupDeps => ({
    nodes: {
      listMarked: async () => nodes,
      unmark: async () => 'patched',
      unmarkOutdated: async () => [],
      unmarkMigrating: async () => ({ result: 'patched', removed: [] }),
    },
    removeLeftovers: async (n) => (order.push(`leftovers ${n.name}`), (nodes = []), 'patched'),
    groups: autoScalingGroupTags(new AutoScalingClient({ region })),
  });
  const deps = (): UninstallDeps => ({
    autoScaling: new AutoScalingClient({ region }),
    cloudFormation: new CloudFormationClient({ region }),
    cleanup: cleanup(),
    region,
    sleep: async () => {},
    say: (line) => said.push(line),
  });
  const stack = {
    StackName: 'gnt',
    StackStatus: 'UPDATE_COMPLETE',
    Parameters: [{ ParameterKey: 'AutoScalingGroupNames', ParameterValue: 'workers-a,workers-b' }],
    Outputs: [
      { OutputKey: 'DeploymentName', OutputValue: 'gnt' },
      { OutputKey: 'TerminationPolicyFunctionArn', OutputValue: arn },
    ],
  } as Stack;

  beforeEach(() => {
    order.length = 0;
    nodes = [marked];
    asg.on(DescribeAutoScalingGroupsCommand).callsFake((input: { AutoScalingGroupNames?: string[] }) => ({
      AutoScalingGroups: (input.AutoScalingGroupNames ?? []).map((g) => ({
        AutoScalingGroupName: g,
        TerminationPolicies: g === 'workers-a' ? [arn, 'OldestInstance'] : ['Default'],
        Instances: [{ InstanceId: 'i-1', LifecycleState: 'InService' }],
      })),
    }));
    asg.on(DescribeLifecycleHooksCommand).resolves({ LifecycleHooks: [] });
    asg.on(DescribeTagsCommand).resolves({
      Tags: [{ ResourceId: 'workers-a', Key: 'graceful-node-termination/refresh-strategy', Value: 'minimal:r-1' }],
    });
    asg.on(UpdateAutoScalingGroupCommand).callsFake((input: { AutoScalingGroupName: string }) => {
      order.push(`policy ${input.AutoScalingGroupName}`);
      return {};
    });
    cfn.on(DeleteStackCommand).callsFake(() => (order.push('delete stack'), {}));
    asg.on(DeleteTagsCommand).callsFake(() => (order.push('untag'), {}));
  });

  it('plans the three steps, then disables the policy, deletes the stack and takes back the marks, in that order', async () => {
    cfn.on(DescribeStacksCommand).resolves({ Stacks: [stack] });
    const plan = await planUninstall({ stack: 'gnt', groups: [], force: false }, deps());
    expect(order).toEqual([]);
    expect(renderUninstall(plan).split('\n')).toEqual([
      'uninstall: stack gnt in eu-west-1: UPDATE_COMPLETE; deployment gnt',
      'plan, in this order:',
      `  1. termination policies: the drainer taken out of workers-a (${arn}, OldestInstance -> OldestInstance)`,
      '  2. delete stack gnt: the hooks on workers-a, workers-b, the topic, the functions, their roles and alarms',
      '  3. take back the marks of gnt: 2 on 1 node(s), 1 group tag(s)',
    ]);

    cfn
      .on(DescribeStacksCommand)
      .resolvesOnce({ Stacks: [{ ...stack, StackStatus: 'DELETE_IN_PROGRESS' }] })
      .rejects(Object.assign(new Error('Stack with id gnt does not exist'), { name: 'ValidationError' }));
    const result = await applyUninstall(plan, deps());
    expect(order).toEqual(['policy workers-a', 'delete stack', 'leftovers n-1', 'untag']);
    expect(asg.commandCalls(UpdateAutoScalingGroupCommand)[0]!.args[0].input).toEqual({
      AutoScalingGroupName: 'workers-a',
      TerminationPolicies: ['OldestInstance'],
    });
    expect(result.done).toEqual([
      'group workers-a: TerminationPolicies are OldestInstance',
      'stack gnt: deleted',
      'took back 2 mark(s) on 1 node(s) and 1 group tag(s) of deployment gnt',
    ]);
  });

  it('run again once the stack is gone deletes nothing and still takes back what is left', async () => {
    cfn.on(DescribeStacksCommand).rejects(noStack());
    const plan = await planUninstall({ stack: 'gnt', deployment: 'gnt', groups: ['workers-a'], force: false }, deps());
    expect(renderUninstall(plan)).toContain('  2. the stack: nothing to delete');
    await applyUninstall(plan, deps());
    expect(order).toEqual(['leftovers n-1', 'untag']);
    expect(cfn.commandCalls(DeleteStackCommand)).toHaveLength(0);
  });

  it('without a stack and without --deployment takes back no marks: a live deployment is never guessed at', async () => {
    cfn.on(DescribeStacksCommand).rejects(noStack());
    const plan = await planUninstall({ stack: 'typo', groups: [], force: false }, deps());
    expect(renderUninstall(plan)).toContain(
      '  3. the marks: no stack to name the deployment; to take back the marks of one whose stack is gone, pass --deployment',
    );
    expect((await applyUninstall(plan, deps())).done).toEqual([]);
    expect(order).toEqual([]);
  });

  it('refuses while a lifecycle action waits on an instance (a drain running), unless forced', async () => {
    cfn.on(DescribeStacksCommand).resolves({ Stacks: [stack] });
    asg.on(DescribeAutoScalingGroupsCommand).resolves({
      AutoScalingGroups: [
        {
          AutoScalingGroupName: 'workers-b',
          Instances: [{ InstanceId: 'i-9', LifecycleState: 'Terminating:Wait' }],
          TerminationPolicies: ['Default'],
        } as never,
      ],
    });
    const plan = await planUninstall({ stack: 'gnt', groups: [], force: false }, deps());
    expect(plan.refused).toEqual([
      'group workers-b: instance i-9 is Terminating:Wait: a drain or a launch is in progress; wait for it (or pass --force to cut it short)',
    ]);
    expect((await planUninstall({ stack: 'gnt', groups: [], force: true }, deps())).refused).toEqual([]);
  });

  it('stops with the reasons when the stack cannot be deleted, before touching the marks', async () => {
    cfn.on(DescribeStacksCommand).resolves({ Stacks: [stack] });
    const plan = await planUninstall({ stack: 'gnt', groups: [], force: false }, deps());
    cfn.on(DescribeStacksCommand).resolves({ Stacks: [{ ...stack, StackStatus: 'DELETE_FAILED' }] });
    cfn.on(DescribeStackEventsCommand).resolves({
      StackEvents: [
        {
          LogicalResourceId: 'Rbac',
          ResourceStatus: 'DELETE_FAILED',
          ResourceStatusReason: 'cluster unreachable',
          Timestamp: new Date(Date.now() + 1000),
        } as never,
      ],
    });
    await expect(applyUninstall(plan, deps())).rejects.toThrow(
      'stack gnt ended DELETE_FAILED: Rbac: DELETE_FAILED: cluster unreachable',
    );
    expect(order).toEqual(['policy workers-a', 'delete stack']);
  });
});
