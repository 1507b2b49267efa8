// Batch work on the real plane: a running Job pod is not evicted; the node's other pods
// drain at once, and the action completes only after the Job has finished.
import { describe, expect, it } from 'vitest';
import {
  byDrainer,
  createDeployment,
  createKwokNode,
  eventsFor,
  newInstanceId,
  podsOn,
  readAudit,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, blockDrainer, plane } from './head.js';

describe('a Job running on the terminating node', () => {
  const drainer = blockDrainer(
    { handOff: true, drainTimeoutSeconds: 60, loadBalancerDelaySeconds: 1 },
    { namespace: 'batch' },
  );

  it('is allowed to finish before the node is released', async () => {
    const instanceId = newInstanceId();
    await createKwokNode(a, 'batch-1', instanceId, { scenario: 'batch' });
    await waitNodeReady(a, 'batch-1');
    await createDeployment(a, 'batch', 'api', 1, { nodeSelector: { scenario: 'batch' } });
    await waitDeploymentReady(a, 'batch', 'api', 1);
    await a.batch.createNamespacedJob({
      namespace: 'batch',
      body: {
        metadata: { name: 'nightly' },
        spec: {
          backoffLimit: 0,
          template: {
            // kwok completes it 10 s after it is Ready (delay and latest end both 10 s).
            metadata: {
              annotations: {
                'pod-complete.stage.kwok.x-k8s.io/delay': '10s',
                'pod-complete.stage.kwok.x-k8s.io/jitter-delay': '10s',
              },
            },
            spec: {
              restartPolicy: 'Never',
              nodeSelector: { scenario: 'batch' },
              containers: [{ name: 'job', image: 'registry.k8s.io/pause:3.10' }],
              automountServiceAccountToken: false,
            },
          },
        },
      },
    });
    await until('Job pod Running', 30_000, async () =>
      (await podsOn(a, 'batch-1')).some(
        (p) => p.metadata?.labels?.['job-name'] === 'nightly' && p.status?.phase === 'Running',
      ),
    );
    const since = Date.now();

    const statuses: unknown[] = [await drainer.terminate(instanceId, { remainingMs: 60_000 })];
    while (drainer.handOffs.length >= statuses.length)
      statuses.push(await drainer.deliver(drainer.handOffs[statuses.length - 1]!, { remainingMs: 60_000 }));

    expect((statuses.at(-1) as { records: { status: string }[] }).records[0]!.status).toBe('drained');
    const evictions = readAudit(
      plane,
      (e) => byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.namespace === 'batch',
    ).map((e) => e.name ?? '');
    expect(evictions).toHaveLength(1);
    expect(evictions[0]).toMatch(/^api-/);
    const job = await a.batch.readNamespacedJob({ namespace: 'batch', name: 'nightly' });
    expect(job.status?.succeeded).toBe(1);
    expect(job.status?.failed ?? 0).toBe(0);
    const jobDoneMs = Date.parse(String(job.status?.completionTime ?? ''));
    const completion = drainer.completions.find((c) => c.instanceId === instanceId)!;
    expect(completion).toMatchObject({ result: 'CONTINUE', outcome: 'completed' });
    // completionTime has second precision.
    expect(completion.atMs).toBeGreaterThanOrEqual(jobDoneMs);
    expect((await eventsFor(a, 'Node', 'batch-1')).map((e) => e.reason)).toEqual([
      'DrainStarted',
      'Cordoned',
      'WaitingForBatchPods',
      'Drained',
      'LifecycleActionCompleted',
    ]);
  });
});
