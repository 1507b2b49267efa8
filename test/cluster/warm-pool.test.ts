// Warm pools on the real plane: a launch into the pool is completed at once (no node ever
// registers); a scale-in that returns the instance to the pool drains it, and when it leaves
// the pool again its node gets back exactly what our drain took: others' marks stay.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { refreshEvent as localRefreshEvent } from '../../demo/instance-refresh.js';
import { boundStrategyTag } from '../../lambda/refresh/strategy-tag.js';
import { refreshStrategyTag } from '../../lambda/shared/group-tags.js';
import { autoScalingGroupName, startDrainer, statusOf } from './drainer.js';
import {
  byDrainer,
  createKwokNode,
  eventsFor,
  newInstanceId,
  nodeWithDeployment,
  podsOn,
  readAudit,
  until,
  waitNodeReady,
} from './kube.js';
import { a, blockDrainer, plane } from './head.js';

const lbLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';

describe('warm pools', () => {
  const drainer = blockDrainer({ loadBalancerDelaySeconds: 1, launchTimeoutSeconds: 30 }, { namespace: 'warm' });

  it('completes a launch into the warm pool at once, though no node ever registers', async () => {
    const instanceId = newInstanceId();
    const since = Date.now();
    const result = await drainer.launch(instanceId, { origin: 'EC2', destination: 'WarmPool' });

    expect(statusOf(result)).toBe('launch-into-warm-pool');
    expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toEqual([
      expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
    ]);
    expect(Date.now() - since).toBeLessThan(5_000);
    expect(readAudit(plane, (e) => byDrainer(e) && e.atMs >= since)).toEqual([]);
  });

  it('drains an instance going back to the pool, and gives its node back when it leaves the pool', async () => {
    // Somebody else's marks: a label and a taint.
    const { instanceId } = await nodeWithDeployment(a, 'warm', 'warm', 2, {
      labels: { team: 'payments' },
      taints: [{ key: 'dedicated', value: 'payments', effect: 'PreferNoSchedule' }],
    });

    const back = await drainer.terminate(instanceId, { origin: 'AutoScalingGroup', destination: 'WarmPool' });
    expect(statusOf(back)).toBe('drained');
    const stopped = await a.core.readNode({ name: 'warm-1' });
    expect(stopped.spec?.unschedulable).toBe(true);
    expect(stopped.metadata?.labels?.[lbLabel]).toBe('true');
    expect((await podsOn(a, 'warm-1')).filter((p) => p.metadata?.namespace === 'warm')).toEqual([]);
    expect((await eventsFor(a, 'Node', 'warm-1'))[0]?.message).toMatch(/returning instance .* to its warm pool/);

    // It leaves the pool: the launch hook fires for it, its Node object is still there.
    const out = await drainer.launch(instanceId, { origin: 'WarmPool', destination: 'AutoScalingGroup' });

    expect(statusOf(out)).toBe('launch-admitted');
    // The node lifecycle controller's node.kubernetes.io/unschedulable taint follows the cordon a moment later.
    const node = await until('the cordon taint gone with the cordon', 15_000, async () => {
      const n = await a.core.readNode({ name: 'warm-1' });
      return n.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/unschedulable') ? undefined : n;
    });
    expect(node.spec?.unschedulable).toBeFalsy();
    expect(node.metadata?.labels?.[lbLabel]).toBeUndefined();
    expect(node.metadata?.labels?.['team']).toBe('payments');
    expect(node.spec?.taints).toEqual([
      expect.objectContaining({ key: 'dedicated', value: 'payments', effect: 'PreferNoSchedule' }),
    ]);
    expect(
      Object.keys(node.metadata?.annotations ?? {}).filter((k) => k.startsWith('graceful-node-termination/')),
    ).toEqual([]);
    expect((await eventsFor(a, 'Node', 'warm-1')).map((e) => e.reason)).toContain('DrainMarksRemoved');
  });
});

// From the adversarial review of issue 19 (each broke e12925a; was test/cluster/review-attacks.test.ts).
describe('warm pools: a node a refresh cordoned, drained into the pool and back', () => {
  // Found (medium): the refresh leaves its cordon to a drain whose record does not list it.
  it('a node cordoned by a refresh and drained into the warm pool is schedulable again when it comes back', async () => {
    const instanceId = newInstanceId();
    const node = 'review-warm-1';
    await createKwokNode(a, node, instanceId, { scenario: 'review-warm' });
    await waitNodeReady(a, node);
    const drainer = startDrainer(plane, { loadBalancerDelaySeconds: 0 });
    const refreshId = randomUUID();
    const event = (what: string) => localRefreshEvent(what, { id: refreshId, group: autoScalingGroupName });
    try {
      drainer.groups.set(instanceId, autoScalingGroupName);
      drainer.refreshes.set(refreshId, { status: 'InProgress', desiredVersion: '2' });
      drainer.groupTags.set(refreshStrategyTag, boundStrategyTag(refreshId));
      expect(statusOf(await drainer.invoke(event('Started')))).toBe('refresh-marked');
      expect((await a.core.readNode({ name: node })).spec?.unschedulable).toBe(true);

      drainer.states.set(instanceId, 'Warmed:Pending:Wait');
      expect(statusOf(await drainer.terminate(instanceId, { destination: 'WarmPool' }))).toBe('drained');
      drainer.states.set(instanceId, 'Warmed:Stopped');
      drainer.refreshes.set(refreshId, { status: 'Cancelled', desiredVersion: '2' });
      expect(statusOf(await drainer.invoke(event('Cancelled')))).toBe('refresh-unmarked');

      drainer.states.set(instanceId, 'Pending:Wait');
      expect(statusOf(await drainer.launch(instanceId, { origin: 'WarmPool', destination: 'AutoScalingGroup' }))).toBe(
        'launch-admitted',
      );
      const after = await a.core.readNode({ name: node });
      const ours = Object.keys(after.metadata?.labels ?? {}).filter((k) => k.startsWith('graceful-node-termination/'));
      expect({ unschedulable: after.spec?.unschedulable ?? false, ours }).toEqual({ unschedulable: false, ours: [] });
    } finally {
      drainer.restore();
      a.kubectl('delete', 'node', node, '--wait=false');
    }
  });
});
