// Scenario i: the drainer's identity, authenticated the EKS way through the plane's token
// webhook and bound only by the shipped ClusterRole, may do what a drain needs and nothing more.
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admin, byDrainer, drainerKubeConfig, readAudit } from './kube.js';
import { drainerUsername } from './plane/token-webhook.js';
import { plane } from './head.js';

const drainerApi = async (clusterName?: string): Promise<CoreV1Api> =>
  (await drainerKubeConfig(plane, clusterName)).makeApiClient(CoreV1Api);

async function status(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (error) {
    if (error instanceof ApiException) return error.code;
    throw error;
  }
}

describe('least privilege', () => {
  it('authenticates a handler-minted token as the drainer group', async () => {
    const api = await drainerApi();
    expect(await status(api.listNode({ limit: 1 }))).toBe(200);
  });

  it('rejects a token minted for another cluster (401)', async () => {
    const api = await drainerApi('some-other-cluster');
    expect(await status(api.listNode({ limit: 1 }))).toBe(401);
  });

  it.each([
    ['delete a node', (api: CoreV1Api) => api.deleteNode({ name: 'anything' })],
    ['delete a namespace', (api: CoreV1Api) => api.deleteNamespace({ name: 'kube-system' })],
    [
      'update a pod',
      (api: CoreV1Api) =>
        api.patchNamespacedPod({ namespace: 'default', name: 'anything', body: { metadata: { labels: { a: 'b' } } } }),
    ],
    ['read secrets', (api: CoreV1Api) => api.listNamespacedSecret({ namespace: 'kube-system' })],
    [
      'update a node wholesale',
      (api: CoreV1Api) => api.replaceNode({ name: 'anything', body: { metadata: { name: 'anything' } } }),
    ],
    [
      'create pods',
      (api: CoreV1Api) =>
        api.createNamespacedPod({
          namespace: 'default',
          body: { metadata: { name: 'x' }, spec: { containers: [{ name: 'x', image: 'x' }] } },
        }),
    ],
  ])('is forbidden to %s (403)', async (_what, call) => {
    expect(await status(call(await drainerApi()))).toBe(403);
  });

  it('every rule of the shipped ClusterRole and Role was used by the suite (no unused rights)', async () => {
    // This file runs last (test/cluster/sequencer.ts), after every scenario.
    // With surge before evict's role (surge.yaml, applied by surge.test.ts) when the suite applied it.
    const roles = ['graceful-node-termination', 'graceful-node-termination-surge'].flatMap((name) => {
      const out = admin(plane).kubectl('get', 'clusterrole', name, '-o', 'json', '--ignore-not-found');
      return out.trim() === '' ? [] : [JSON.parse(out) as { rules: { resources: string[]; verbs: string[] }[] }];
    });
    // And the Role on leases in the deployment's namespace: the shared load-balancer readings (settle.test.ts).
    const readings = admin(plane).kubectl(
      'get',
      'role',
      'graceful-node-termination-target-readings',
      '-n',
      'graceful-node-termination',
      '-o',
      'json',
    );
    roles.push(JSON.parse(readings) as { rules: { resources: string[]; verbs: string[] }[] });
    expect(roles.length).toBeGreaterThan(1);
    const used = new Set(
      readAudit(plane, (e) => byDrainer(e) && e.user === drainerUsername && e.code < 400).map(
        (e) => `${e.resource}${e.subresource ? `/${e.subresource}` : ''}:${e.verb}`,
      ),
    );
    const granted = roles.flatMap((role) =>
      role.rules.flatMap((r) => r.resources.flatMap((res) => r.verbs.map((v) => `${res}:${v}`))),
    );
    expect(granted.filter((g) => !used.has(g))).toEqual([]);
  });
});
