// The RBAC installer's CloudFormation contract: it always answers, names bad input, and a
// Delete never wedges the stack. Applying to a real API server is in the cluster suite.
import { describe, expect, it } from 'vitest';
import { parsePhysicalId, physicalIdFor } from '../../../lambda/installer/custom-resource.js';
import {
  createInstallerHandler,
  isCloudFormationResponseUrl,
  planFor,
  type ClusterAdminAccess,
  type CustomResourceEvent,
  type CustomResourceResponse,
  type InstallerSettings,
} from '../../../lambda/installer/rbac-installer.js';
import { rbacObjects, rbacRulesFor } from '../../../lambda/installer/rbac.js';
import { MemoryLog } from '../../fakes/fake-world.js';

function event(overrides: Partial<CustomResourceEvent> = {}): CustomResourceEvent {
  return {
    RequestType: 'Create',
    ResponseURL:
      'https://cloudformation-custom-resource-response-euwest1.s3.eu-west-1.amazonaws.com/arn%3Aaws%3Acloudformation%3Aeu-west-1%3A123456789012%3Astack/gnt/1%7CRbac%7Creq-1?X-Amz-Signature=abc',
    StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/gnt/1',
    RequestId: 'req-1',
    LogicalResourceId: 'Rbac',
    ResourceProperties: { ClusterName: 'prod', KubernetesGroup: 'graceful-node-termination' },
    ...overrides,
  };
}

const settings: InstallerSettings = {
  name: 'graceful-node-termination-0a1b2c3d',
  clusterName: 'prod',
  group: 'graceful-node-termination',
  deadlinePolicy: 'force',
  region: 'eu-west-1',
  stackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/gnt/1',
};

function installer(connect: (clusterName: string) => Promise<never>, overrides: Partial<InstallerSettings> = {}) {
  const responses: CustomResourceResponse[] = [];
  const log = new MemoryLog();
  const steps: string[] = [];
  const access: ClusterAdminAccess = {
    grant: async () => void steps.push('grant'),
    revoke: async () => void steps.push('revoke'),
  };
  const handle = createInstallerHandler({
    settings: { ...settings, ...overrides },
    connect: (name) => (steps.push('connect'), connect(name)),
    respond: async (_url, response) => void responses.push(response),
    access,
    log,
    sleep: async () => {},
    authRetryMs: 0,
  });
  return { handle, responses, log, steps };
}

