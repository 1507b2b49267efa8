// The Kubernetes versions the RBAC installer applies to: 1.29 and later (flowcontrol v1). An older
// cluster is refused by the version GET /version names, before anything is written; a Delete
// never asks (it must not wedge the stack). The API server is a stub KubeHttp.
import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../../lambda/adapters/kubernetes/kube-api-error.js';
import { type KubeHttp } from '../../../lambda/adapters/kubernetes/kube-http.js';
import { physicalIdFor } from '../../../lambda/installer/custom-resource.js';
import {
  createInstallerHandler,
  type CustomResourceEvent,
  type CustomResourceResponse,
} from '../../../lambda/installer/rbac-installer.js';
import {
  minimumKubernetesVersion,
  readServerVersion,
  requireSupportedServer,
  requireSurgeServer,
} from '../../../lambda/installer/server-version.js';
import { ConfigError } from '../../../lambda/shared/errors.js';
import { MemoryLog } from '../../fakes/fake-world.js';

const stackId = 'arn:aws:cloudformation:eu-west-1:123456789012:stack/gnt/1';
const name = 'graceful-node-termination-0a1b2c3d';
const group = 'graceful-node-termination';

/** An API server that answers GET /version with `version`, knows no object, and records writes. */
function apiServer(version: unknown) {
  const calls: string[] = [];
  const kube: KubeHttp = {
    request: async <T>(method: string, path: string): Promise<T> => {
      calls.push(`${method} ${path}`);
      if (method === 'GET' && path === '/version') return version as T;
      if (method === 'GET') throw new KubeApiError(404, { reason: 'NotFound' }, {}, `GET ${path}`);
      return {} as T;
    },
    watch: () => {
      throw new Error('the installer never watches');
    },
  };
  return { kube, calls, writes: () => calls.filter((c) => !c.startsWith('GET')) };
}

function installerOn(kube: KubeHttp) {
  const responses: CustomResourceResponse[] = [];
  const steps: string[] = [];
  const handle = createInstallerHandler({
    settings: { name, clusterName: 'prod', group, deadlinePolicy: 'force', region: 'eu-west-1', stackId },
    connect: async () => ({ server: 'https://stub.invalid', requestOptions: async () => ({}) }),
    http: () => kube,
    respond: async (_url, response) => void responses.push(response),
    access: { grant: async () => void steps.push('grant'), revoke: async () => void steps.push('revoke') },
    log: new MemoryLog(),
    sleep: async () => void steps.push('sleep'),
    authRetryMs: 60_000,
  });
  return { handle, responses, steps };
}

function request(overrides: Partial<CustomResourceEvent> = {}): CustomResourceEvent {
  return {
    RequestType: 'Create',
    ResponseURL:
      'https://cloudformation-custom-resource-response-euwest1.s3.eu-west-1.amazonaws.com/x?X-Amz-Signature=abc',
    StackId: stackId,
    RequestId: 'req-1',
    LogicalResourceId: 'Rbac',
    ResourceProperties: {},
    ...overrides,
  };
}

const eks = (minor: number) => ({
  major: '1',
  minor: `${minor}+`,
  gitVersion: `v1.${minor}.4-eks-0a1b2c3`,
  platform: 'linux/amd64',
});

describe('the Kubernetes versions the RBAC installer applies to', () => {
  it('reads the version from GET /version: gitVersion first (EKS answers minor "29+"), major and minor otherwise', async () => {
    expect(await readServerVersion(apiServer(eks(34)).kube)).toEqual({
      major: 1,
      minor: 34,
      gitVersion: 'v1.34.4-eks-0a1b2c3',
    });
    expect(await readServerVersion(apiServer({ major: '1', minor: '31+' }).kube)).toEqual({
      major: 1,
      minor: 31,
      gitVersion: '1.31',
    });
    await expect(readServerVersion(apiServer({ kind: 'Status' }).kube)).rejects.toThrow(
      /GET \/version named no Kubernetes version: \{"kind":"Status"\}/,
    );
  });

  it('refuses a cluster older than 1.29 with a ConfigError naming the version found and the minimum, before it writes anything, without retrying', async () => {
    expect(minimumKubernetesVersion).toEqual({ major: 1, minor: 29 });
    const server = apiServer(eks(28));
    const { handle, responses, steps } = installerOn(server.kube);
    await handle(request());
    expect(responses).toEqual([expect.objectContaining({ Status: 'FAILED', RequestId: 'req-1' })]);
    expect(responses[0]!.Reason).toMatch(
      /Kubernetes v1\.28\.4-eks-0a1b2c3 \(1\.28\); graceful-node-termination needs 1\.29 or later/,
    );
    expect(server.writes()).toEqual([]);
    // Cluster admin is still handed back, and a bad version is not waited out.
    expect(steps).toEqual(['grant', 'revoke']);
    expect(server.calls).toEqual(['GET /version']);
  });

  it('applies on 1.29 and later: the version is read first, then the seven objects', async () => {
    for (const minor of [29, 31, 34]) {
      const server = apiServer(eks(minor));
      const { handle, responses } = installerOn(server.kube);
      await handle(request());
      expect(responses).toEqual([expect.objectContaining({ Status: 'SUCCESS' })]);
      expect(server.calls[0]).toBe('GET /version');
      expect(server.writes()).toHaveLength(7);
    }
  });

  it('also checks before an Update, and never before a Delete (a stack on an old cluster can still be removed)', async () => {
    const update = apiServer(eks(27));
    const installer = installerOn(update.kube);
    await installer.handle(request({ RequestType: 'Update', PhysicalResourceId: physicalIdFor(name, group) }));
    expect(installer.responses[0]).toMatchObject({
      Status: 'FAILED',
      Reason: expect.stringMatching(/1\.27.*needs 1\.29 or later/),
    });
    const del = apiServer(eks(27));
    const deleting = installerOn(del.kube);
    await deleting.handle(request({ RequestType: 'Delete', PhysicalResourceId: physicalIdFor(name, group) }));
    expect(deleting.responses[0]).toMatchObject({ Status: 'SUCCESS' });
    expect(del.calls).not.toContain('GET /version');
  });

  it('is a ConfigError, so the installer does not wait it out like a propagating access entry', async () => {
    await expect(requireSupportedServer(apiServer(eks(26)).kube)).rejects.toBeInstanceOf(ConfigError);
    await expect(requireSupportedServer(apiServer(eks(29)).kube)).resolves.toMatchObject({ major: 1, minor: 29 });
  });

  it('refuses surge before evict below 1.30, where its ValidatingAdmissionPolicy is not served as v1', async () => {
    expect(() => requireSurgeServer(readVersion(29))).toThrow(/surge before evict needs 1\.30 or later/);
    expect(() => requireSurgeServer(readVersion(30))).not.toThrow();
  });
});

const readVersion = (minor: number) => ({ major: 1, minor, gitVersion: `v1.${minor}.4-eks-0a1b2c3` });
