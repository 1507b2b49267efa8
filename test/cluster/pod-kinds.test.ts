// Scenarios e, f, g, h: which pods are evicted, waited for, reported or left alone.
import { describe, expect, it } from 'vitest';
import {
  byDrainer,
  createDeployment,
  createKwokNode,
  createPod,
  eventsFor,
  newInstanceId,
  podsOn,
  readAudit,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, blockDrainer, plane } from './head.js';

describe('pod kinds', () => {
  // A short load-balancer wait: a pod that tolerates the cordon usually lands back during it.
  const drainer = blockDrainer({ drainTimeoutSeconds: 60, loadBalancerDelaySeconds: 2 }, { namespace: 'kinds' });

  async function nodeWithInstance(name: string): Promise<string> {
    const instanceId = newInstanceId();
    await createKwokNode(a, name, instanceId, { scenario: name });
    await waitNodeReady(a, name);
    return instanceId;
  }

  const running = (name: string) =>
    until(
      `pod ${name} Running`,
      30_000,
      async () => (await a.core.readNamespacedPod({ namespace: 'kinds', name })).status?.phase === 'Running',
    );

  it('evicts an unmanaged pod and an emptyDir pod, leaves a completed Job pod and a mirror pod alone (e)', async () => {
    const node = 'kinds-e';
    const instanceId = await nodeWithInstance(node);
    await createPod(a, 'kinds', 'bare', { nodeName: node });
    await createPod(a, 'kinds', 'scratch', { nodeName: node, emptyDir: true });
    const nodeObj = await a.core.readNode({ name: node });
    await a.core.createNamespacedPod({
      namespace: 'kinds',
      body: {
        metadata: {
          name: 'static-web',
          annotations: { 'kubernetes.io/config.mirror': 'static-web-hash', 'kubernetes.io/config.source': 'file' },
          ownerReferences: [
            { apiVersion: 'v1', kind: 'Node', name: node, uid: nodeObj.metadata!.uid!, controller: true },
          ],
        },
        spec: {
          nodeName: node,
          containers: [{ name: 'web', image: 'registry.k8s.io/pause:3.10' }],
          automountServiceAccountToken: false,
        },
      },
    });
    await a.batch.createNamespacedJob({
      namespace: 'kinds',
      body: {
        metadata: { name: 'report' },
        spec: {
          template: {
            metadata: { annotations: { 'pod-complete.stage.kwok.x-k8s.io/delay': '0s' } },
            spec: {
              restartPolicy: 'Never',
              nodeName: node,
              containers: [{ name: 'job', image: 'registry.k8s.io/pause:3.10' }],
              automountServiceAccountToken: false,
            },
          },
        },
      },
    });
    await Promise.all(['bare', 'scratch', 'static-web'].map(running));
    await until('Job pod Succeeded', 30_000, async () =>
      (await podsOn(a, node)).some(
        (p) => p.metadata?.labels?.['job-name'] === 'report' && p.status?.phase === 'Succeeded',
      ),
    );

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'drained', instanceId }] });
    const evicted = readAudit(
      plane,
      (e) => byDrainer(e) && e.subresource === 'eviction' && e.namespace === 'kinds',
    ).map((e) => e.name);
    expect(evicted.sort()).toEqual(['bare', 'scratch']);
    const left = (await podsOn(a, node)).map((p) => p.metadata?.name ?? '');
    expect(left).toContain('static-web');
    expect(left.some((n) => n.startsWith('report-'))).toBe(true);
    expect(left).not.toContain('bare');
    expect(left).not.toContain('scratch');
  });

  it('waits for a pod with a long termination grace period before completing (f)', async () => {
    const node = 'kinds-f';
    const instanceId = await nodeWithInstance(node);
    await createPod(a, 'kinds', 'slow', { nodeName: node, terminationGracePeriodSeconds: 60, deleteDelay: '8s' });
    await running('slow');
    let goneAtMs = 0;
    const watcher = until(
      'slow pod gone',
      60_000,
      async () => {
        try {
          await a.core.readNamespacedPod({ namespace: 'kinds', name: 'slow' });
          return false;
        } catch {
          goneAtMs = Date.now();
          return true;
        }
      },
      50,
    );
    const started = Date.now();

    const result = await drainer.terminate(instanceId);
    await watcher;

    expect(result).toEqual({ records: [{ status: 'drained', instanceId }] });
    const completion = drainer.completions.find((c) => c.instanceId === instanceId)!;
    expect(goneAtMs - started).toBeGreaterThanOrEqual(8_000);
    // Completed only after the pod had really gone (the watcher polls every 50 ms).
    expect(completion.atMs).toBeGreaterThanOrEqual(goneAtMs - 100);
  });

  it('reports a pod that tolerates every taint and lands back on the cordoned node, without chasing it (g)', async () => {
    const node = 'kinds-g';
    const instanceId = await nodeWithInstance(node);
    await createDeployment(a, 'kinds', 'sticky', 1, {
      nodeSelector: { scenario: node },
      tolerations: [{ operator: 'Exists' }],
    });
    await waitDeploymentReady(a, 'kinds', 'sticky', 1);

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'drained', instanceId }] });
    const evictions = readAudit(
      plane,
      (e) => byDrainer(e) && e.subresource === 'eviction' && e.name?.startsWith('sticky') === true,
    );
    expect(evictions).toHaveLength(1);
    const events = await eventsFor(a, 'Node', node);
    expect(events.find((e) => e.reason === 'PodRescheduledOnDrainingNode')).toMatchObject({
      type: 'Warning',
      message: expect.stringMatching(/^Pod kinds\/sticky-.* tolerates node.kubernetes.io\/unschedulable/),
    });
    // It is there again, on the cordoned node.
    expect((await podsOn(a, node)).some((p) => p.metadata?.name?.startsWith('sticky'))).toBe(true);
  });

  it('completes CONTINUE when the node is already gone (h)', async () => {
    const instanceId = newInstanceId();
    const since = Date.now();

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'node-not-found', instanceId }] });
    expect(drainer.completions.find((c) => c.instanceId === instanceId)).toMatchObject({
      result: 'CONTINUE',
      outcome: 'completed',
    });
    const writes = readAudit(
      plane,
      (e) => byDrainer(e) && e.atMs >= since && ['create', 'patch', 'update', 'delete'].includes(e.verb),
    );
    expect(writes).toEqual([]);
  });
});
