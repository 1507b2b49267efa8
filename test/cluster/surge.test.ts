// Surge before evict on the real plane (docs/surge.md): a one-replica Deployment under a
// minAvailable: 1 budget keeps a Ready pod at every instant while its node drains, and the
// drain ends long before its deadline; maxSurge 0 is refused by name and evicted plainly; the
// admission policy lets the drainer's identity change the restart annotation and nothing else
// of a Deployment; a hand-off in the middle of a surge, or the reconciler after the chain was
// lost, resumes it without a second restart;
// no capacity, hostname anti-affinity with no free node of the app's own, and Deployments a
// GitOps tool or an HPA writes are each refused by name, the last two before any restart.
import { randomUUID } from 'node:crypto';
import { AppsV1Api, ApiException, PatchStrategy, setHeaderOptions, type V1Deployment } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autoScalingGroupName, scheduledEvent, statusOf, startDrainer, type Drainer } from './drainer.js';
import {
  byDrainer,
  surgeFile,
  watchReady,
  createKwokNode,
  createPdb,
  drainerKubeConfig,
  ensureNamespace,
  eventsFor,
  newInstanceId,
  createDeployment,
  readAudit,
  until,
  waitDeploymentReady,
  waitNodeReady,
  type DeploymentOptions,
} from './kube.js';
import { a, plane } from './head.js';
import { createDeploymentApi } from '../../lambda/adapters/kubernetes/deployment-api.js';
import { createKubeHttp } from '../../lambda/adapters/kubernetes/kube-http.js';
import { endpointFromKubeConfig } from '../../scripts/cluster-access.js';

const namespace = 'surge';

/** A Deployment as a user writes one that may surge: a readiness probe, annotated unless told. */
const createApp = (name: string, replicas: number, o: DeploymentOptions & { annotated?: boolean } = {}) =>
  createDeployment(a, namespace, name, replicas, {
    nodeSelector: { scenario: name },
    readinessProbe: true,
    ...(o.annotated === false
      ? {}
      : { deploymentAnnotations: { 'graceful-node-termination/surge-before-evict': 'true' } }),
    ...o,
  });

/** `<name>-1` (draining) runs the app's pods; `<name>-2` is where replacements go. */
async function nodesWithApp(
  name: string,
  replicas: number,
  o: DeploymentOptions = {},
): Promise<{ instanceId: string; node: string }> {
  const instanceId = newInstanceId();
  await createKwokNode(a, `${name}-1`, instanceId, { scenario: name });
  await createKwokNode(a, `${name}-2`, newInstanceId(), { scenario: name });
  await waitNodeReady(a, `${name}-1`);
  await waitNodeReady(a, `${name}-2`);
  a.kubectl('cordon', `${name}-2`);
  // Every pod of the app starts slowly (readyDelay), its replacements too: the restart copies the template.
  await createApp(name, replicas, o);
  await waitDeploymentReady(a, namespace, name, replicas);
  a.kubectl('uncordon', `${name}-2`);
  return { instanceId, node: `${name}-1` };
}

const deploymentPatches = (since: number, name: string) =>
  readAudit(
    plane,
    (e) =>
      byDrainer(e) &&
      e.atMs >= since &&
      e.resource === 'deployments' &&
      e.verb === 'patch' &&
      e.name === name &&
      e.code < 400,
  );

const drainerApps = async () => (await drainerKubeConfig(plane)).makeApiClient(AppsV1Api);

