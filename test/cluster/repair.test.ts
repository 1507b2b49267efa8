// Node auto repair on the real plane (issue 30): kwok nodes whose status conditions are
// patched as the EKS node monitoring agent would set them, the real handler on the scheduled
// event, Auto Scaling stubbed at the SDK edge. A node whose NetworkingReady stayed False past
// its rule is marked Unhealthy exactly once and drained by our own terminate hook while a
// second bad node waits for the parallel limit; a storm repairs nothing and writes the storm
// metric; a node that recovers before its rule fires is left alone.
import { describe, expect, it } from 'vitest';
import { repairHeldMessage } from '../../lambda/cluster/events/log-messages.js';
import { repairAnnotation } from '../../lambda/cluster/marks/mark-keys.js';
import { autoScalingGroupName, startDrainer, statusOf, type Drainer } from './drainer.js';
import {
  byDrainer,
  createDeployment,
  createKwokNode,
  ensureNamespace,
  eventsFor,
  newInstanceId,
  podsOn,
  readAudit,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, plane } from './head.js';

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

/** The agent's condition on the node, as a status patch (merged by type with kwok's own conditions). */
function setCondition(
  node: string,
  type: string,
  status: 'True' | 'False',
  since: string,
  reason = status === 'True' ? 'NetworkingIsReady' : 'IPAMDNotReady',
): void {
  const condition = {
    type,
    status,
    reason,
    message: `${type} ${status}`,
    lastHeartbeatTime: new Date().toISOString(),
    lastTransitionTime: since,
  };
  a.kubectl(
    'patch',
    'node',
    node,
    '--subresource=status',
    '--type=strategic',
    '-p',
    JSON.stringify({ status: { conditions: [condition] } }),
  );
}

async function nodes(drainer: Drainer, prefix: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 1; n <= count; n++) {
    const id = newInstanceId();
    await createKwokNode(a, `${prefix}-${n}`, id, { scenario: prefix });
    await waitNodeReady(a, `${prefix}-${n}`);
    setCondition(`${prefix}-${n}`, 'NetworkingReady', 'True', minutesAgo(600));
    drainer.groups.set(id, autoScalingGroupName);
    ids.push(id);
  }
  return ids;
}

const reasons = async (node: string) =>
  (await eventsFor(a, 'Node', node)).map((e) => e.reason).filter((r) => r.startsWith('Repair'));

describe('node auto repair', () => {
  it('replaces a node bad past its rule exactly once, drained by the terminate hook, while the second waits for the parallel limit; leaves a recovered node alone', async () => {
    await ensureNamespace(a, 'repair');
    const drainer = startDrainer(plane, { repair: 'on' });
    try {
      const ids = await nodes(drainer, 'repair', 4);
      await createDeployment(a, 'repair', 'web', 2, { nodeSelector: { scenario: 'repair' } });
      await waitDeploymentReady(a, 'repair', 'web', 2);
      a.kubectl('cordon', 'repair-2', 'repair-3', 'repair-4');
      a.kubectl('rollout', 'restart', 'deployment/web', '-n', 'repair');
      await waitDeploymentReady(a, 'repair', 'web', 2);
      a.kubectl('uncordon', 'repair-2', 'repair-3', 'repair-4');
      setCondition('repair-1', 'NetworkingReady', 'False', minutesAgo(35));
      setCondition('repair-2', 'NetworkingReady', 'False', minutesAgo(31));
      // Bad, but inside its 30 minutes: it recovers before the rule fires.
      setCondition('repair-4', 'NetworkingReady', 'False', minutesAgo(20));

      expect(statusOf(await drainer.reconcile())).toBe('reconciled');
      expect(drainer.unhealthy).toEqual([ids[0]]);
      const marked = await a.core.readNode({ name: 'repair-1' });
      expect(JSON.parse(marked.metadata!.annotations![repairAnnotation]!)).toMatchObject({
        action: 'replace',
        condition: 'NetworkingReady',
        reason: 'IPAMDNotReady',
        instanceId: ids[0],
      });
      expect(await reasons('repair-1')).toEqual(['RepairReplacing']);
      expect(await reasons('repair-2')).toEqual(['RepairDeferred']);

      // Auto Scaling replaces the Unhealthy instance: its terminate hook reaches our drainer.
      setCondition('repair-4', 'NetworkingReady', 'True', new Date().toISOString());
      drainer.terminating.add(ids[0]!);
      expect(statusOf(await drainer.terminate(ids[0]!))).toBe('drained');
      expect((await podsOn(a, 'repair-1')).filter((p) => p.metadata?.namespace === 'repair')).toEqual([]);
      await waitDeploymentReady(a, 'repair', 'web', 2);

      // The next pass: still once, and the second still waits while the first is on its way out.
      await drainer.reconcile();
      expect(drainer.unhealthy).toEqual([ids[0]]);
      expect(await reasons('repair-2')).toEqual(['RepairDeferred', 'RepairDeferred']);

      // The instance is gone: the second gets its turn.
      drainer.groups.delete(ids[0]!);
      drainer.terminating.delete(ids[0]!);
      await a.core.deleteNode({ name: 'repair-1' });
      await drainer.reconcile();
      expect(drainer.unhealthy).toEqual([ids[0], ids[1]]);
      expect(await reasons('repair-4')).toEqual([]);
      expect((await a.core.readNode({ name: 'repair-4' })).metadata?.annotations?.[repairAnnotation]).toBeUndefined();
      expect(drainer.unhealthy).not.toContain(ids[3]);
    } finally {
      drainer.restore();
    }
  });

  it('in a storm (more than 20 % of more than 5 nodes unhealthy) repairs nothing: RepairHeld, the alarmed line and the storm metric', async () => {
    const drainer = startDrainer(plane, { repair: 'on' });
    try {
      await nodes(drainer, 'storm', 6);
      setCondition('storm-1', 'NetworkingReady', 'False', minutesAgo(40));
      setCondition('storm-2', 'NetworkingReady', 'False', minutesAgo(40));
      const since = Date.now();
      await drainer.reconcile();
      expect(drainer.unhealthy).toEqual([]);
      expect(await reasons('storm-1')).toEqual(['RepairHeld']);
      expect((await eventsFor(a, 'Node', 'storm-2')).find((e) => e.reason === 'RepairHeld')?.message).toMatch(
        /storm control: 2 of its 6 nodes are unhealthy/,
      );
      expect(drainer.logs.some((l) => l['message'] === repairHeldMessage)).toBe(true);
      const metric = drainer.logs.find((l) => l['RepairStorms'] !== undefined);
      expect(metric?.['RepairStorms']).toBe(1);
      // Nothing was written to the storm's nodes but Events. The same pass may tidy what other
      // files left on the shared plane (a node another test left marked is released), so the
      // check is on this group's nodes, not on every write of the pass.
      const writes = readAudit(
        plane,
        (e) => byDrainer(e) && e.atMs >= since && ['patch', 'update', 'create', 'delete'].includes(e.verb),
      );
      expect(
        writes.filter((e) => e.resource !== 'events' && (e.resource !== 'nodes' || e.name?.startsWith('storm-'))),
      ).toEqual([]);
    } finally {
      drainer.restore();
    }
  });
});
