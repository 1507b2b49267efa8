// The RBAC installer's CloudFormation contract: it always answers, names bad input, and a
// Delete never wedges the stack. Applying to a real API server is in the cluster suite.
import { describe, expect, it } from 'vitest';
import { createInstallerHandler, type CustomResourceEvent, type CustomResourceResponse } from '../../lambda/rbac-installer.js';
import { MemoryLog } from '../fakes/fake-world.js';

function event(overrides: Partial<CustomResourceEvent> = {}): CustomResourceEvent {
  return {
    RequestType: 'Create',
    ResponseURL: 'https://cloudformation-custom-resource-response.example/abc',
    StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/gnt/1',
    RequestId: 'req-1',
    LogicalResourceId: 'Rbac',
    ResourceProperties: { ClusterName: 'prod', KubernetesGroup: 'graceful-node-termination' },
    ...overrides,
  };
}

function installer(connect: () => Promise<never>) {
  const responses: CustomResourceResponse[] = [];
  const handle = createInstallerHandler({
    connect,
    respond: async (_url, response) => void responses.push(response),
    log: new MemoryLog(),
    sleep: async () => {},
    authRetryMs: 0,
  });
  return { handle, responses };
}

describe('RBAC installer custom resource', () => {
  it('answers FAILED naming the field when a property is missing', async () => {
    const { handle, responses } = installer(() => Promise.reject(new Error('must not connect')));
    await handle(event({ ResourceProperties: { ClusterName: 'prod' } }));
    expect(responses).toEqual([expect.objectContaining({ Status: 'FAILED', RequestId: 'req-1', LogicalResourceId: 'Rbac' })]);
    expect(responses[0]!.Reason).toMatch(/ResourceProperties.KubernetesGroup must be a non-empty string/);
  });

  it('refuses a system: group', async () => {
    const { handle, responses } = installer(() => Promise.reject(new Error('must not connect')));
    await handle(event({ ResourceProperties: { ClusterName: 'prod', KubernetesGroup: 'system:masters' } }));
    expect(responses[0]).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/system:/) });
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
