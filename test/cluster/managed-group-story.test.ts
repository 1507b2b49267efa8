// Scenario a: what EKS does for a managed node, read back from the audit log; then the same
// drain authenticated through KUBECONFIG_PATH.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  byDrainer,
  createDaemonSet,
  createDeployment,
  createKwokNode,
  ensureNamespace,
  eventsFor,
  newInstanceId,
  podsOn,
  readAudit,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { standsDownMessage } from '../../lambda/termination/claim.js';
import { startDrainer, statusOf, type Drainer } from './drainer.js';
import { kubeconfigDrainerUser } from './plane/plane.js';
import { a, plane } from './head.js';

describe('the managed-node-group story', () => {
  const node = 'story-1';
  const instanceId = newInstanceId();
  let drainer: Drainer;

  beforeAll(async () => {
    await ensureNamespace(a, 'story');
    await createKwokNode(a, node, instanceId, { scenario: 'story' });
    await waitNodeReady(a, node);
    const onStory = { nodeSelector: { scenario: 'story' } };
    await createDeployment(a, 'story', 'nginx', 1, onStory);
    await createDeployment(a, 'kube-system', 'coredns-story', 1, {
      ...onStory,
      priorityClassName: 'system-cluster-critical',
    });
    await createDaemonSet(a, 'kube-system', 'aws-node-story', onStory);
    await createDaemonSet(a, 'kube-system', 'kube-proxy-story', onStory);
    await waitDeploymentReady(a, 'story', 'nginx', 1);
    await waitDeploymentReady(a, 'kube-system', 'coredns-story', 1);
    await until(
      'DaemonSet pods on the node',
      30_000,
      async () => (await podsOn(a, node)).filter((p) => p.status?.phase === 'Running').length === 4,
    );
    // Somewhere for the replacements to go.
    await createKwokNode(a, 'story-2', newInstanceId(), { scenario: 'story' });
    await waitNodeReady(a, 'story-2');
    drainer = startDrainer(plane, { loadBalancerDelaySeconds: 3 });
  });
  afterAll(() => drainer?.restore());

  it('labels, cordons, evicts exactly the two non-DaemonSet pods, then completes CONTINUE', async () => {
    const before = (await podsOn(a, node)).map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
    const since = Date.now();

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'drained', instanceId }] });
    const writes = readAudit(
      plane,
      (e) =>
        byDrainer(e) && e.atMs >= since - 1000 && !['get', 'list', 'watch'].includes(e.verb) && e.resource !== 'events',
    );
    expect(writes.map((e) => [e.verb, e.resource, e.subresource ?? '', e.name, e.code])).toEqual([
      ['patch', 'nodes', '', node, 200],
      // The node lifecycle conditions (KEP-5683): MaintenancePlanned and DrainInProgress, then Drained.
      ['patch', 'nodes', 'status', node, 200],
      ['create', 'pods', 'eviction', before.find((p) => p.startsWith('story/nginx'))!.split('/')[1], 201],
      ['create', 'pods', 'eviction', before.find((p) => p.includes('coredns-story'))!.split('/')[1], 201],
      ['patch', 'nodes', 'status', node, 200],
    ]);
    // One merge patch: our owner label, the load-balancer label, the cordon, our drain record
    // and our claim on it, which name the action by a hash of its token, never the token itself;
    // conditional on the node as read (its resourceVersion: a conflict is read again).
    expect(writes[0]!.requestObject).toEqual({
      metadata: {
        resourceVersion: expect.stringMatching(/^\d+$/),
        labels: {
          'graceful-node-termination/owner': 'graceful-node-termination',
          'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
        },
        annotations: {
          'graceful-node-termination/drain': expect.stringMatching(
            /^\{"action":"sha256:[0-9a-f]{32}","hook":"workers-terminate","notifiedAt":"[^"]+","startedAt":"[^"]+","updatedAt":"[^"]+","set":\["exclude-from-load-balancers","cordon"\]\}$/,
          ),
          // The first invocation's claim on the drain (count 0, its request id): a second delivery stands down.
          'graceful-node-termination/hand-off': expect.stringMatching(/^sha256:[0-9a-f]{32}\/0\/.+$/),
        },
      },
      spec: { unschedulable: true },
    });
    expect(writes.every((e) => e.userAgent.startsWith('graceful-node-termination/'))).toBe(true);

    // Then, after the load-balancer wait, CompleteLifecycleAction CONTINUE, once.
    expect(drainer.completions).toHaveLength(1);
    expect(drainer.completions[0]).toMatchObject({ instanceId, result: 'CONTINUE', outcome: 'completed' });
    expect(drainer.completions[0]!.atMs - writes.at(-1)!.atMs).toBeGreaterThanOrEqual(3_000);

    // DaemonSet pods stay; the evicted ones were replaced on the other node.
    const after = (await podsOn(a, node)).map((p) => p.metadata?.name ?? '');
    expect(after.every((name) => name.startsWith('aws-node-story') || name.startsWith('kube-proxy-story'))).toBe(true);
    await waitDeploymentReady(a, 'story', 'nginx', 1);

    const events = await eventsFor(a, 'Node', node);
    expect(events.map((e) => e.reason)).toEqual(['DrainStarted', 'Cordoned', 'Drained', 'LifecycleActionCompleted']);
    const node1 = await a.core.readNode({ name: node });
    expect(node1.spec?.unschedulable).toBe(true);
  });

  // SNS delivers at least once: the second delivery finds the drain taken up (the first invocation's claim, written
  // with its marks) and stands down; one drain, one completion, each pod evicted once.
  it('the same notification delivered twice, even concurrently, ends in the same state without error, drained once', async () => {
    const token = 'duplicate-token';
    const instance2 = newInstanceId();
    await createKwokNode(a, 'story-3', instance2, { scenario: 'story-dup' });
    await waitNodeReady(a, 'story-3');
    await createDeployment(a, 'story', 'web', 2, { nodeSelector: { scenario: 'story-dup' } });
    await waitDeploymentReady(a, 'story', 'web', 2);
    // Where the replacements go once story-3 is cordoned.
    await createKwokNode(a, 'story-4', newInstanceId(), { scenario: 'story-dup' });
    await waitNodeReady(a, 'story-4');

    const since = Date.now();
    const results = await Promise.all([
      drainer.terminate(instance2, { token }),
      drainer.terminate(instance2, { token }),
    ]);

    expect(results.map((r) => statusOf(r)).sort()).toEqual(['drained', 'superseded']);
    expect(results).toEqual([0, 1].map(() => ({ records: [expect.objectContaining({ instanceId: instance2 })] })));
    const forToken = drainer.completions.filter((c) => c.token === token);
    expect(forToken.map((c) => c.outcome)).toEqual(['completed']);
    expect(drainer.logs.some((l) => l['message'] === standsDownMessage)).toBe(true);
    const evicted = readAudit(
      plane,
      (e) =>
        byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.namespace === 'story' && e.code === 201,
    ).map((e) => e.name);
    expect(evicted).toHaveLength(2);
    expect(new Set(evicted).size).toBe(2);
    expect(drainer.logs.filter((l) => l['level'] === 'ERROR' || l['level'] === 'WARN')).toEqual([]);
  });
});