describe('RBAC installer custom resource', () => {
  it('answers FAILED naming the setting when its environment lacks one', async () => {
    const { handle, responses } = installer(() => Promise.reject(new Error('must not connect')), { group: '' });
    await handle(event());
    expect(responses).toEqual([
      expect.objectContaining({ Status: 'FAILED', RequestId: 'req-1', LogicalResourceId: 'Rbac' }),
    ]);
    expect(responses[0]!.Reason).toMatch(/KUBERNETES_GROUP must be a non-empty string/);
  });

  it('refuses a system: group', async () => {
    const { handle, responses } = installer(() => Promise.reject(new Error('must not connect')), {
      group: 'system:masters',
    });
    await handle(event());
    expect(responses[0]).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/system:/) });
  });

  it('takes its cluster and group from its own environment, never from the invoking event', async () => {
    const asked: string[] = [];
    const { handle } = installer(async (clusterName) => {
      asked.push(clusterName);
      throw new Error('stop here');
    });
    await handle(
      event({ ResourceProperties: { ClusterName: 'someone-elses-cluster', KubernetesGroup: 'system:masters' } }),
    );
    expect(asked).toEqual(['prod']);
  });

  it("refuses a ResponseURL that is not CloudFormation's: nothing applied, nothing sent, no access granted", async () => {
    const { handle, responses, log, steps } = installer(() => Promise.reject(new Error('must not connect')));
    await handle(event({ ResponseURL: 'https://attacker.example/collect' }));
    expect(responses).toEqual([]);
    expect(steps).toEqual([]);
    expect(log.lines[0]).toMatchObject({ level: 'error', fields: { host: 'attacker.example' } });
  });

  it.each([
    ['https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x', 'us-east-1', true],
    ['https://cloudformation-custom-resource-response-euwest1.s3.eu-west-1.amazonaws.com/x', 'eu-west-1', true],
    ['https://cloudformation-custom-resource-response-euwest1.s3-eu-west-1.amazonaws.com/x', 'eu-west-1', true],
    ['https://cloudformation-custom-resource-response-cnnorth1.s3.cn-north-1.amazonaws.com.cn/x', 'cn-north-1', true],
    [
      'https://cloudformation-custom-resource-response-usgovwest1.s3.us-gov-west-1.amazonaws.com/x',
      'us-gov-west-1',
      true,
    ],
    ['https://cloudformation-custom-resource-response-usisoeast1.s3.us-iso-east-1.c2s.ic.gov/x', 'us-iso-east-1', true],
    ['https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x', 'eu-west-1', false],
    ['http://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x', 'us-east-1', false],
    ['https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com.evil.example/x', 'us-east-1', false],
    ['https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com:8443/x', 'us-east-1', false],
  ])("knows CloudFormation's response bucket: %s in %s is %s", (url, region, ok) => {
    expect(isCloudFormationResponseUrl(url, region)).toBe(ok);
  });

  it('refuses a request that names another stack before it connects to anything', async () => {
    const { handle, responses, steps } = installer(() => Promise.reject(new Error('must not connect')));
    await handle(
      event({
        StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/other/9',
        RequestType: 'Delete',
        PhysicalResourceId: physicalIdFor(settings.name, settings.group),
      }),
    );
    expect(steps).toEqual([]);
    expect(responses[0]).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/stack\/other/) });
  });

  it('plans a Delete only for objects of its own: its name, the fixed name of the versions before, or (owner-checked) a renamed deployment', () => {
    const del = (id: string) => planFor(event({ RequestType: 'Delete', PhysicalResourceId: id }), settings);
    expect(del(physicalIdFor(settings.name, settings.group))).toEqual({
      kind: 'delete',
      name: settings.name,
      unownedOk: true,
    });
    expect(del('graceful-node-termination-rbac')).toEqual({
      kind: 'delete',
      name: 'graceful-node-termination',
      unownedOk: true,
    });
    // Another deployment's objects: only those whose owner annotation names this stack.
    expect(del(physicalIdFor('team-b-drainer', 'team-b'))).toEqual({
      kind: 'delete',
      name: 'team-b-drainer',
      unownedOk: false,
    });
    // The Delete CloudFormation sends for the id a group change replaced: drop the old group, delete nothing.
    expect(del(physicalIdFor(settings.name, 'old-group'))).toEqual({ kind: 'unbind-old' });
    expect(del(`${settings.name}-rbac`)).toEqual({ kind: 'unbind-old' });
    expect(del('nonsense')).toMatchObject({ kind: 'nothing' });
    expect(parsePhysicalId(physicalIdFor('a-b', 'g'))).toEqual({
      name: 'a-b',
      groupHash: expect.stringMatching(/^[0-9a-f]{8}$/),
    });
  });

  it('keeps the old group bound while a group change is under way (a new physical id), not on a plain update', () => {
    expect(
      planFor(
        event({ RequestType: 'Update', PhysicalResourceId: physicalIdFor(settings.name, 'old-group') }),
        settings,
      ),
    ).toEqual({ kind: 'apply', keepOldGroups: true });
    expect(
      planFor(
        event({ RequestType: 'Update', PhysicalResourceId: physicalIdFor(settings.name, settings.group) }),
        settings,
      ),
    ).toEqual({ kind: 'apply', keepOldGroups: false });
  });

  it('holds cluster admin only while it works: granted before it connects, revoked after, even on failure', async () => {
    const { handle, steps } = installer(() => Promise.reject(new Error('eks:DescribeCluster prod failed')));
    await handle(event());
    expect(steps).toEqual(['grant', 'connect', 'revoke']);
  });

  it('grants pods delete only with the force policy', () => {
    const verbs = (policy: string) => rbacRulesFor(policy).find((r) => r.resources.includes('pods'))!.verbs;
    expect(verbs('force')).toContain('delete');
    expect(verbs('leave')).not.toContain('delete');
    expect(JSON.stringify(rbacObjects('g', 'leave')[0])).not.toContain('delete');
  });

  it('answers FAILED with the reason when the cluster cannot be reached on Create', async () => {
    const { handle, responses } = installer(() =>
      Promise.reject(new Error('eks:DescribeCluster prod failed: ResourceNotFoundException')),
    );
    await handle(event());
    expect(responses[0]).toMatchObject({
      Status: 'FAILED',
      Reason: expect.stringMatching(/ResourceNotFoundException/),
    });
  });

  it('answers FAILED on a Delete that cannot reach the cluster, naming what it leaves behind', async () => {
    const { handle, responses } = installer(() =>
      Promise.reject(new Error('eks:DescribeCluster prod failed: ResourceNotFoundException')),
    );
    const id = physicalIdFor(settings.name, settings.group);
    await handle(event({ RequestType: 'Delete', PhysicalResourceId: id }));
    expect(responses).toEqual([
      expect.objectContaining({
        Status: 'FAILED',
        PhysicalResourceId: id,
        Reason: expect.stringMatching(
          /left behind: ClusterRole, ClusterRoleBinding, FlowSchema and PriorityLevelConfiguration graceful-node-termination-0a1b2c3d/,
        ),
      }),
    ]);
  });
});

describe('flow control for the drainer', () => {
  it("renders in rbac.yaml exactly the FlowSchema and PriorityLevelConfiguration the installer applies, for the drainer's group only", async () => {
    const { loadAll } = await import('js-yaml');
    const { renderRbacYaml } = await import('../../../lambda/installer/rbac-yaml.js');
    const { flowControlObjects } = await import('../../../lambda/installer/flow-control.js');
    const { installedObjects } = await import('../../../lambda/installer/installed-objects.js');
    const docs = loadAll(renderRbacYaml('team-drainers', 'force', 'gnt-1')) as { kind: string }[];
    const { readingObjects } = await import('../../../lambda/installer/reading-rbac.js');
    expect(docs.map((d) => d.kind)).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'Namespace',
      'Role',
      'RoleBinding',
      'PriorityLevelConfiguration',
      'FlowSchema',
    ]);
    expect(docs.slice(2, 5)).toEqual(JSON.parse(JSON.stringify(readingObjects('team-drainers', 'gnt-1'))));
    expect(docs.slice(5)).toEqual(JSON.parse(JSON.stringify(flowControlObjects('team-drainers', 'gnt-1'))));
    expect(installedObjects('team-drainers', 'force', 'gnt-1').map((o) => o.kind)).toEqual(docs.map((d) => d.kind));
    const schema = flowControlObjects('team-drainers', 'gnt-1')[1] as unknown as {
      spec: { rules: { subjects: unknown[] }[]; priorityLevelConfiguration: { name: string } };
    };
    expect(schema.spec.rules.map((r) => r.subjects)).toEqual([[{ kind: 'Group', group: { name: 'team-drainers' } }]]);
    expect(schema.spec.priorityLevelConfiguration.name).toBe('gnt-1');
  });
});
