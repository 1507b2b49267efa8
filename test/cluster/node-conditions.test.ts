// The node lifecycle conditions on the real plane (issue 31, KEP-5683): a drain publishes
// MaintenancePlanned and DrainInProgress when it marks the node, DrainInProgress False and
// Drained True when the pods are gone; the kubelet's own conditions stay. When the action is
// over and the reconciler takes the marks back, ours go with them.
import { describe, expect, it } from 'vitest';
import { autoScalingGroupName, startDrainer, statusOf } from './drainer.js';
import {
  createDeployment,
  createKwokNode,
  ensureNamespace,
  newInstanceId,
  readAudit,
  byDrainer,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, plane } from './head.js';

const conditionsOf = async (name: string) =>
  Object.fromEntries(
    ((await a.core.readNode({ name })).status?.conditions ?? []).map((c) => [
      c.type,
      { status: c.status, reason: c.reason, message: c.message },
    ]),
  );

describe('node lifecycle conditions', () => {
  it('are published through the drain and taken back with the marks', async () => {
    await ensureNamespace(a, 'conditions');
    const instanceId = newInstanceId();
    await createKwokNode(a, 'conditions-1', instanceId, { scenario: 'conditions' });
    await waitNodeReady(a, 'conditions-1');
    await createDeployment(a, 'conditions', 'web', 2, { nodeSelector: { scenario: 'conditions' } });
    await waitDeploymentReady(a, 'conditions', 'web', 2);
    const drainer = startDrainer(plane);
    try {
      drainer.groups.set(instanceId, autoScalingGroupName);
      const since = Date.now();
      expect(statusOf(await drainer.terminate(instanceId))).toBe('drained');
      const after = await conditionsOf('conditions-1');
      expect(after['MaintenancePlanned']).toMatchObject({ status: 'True', reason: 'AutoScalingTermination' });
      expect(after['DrainInProgress']).toMatchObject({ status: 'False', reason: 'DrainComplete' });
      expect(after['Drained']).toMatchObject({ status: 'True', reason: 'DrainComplete' });
      expect(after['Ready']?.status).toBe('True');
      // Through the status subresource, twice: planned and in progress, then drained.
      const writes = readAudit(
        plane,
        (e) =>
          byDrainer(e) && e.atMs >= since && e.resource === 'nodes' && e.subresource === 'status' && e.verb === 'patch',
      );
      expect(writes.length).toBe(2);

      // The action is over (the instance left the group): one reconciler pass takes the marks back, ours with them.
      drainer.groups.delete(instanceId);
      // As the reconciler's next pass finds it, minutes later (a fresh record is left alone).
      const record = JSON.parse(
        (await a.core.readNode({ name: 'conditions-1' })).metadata!.annotations!['graceful-node-termination/drain']!,
      ) as Record<string, string>;
      const aged = { ...record, updatedAt: new Date(Date.parse(record['updatedAt']!) - 10 * 60_000).toISOString() };
      a.kubectl(
        'annotate',
        'node',
        'conditions-1',
        '--overwrite',
        `graceful-node-termination/drain=${JSON.stringify(aged)}`,
      );
      await drainer.reconcile();
      const back = await conditionsOf('conditions-1');
      expect(Object.keys(back).filter((t) => ['MaintenancePlanned', 'DrainInProgress', 'Drained'].includes(t))).toEqual(
        [],
      );
      expect(back['Ready']?.status).toBe('True');
    } finally {
      drainer.restore();
    }
  });
});
