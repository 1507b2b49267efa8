// A drain longer than one invocation on the real plane: the handler gets a short
// invocation budget, hands the drain on through the (stubbed) topic, heart-beats, resumes
// from the cluster's state, and completes the lifecycle action exactly once. A hand-off
// delivered twice is carried on by one delivery only (the node annotation's
// compare-and-swap against the real API server's optimistic concurrency).
import { describe, expect, it } from 'vitest';
import {
  byDrainer,
  createDeployment,
  createKwokNode,
  eventsFor,
  newInstanceId,
  podsOn,
  readAudit,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, blockDrainer, plane } from './head.js';

// Each invocation may work 4 s (9 s budget minus the 5 s margin).
const remainingMs = 9_000;

describe('a drain longer than one invocation', () => {
  const drainer = blockDrainer(
    { handOff: true, drainTimeoutSeconds: 120, loadBalancerDelaySeconds: 2 },
    { namespace: 'long' },
  );

  it('hands on, heart-beats, resumes and completes once', async () => {
    const instanceId = newInstanceId();
    await createKwokNode(a, 'long-1', instanceId, { scenario: 'long' });
    await createKwokNode(a, 'long-2', newInstanceId(), { scenario: 'long' });
    await waitNodeReady(a, 'long-1');
    await waitNodeReady(a, 'long-2');
    // The pod on long-1 takes 14 s to shut down: longer than three invocations.
    await a.kubectl('cordon', 'long-2');
    await createDeployment(a, 'long', 'slow', 1, {
      nodeSelector: { scenario: 'long' },
      deleteDelay: '14s',
      terminationGracePeriodSeconds: 60,
    });
    await waitDeploymentReady(a, 'long', 'slow', 1);
    await a.kubectl('uncordon', 'long-2');
    expect(
      (await podsOn(a, 'long-1')).map((p) => p.metadata?.name ?? '').filter((n) => n.startsWith('slow')),
    ).toHaveLength(1);
    const since = Date.now();

    const statuses: unknown[] = [await drainer.terminate(instanceId, { remainingMs })];
    while (drainer.handOffs.length >= statuses.length) {
      statuses.push(await drainer.deliver(drainer.handOffs[statuses.length - 1]!, { remainingMs }));
    }

    const outcomes = statuses.map((r) => (r as { records: { status: string }[] }).records[0]!.status);
    expect(outcomes.at(-1)).toBe('drained');
    expect(outcomes.slice(0, -1).every((s) => s === 'handed-off')).toBe(true);
    const handOffs = drainer.handOffs.length;
    expect(handOffs).toBeGreaterThanOrEqual(2);
    // One heartbeat as each invocation starts (verify) and one before each hand-off.
    expect(drainer.heartbeats).toHaveLength(2 * handOffs + 1);
    expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toEqual([
      expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
    ]);
    // The eviction happened once; later invocations found it terminating and waited.
    const evictions = readAudit(
      plane,
      (e) => byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.namespace === 'long',
    );
    expect(evictions).toHaveLength(1);
    const node = await a.core.readNode({ name: 'long-1' });
    expect(node.metadata?.annotations?.['graceful-node-termination/hand-off']).toMatch(
      new RegExp(`/${handOffs}/[^/]+$`),
    );
    expect((await eventsFor(a, 'Node', 'long-1')).map((e) => e.reason)).toEqual([
      'DrainStarted',
      'Cordoned',
      'Drained',
      'LifecycleActionCompleted',
    ]);
    console.log(
      `[long drain] ${handOffs} hand-offs, ${drainer.heartbeats.length} heartbeats, ${((drainer.completions.at(-1)!.atMs - since) / 1000).toFixed(1)} s to completion`,
    );
  });

  it('lets only one of two concurrent deliveries of a hand-off carry on', async () => {
    const instanceId = newInstanceId();
    await createKwokNode(a, 'long-3', instanceId, { scenario: 'long-dup' });
    await waitNodeReady(a, 'long-3');
    await createDeployment(a, 'long', 'slower', 1, {
      nodeSelector: { scenario: 'long-dup' },
      deleteDelay: '30s',
      terminationGracePeriodSeconds: 60,
    });
    await waitDeploymentReady(a, 'long', 'slower', 1);
    const before = drainer.handOffs.length;

    await drainer.terminate(instanceId, { remainingMs });
    const message = drainer.handOffs[before]!;
    const [x, y] = await Promise.all([
      drainer.deliver(message, { remainingMs }),
      drainer.deliver(message, { remainingMs }),
    ]);

    const statuses = [x, y].map((r) => (r as { records: { status: string }[] }).records[0]!.status).sort();
    expect(statuses).toEqual(['handed-off', 'superseded']);
    expect(drainer.handOffs.length - before).toBe(2);
  });
});