// KUBECONFIG_PATH mode (clusters outside EKS): the same drain, authenticated by a kubeconfig
// with a relative CA path and a token file, as a member of the shipped ClusterRole's group.
describe('the same drain in kubeconfig mode', () => {
  const node = 'kubeconfig-1';
  const instanceId = newInstanceId();
  let drainer: Drainer;

  beforeAll(async () => {
    await ensureNamespace(a, 'kubeconfig');
    await createKwokNode(a, node, instanceId, { scenario: 'kubeconfig' });
    await waitNodeReady(a, node);
    await createDeployment(a, 'kubeconfig', 'web', 1, { nodeSelector: { scenario: 'kubeconfig' } });
    await waitDeploymentReady(a, 'kubeconfig', 'web', 1);
    await createKwokNode(a, 'kubeconfig-2', newInstanceId(), { scenario: 'kubeconfig' });
    await waitNodeReady(a, 'kubeconfig-2');
    drainer = startDrainer(plane, { kubeconfig: plane.drainerKubeconfig });
  });
  afterAll(() => drainer?.restore());

  it('drains the node as the kubeconfig user and completes CONTINUE', async () => {
    const since = Date.now();

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'drained', instanceId }] });
    expect(drainer.completions.map((c) => [c.instanceId, c.result, c.outcome])).toEqual([
      [instanceId, 'CONTINUE', 'completed'],
    ]);
    await until('the evicted pod gone from the node', 10_000, async () => (await podsOn(a, node)).length === 0);
    // By arrival: a watch of the earlier drainer is logged when it ends, which can be now.
    const requests = readAudit(plane, (e) => byDrainer(e) && e.receivedMs >= since);
    expect(requests.length).toBeGreaterThan(0);
    expect(new Set(requests.map((e) => e.user))).toEqual(new Set([kubeconfigDrainerUser]));
    expect(requests.filter((e) => e.subresource === 'eviction').map((e) => e.code)).toEqual([201]);
    expect((await eventsFor(a, 'Node', node)).map((e) => e.reason)).toContain('LifecycleActionCompleted');
  });
});