async function patchAs(api: AppsV1Api, name: string, body: object): Promise<{ code: number; message: string }> {
  try {
    await api.patchNamespacedDeployment(
      { namespace, name, body },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    return { code: 200, message: '' };
  } catch (error) {
    if (error instanceof ApiException) return { code: error.code, message: String(error.body) };
    throw error;
  }
}

const restartOnly = (at: string) => ({
  spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': at } } } },
});

/** One terminate with the surge on, the drainer gone after it; `since` for the audit log. */
async function surgeDrain(instanceId: string, o: { drainTimeoutSeconds: number; env?: Record<string, string> }) {
  const d = startDrainer(plane, {
    drainTimeoutSeconds: o.drainTimeoutSeconds,
    env: { SURGE_BEFORE_EVICT: 'true', ...o.env },
  });
  const since = Date.now();
  try {
    const result = await d.terminate(instanceId);
    return { result, since, seconds: (Date.now() - since) / 1000 };
  } finally {
    d.restore();
  }
}

const refusals = async (node: string) => (await eventsFor(a, 'Node', node)).filter((e) => e.reason === 'SurgeRefused');

describe('surge before evict', () => {
  let drainer: Drainer | undefined;
  beforeAll(async () => {
    await ensureNamespace(a, namespace);
    // The drainer's extra rights and the policy that fences them, as a user of rbac.yaml applies them.
    a.kubectl('apply', '-f', surgeFile);
    const api = await drainerApps();
    await createApp('fence', 1, { annotated: false });
    // The policy is enforced once the API server has loaded it: a patch beyond the annotation is
    // denied (each probe changes something, so one that lands early is not a no-op later).
    await until(
      'the surge policy enforced',
      30_000,
      async () => (await patchAs(api, 'fence', { metadata: { labels: { probe: String(Date.now()) } } })).code >= 400,
    );
  });
  afterAll(() => drainer?.restore());

  it('lets the drainer change only the restart annotation of a Deployment', async () => {
    const api = await drainerApps();
    const allowed = await patchAs(api, 'fence', restartOnly(new Date().toISOString().replace(/\.\d+Z$/, 'Z')));
    expect(allowed.code).toBe(200);
    for (const body of [
      { spec: { replicas: 3 } },
      { spec: { template: { metadata: { labels: { extra: 'x' } } } } },
      { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': 'now', other: 'x' } } } } },
      { spec: { template: { spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.9' }] } } } },
      { metadata: { labels: { owner: 'drainer' } } },
      { spec: { paused: true } },
    ]) {
      const denied = await patchAs(api, 'fence', body);
      expect(denied.code, JSON.stringify(body)).toBe(403);
      expect(denied.message).toContain('may change only the restart annotation');
    }
    const d: V1Deployment = await a.apps.readNamespacedDeployment({ namespace, name: 'fence' });
    expect(d.spec?.replicas).toBe(1);
    expect(d.spec?.template.metadata?.labels).toEqual({ app: 'fence' });
  });

  // Two invocations of one drain (a duplicated delivery) must not both restart it: the restart
  // carries the resourceVersion it was decided on, and the API server refuses it once the
  // Deployment changed (eviction/surge-restart.ts; the soak, seed 1, saw two restarts 8 ms apart).
  it('refuses a restart written over a version that is no longer current (409), and the policy admits the precondition', async () => {
    const api = createDeploymentApi(
      createKubeHttp(endpointFromKubeConfig(await drainerKubeConfig(plane)), {
        userAgent: 'surge-test',
        timeoutMs: 10_000,
      }),
    );
    const read = (await api.readDeployment(namespace, 'fence'))!;
    const base = Math.floor(Date.now() / 1000) * 1000;
    const [first, second] = [1, 2].map((s) => new Date(base + s * 1000).toISOString().replace('.000Z', 'Z'));
    expect(await api.restartDeployment(read, first!)).toBe('patched');
    expect(await api.restartDeployment(read, second!)).toBe('conflict');
    expect((await api.readDeployment(namespace, 'fence'))!.restartedAt).toBe(first);
  });

  it('keeps one Ready pod at every instant for a one-replica Deployment under minAvailable: 1, and ends long before the deadline', async () => {
    const { instanceId } = await nodesWithApp('single', 1, { readyDelay: '3s' });
    await createPdb(a, namespace, 'single', 'single', 1);
    const watch = await watchReady(a, namespace, 'single');
    drainer = startDrainer(plane, { drainTimeoutSeconds: 120, env: { SURGE_BEFORE_EVICT: 'true' } });
    const since = Date.now();
    const result = await drainer.terminate(instanceId);
    const seconds = (Date.now() - since) / 1000;
    watch.stop();
    drainer.restore();
    drainer = undefined;

    expect(statusOf(result)).toBe('drained');
    expect(watch.min()).toBe(1);
    expect(seconds).toBeLessThan(60);
    expect(deploymentPatches(since, 'single')).toHaveLength(1);
    const reasons = (await eventsFor(a, 'Node', 'single-1')).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['SurgeStarted', 'SurgeReady', 'Drained']));
    console.log(
      `[surge] one replica under minAvailable: 1 drained in ${seconds.toFixed(1)} s (deadline 120 s), fewest Ready pods ${watch.min()}`,
    );
  });

  it('refuses maxSurge: 0 by name and evicts plainly', async () => {
    const { instanceId } = await nodesWithApp('nosurge', 1, { maxSurge: 0, maxUnavailable: 1 });
    const { result, since } = await surgeDrain(instanceId, { drainTimeoutSeconds: 60 });

    expect(statusOf(result)).toBe('drained');
    expect(deploymentPatches(since, 'nosurge')).toHaveLength(0);
    const refused = await refusals('nosurge-1');
    expect(refused).toHaveLength(1);
    expect(refused[0]!.message).toContain('(max-surge-zero)');
    console.log(`[surge] ${refused[0]!.type} SurgeRefused: ${refused[0]!.message}`);
    const evictions = readAudit(
      plane,
      (e) => byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.namespace === namespace,
    );
    expect(evictions.map((e) => e.code)).toEqual([201]);
  });

  it('refuses by name when the replacement has nowhere to run (the scheduler leaves it Unschedulable), and evicts plainly', async () => {
    // Only the draining node carries the app's label: the scheduler cannot place the replacement.
    const instanceId = newInstanceId();
    await createKwokNode(a, 'nocapacity-1', instanceId, { scenario: 'nocapacity' });
    await waitNodeReady(a, 'nocapacity-1');
    await createApp('nocapacity', 1);
    await waitDeploymentReady(a, namespace, 'nocapacity', 1);
    const { result, since, seconds } = await surgeDrain(instanceId, { drainTimeoutSeconds: 90 });

    expect(statusOf(result)).toBe('drained');
    const refused = await refusals('nocapacity-1');
    expect(refused).toHaveLength(1);
    expect(refused[0]!.message).toContain('(no-capacity)');
    // The restart was made (capacity shows only once the replacement is tried), once; then plain eviction.
    expect(deploymentPatches(since, 'nocapacity')).toHaveLength(1);
    const evictions = readAudit(
      plane,
      (e) =>
        byDrainer(e) &&
        e.atMs >= since &&
        e.subresource === 'eviction' &&
        e.namespace === namespace &&
        e.name?.startsWith('nocapacity-') === true,
    );
    expect(evictions.map((e) => e.code)).toEqual([201]);
    expect(seconds).toBeLessThan(60);
    console.log(`[surge] no capacity: refused after ${seconds.toFixed(1)} s: ${refused[0]!.message}`);
  });

  it('refuses required hostname anti-affinity before any restart when no node the pod may run on is free (its nodeSelector, the taints)', async () => {
    // The cluster has many nodes, but the app runs only on its group's: the other one is tainted for other work.
    const instanceId = newInstanceId();
    await createKwokNode(a, 'oneper-1', instanceId, { scenario: 'oneper' });
    await createKwokNode(a, 'oneper-2', newInstanceId(), { scenario: 'oneper' }, [
      { key: 'dedicated', value: 'batch', effect: 'NoSchedule' },
    ]);
    await waitNodeReady(a, 'oneper-1');
    await waitNodeReady(a, 'oneper-2');
    await createApp('oneper', 1, { onePerNode: true });
    await waitDeploymentReady(a, namespace, 'oneper', 1);
    const { result, since } = await surgeDrain(instanceId, { drainTimeoutSeconds: 60 });

    expect(statusOf(result)).toBe('drained');
    const refused = await refusals('oneper-1');
    expect(refused.map((e) => e.message)).toEqual([expect.stringContaining('(anti-affinity)')]);
    expect(deploymentPatches(since, 'oneper')).toHaveLength(0);
    // One node list, filtered by the template's nodeSelector on the server.
    const lists = readAudit(
      plane,
      (e) =>
        byDrainer(e) &&
        e.atMs >= since &&
        e.resource === 'nodes' &&
        e.verb === 'list' &&
        e.requestURI.includes('labelSelector=scenario'),
    );
    expect(lists).toHaveLength(1);
    const evictions = readAudit(
      plane,
      (e) => byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.name?.startsWith('oneper-') === true,
    );
    expect(evictions.map((e) => e.code)).toEqual([201]);
    console.log(`[surge] ${refused[0]!.type} SurgeRefused: ${refused[0]!.message}`);
  });

  it('never restarts a Deployment an untouchable field manager writes: a GitOps tool, an HPA through the scale subresource', async () => {
    const argo = await nodesWithApp('gitops', 1);
    // Argo CD's controller writes the Deployment (its own field manager in managedFields).
    a.kubectl(
      'label',
      'deployment',
      'gitops',
      '-n',
      namespace,
      'app.kubernetes.io/instance=shop',
      '--field-manager=argocd-controller',
    );
    const hpa = await nodesWithApp('scaled', 2);
    // The HPA controller scales through the scale subresource, as kube-controller-manager.
    await a.apps.patchNamespacedDeploymentScale(
      { namespace, name: 'scaled', body: { spec: { replicas: 1 } }, fieldManager: 'kube-controller-manager' },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until(
      'one replica left',
      30_000,
      async () => (await a.apps.readNamespacedDeployment({ namespace, name: 'scaled' })).status?.replicas === 1,
    );
    const env = { SURGE_UNTOUCHABLE_MANAGERS: 'argocd-controller,kube-controller-manager/scale' };
    for (const [app, { instanceId }] of [
      ['gitops', argo],
      ['scaled', hpa],
    ] as const) {
      const { result, since } = await surgeDrain(instanceId, { drainTimeoutSeconds: 60, env });
      expect(statusOf(result), app).toBe('drained');
      const refused = (await refusals(`${app}-1`)).map((e) => e.message);
      expect(refused, app).toEqual([expect.stringContaining('(untouchable-owner)')]);
      expect(deploymentPatches(since, app), app).toHaveLength(0);
    }
  });

  it('resumes a surge across a hand-off without restarting twice', async () => {
    const { instanceId } = await nodesWithApp('handed', 1, { readyDelay: '10s' });
    await createPdb(a, namespace, 'handed', 'handed', 1);
    drainer = startDrainer(plane, { handOff: true, drainTimeoutSeconds: 120, env: { SURGE_BEFORE_EVICT: 'true' } });
    const since = Date.now();
    // Each invocation may work 4 s (9 s budget minus the 5 s margin); the replacement takes 10 s.
    const statuses: unknown[] = [await drainer.terminate(instanceId, { remainingMs: 9_000 })];
    while (drainer.handOffs.length >= statuses.length)
      statuses.push(await drainer.deliver(drainer.handOffs[statuses.length - 1]!, { remainingMs: 9_000 }));
    drainer.restore();
    drainer = undefined;

    expect(statuses.map(statusOf).at(-1)).toBe('drained');
    expect(statuses.length).toBeGreaterThanOrEqual(2);
    expect(deploymentPatches(since, 'handed')).toHaveLength(1);
    const reasons = (await eventsFor(a, 'Node', 'handed-1')).map((e) => e.reason);
    expect(reasons.filter((r) => r === 'SurgeStarted')).toHaveLength(1);
    expect(reasons).toContain('SurgeReady');
    console.log(`[surge] resumed over ${statuses.length - 1} hand-off(s), 1 restart`);
  });
  it('resumes a surge from the reconciler when the hand-off chain was lost, without restarting twice', async () => {
    const { instanceId, node } = await nodesWithApp('lost', 1, { readyDelay: '12s' });
    await createPdb(a, namespace, 'lost', 'lost', 1);
    drainer = startDrainer(plane, { handOff: true, drainTimeoutSeconds: 600, env: { SURGE_BEFORE_EVICT: 'true' } });
    const d = drainer;
    d.groups.set(instanceId, autoScalingGroupName);
    d.terminating.add(instanceId);
    const token = randomUUID();
    const since = Date.now();
    expect(statusOf(await d.terminate(instanceId, { token, remainingMs: 9_000 }))).toBe('handed-off');
    // Its hand-off is never delivered (SNS lost it, the function was throttled): the chain is
    // lost. As the reconciler finds the record 20 minutes later, its surge still waiting.
    const record = JSON.parse(
      (await a.core.readNode({ name: node })).metadata!.annotations!['graceful-node-termination/drain']!,
    ) as Record<string, unknown>;
    expect(record['surges']).toEqual([expect.objectContaining({ deployment: `${namespace}/lost`, state: 'waiting' })]);
    const aged = {
      ...record,
      updatedAt: new Date(Date.parse(String(record['updatedAt'])) - 20 * 60_000).toISOString(),
    };
    a.kubectl('annotate', 'node', node, '--overwrite', `graceful-node-termination/drain=${JSON.stringify(aged)}`);
    expect(statusOf(await d.invoke(scheduledEvent(), { activeToken: token, activeInstance: instanceId }))).toBe(
      'reconciled',
    );
    expect(d.handOffs).toHaveLength(2);
    const statuses: unknown[] = [];
    for (let next = d.handOffs[1]; next !== undefined; next = d.handOffs[1 + statuses.length])
      statuses.push(await d.deliver(next, { remainingMs: 9_000 }));
    d.restore();
    drainer = undefined;

    expect(statuses.map(statusOf).at(-1)).toBe('drained');
    expect(deploymentPatches(since, 'lost')).toHaveLength(1);
    const reasons = (await eventsFor(a, 'Node', node)).map((e) => e.reason);
    expect(reasons.filter((r) => r === 'SurgeStarted')).toHaveLength(1);
    expect(reasons).toEqual(expect.arrayContaining(['DrainResumed', 'SurgeReady']));
    console.log(`[surge] the reconciler resumed a lost chain; ${statuses.length} invocation(s) after it, 1 restart`);
  });
});
