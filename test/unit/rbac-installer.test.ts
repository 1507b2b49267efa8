// The RBAC installer's CloudFormation contract: it always answers, names bad input, and a
// Delete never wedges the stack. Applying to a real API server is in the cluster suite.
import { describe, expect, it } from 'vitest';
import { createInstallerHandler, isCloudFormationResponseUrl, type CustomResourceEvent, type CustomResourceResponse, type InstallerSettings } from '../../lambda/rbac-installer.js';
import { rbacObjects, rbacRulesFor } from '../../lambda/rbac.js';
import { MemoryLog } from '../fakes/fake-world.js';

function event(overrides: Partial<CustomResourceEvent> = {}): CustomResourceEvent {
  return {
    RequestType: 'Create',
    ResponseURL: 'https://cloudformation-custom-resource-response-euwest1.s3.eu-west-1.amazonaws.com/arn%3Aaws%3Acloudformation%3Aeu-west-1%3A123456789012%3Astack/gnt/1%7CRbac%7Creq-1?X-Amz-Signature=abc',
    StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/gnt/1',
    RequestId: 'req-1',
    LogicalResourceId: 'Rbac',
    ResourceProperties: { ClusterName: 'prod', KubernetesGroup: 'graceful-node-termination' },
    ...overrides,
  };
}

function installer(connect: (clusterName: string) => Promise<never>, settings: Partial<InstallerSettings> = {}) {
  const responses: CustomResourceResponse[] = [];
  const log = new MemoryLog();
  const handle = createInstallerHandler({
    settings: { name: 'graceful-node-termination-0a1b2c3d', clusterName: 'prod', group: 'graceful-node-termination', deadlinePolicy: 'force', ...settings },
    connect,
    respond: async (_url, response) => void responses.push(response),
    log,
    sleep: async () => {},
    authRetryMs: 0,
  });
  return { handle, responses, log };
}

describe('RBAC installer custom resource', () => {
  it('answers FAILED naming the setting when its environment lacks one', async () => {
    const { handle, responses } = installer(() => Promise.reject(new Error('must not connect')), { group: '' });
    await handle(event());
    expect(responses).toEqual([expect.objectContaining({ Status: 'FAILED', RequestId: 'req-1', LogicalResourceId: 'Rbac' })]);
    expect(responses[0]!.Reason).toMatch(/KUBERNETES_GROUP must be a non-empty string/);
  });

  it('refuses a system: group', async () => {
    const { handle, responses } = installer(() => Promise.reject(new Error('must not connect')), { group: 'system:masters' });
    await handle(event());
    expect(responses[0]).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/system:/) });
  });

  it('takes its cluster and group from its own environment, never from the invoking event', async () => {
    const asked: string[] = [];
    const { handle } = installer(async (clusterName) => {
      asked.push(clusterName);
      throw new Error('stop here');
    });
    await handle(event({ ResourceProperties: { ClusterName: 'someone-elses-cluster', KubernetesGroup: 'system:masters' } }));
    expect(asked).toEqual(['prod']);
  });

  it('refuses a ResponseURL that is not CloudFormation\'s: nothing applied, nothing sent', async () => {
    const { handle, responses, log } = installer(() => Promise.reject(new Error('must not connect')));
    await handle(event({ ResponseURL: 'https://attacker.example/collect' }));
    expect(responses).toEqual([]);
    expect(log.lines[0]).toMatchObject({ level: 'error', fields: { host: 'attacker.example' } });
    expect(isCloudFormationResponseUrl('https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x')).toBe(true);
    expect(isCloudFormationResponseUrl('https://cloudformation-custom-resource-response-cnnorth1.s3.cn-north-1.amazonaws.com.cn/x')).toBe(true);
    expect(isCloudFormationResponseUrl('http://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x')).toBe(false);
    expect(isCloudFormationResponseUrl('https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com.evil.example/x')).toBe(false);
  });

  it('deletes only objects of ours: its own name, or the fixed name of versions before deployment names', async () => {
    const { objectsOf } = await import('../../lambda/rbac-installer.js');
    expect(objectsOf('graceful-node-termination-0a1b2c3d-rbac', 'graceful-node-termination-0a1b2c3d')).toBe('graceful-node-termination-0a1b2c3d');
    expect(objectsOf('graceful-node-termination-rbac', 'graceful-node-termination-0a1b2c3d')).toBe('graceful-node-termination');
    expect(objectsOf('team-a-drainer-rbac', 'team-a-drainer')).toBe('team-a-drainer');
    expect(objectsOf('cluster-admin-rbac', 'team-a-drainer')).toBeUndefined();
    expect(objectsOf('something-else', 'team-a-drainer')).toBeUndefined();
  });

  it('grants pods delete only with the force policy', () => {
    const verbs = (policy: string) => rbacRulesFor(policy).find((r) => r.resources.includes('pods'))!.verbs;
    expect(verbs('force')).toContain('delete');
    expect(verbs('leave')).not.toContain('delete');
    expect(JSON.stringify(rbacObjects('g', 'leave')[0])).not.toContain('delete');
  });

  it('answers FAILED with the reason when the cluster cannot be reached on Create', async () => {
    const { handle, responses } = installer(() => Promise.reject(new Error('eks:DescribeCluster prod failed: ResourceNotFoundException')));
    await handle(event());
    expect(responses[0]).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/ResourceNotFoundException/) });
  });

  it('answers SUCCESS on Delete even when the cluster is already gone, keeping the physical id', async () => {
    const { handle, responses } = installer(() => Promise.reject(new Error('eks:DescribeCluster prod failed: ResourceNotFoundException')));
    await handle(event({ RequestType: 'Delete', PhysicalResourceId: 'graceful-node-termination-rbac' }));
    expect(responses).toEqual([expect.objectContaining({ Status: 'SUCCESS', PhysicalResourceId: 'graceful-node-termination-rbac' })]);
  });
});

describe('flow control for the drainer', () => {
  it('renders in rbac.yaml exactly the FlowSchema and PriorityLevelConfiguration the installer applies, for the drainer\'s group only', async () => {
    const { loadAll } = await import('js-yaml');
    const { renderRbacYaml, flowControlObjects, installedObjects } = await import('../../lambda/rbac.js');
    const docs = loadAll(renderRbacYaml('team-drainers', 'force', 'gnt-1')) as { kind: string }[];
    expect(docs.map((d) => d.kind)).toEqual(['ClusterRole', 'ClusterRoleBinding', 'PriorityLevelConfiguration', 'FlowSchema']);
    expect(docs.slice(2)).toEqual(JSON.parse(JSON.stringify(flowControlObjects('team-drainers', 'gnt-1'))));
    expect(installedObjects('team-drainers', 'force', 'gnt-1').map((o) => o.kind)).toEqual(docs.map((d) => d.kind));
    const schema = flowControlObjects('team-drainers', 'gnt-1')[1] as unknown as { spec: { rules: { subjects: unknown[] }[]; priorityLevelConfiguration: { name: string } } };
    expect(schema.spec.rules.map((r) => r.subjects)).toEqual([[{ kind: 'Group', group: { name: 'team-drainers' } }]]);
    expect(schema.spec.priorityLevelConfiguration.name).toBe('gnt-1');
  });
});
