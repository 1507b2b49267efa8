// Every mark with an owner (issue 19), on the real plane: overlapping refreshes, a refresh
// that ends while its start is still marking, a lost ending event, a warm-pool return admitted
// while the cluster was unreachable, a hand-off chain that was lost: each converges, through
// the events when they come and through the reconciler's scheduled pass when they do not.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshEvent as localRefreshEvent } from '../../demo/instance-refresh.js';
import { boundStrategyTag } from '../../lambda/refresh/strategy-tag.js';
import { refreshStrategyTag } from '../../lambda/shared/group-tags.js';
import { autoScalingGroupName, startDrainer, statusOf } from './drainer.js';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';
import { createKwokNode, eventsFor, newInstanceId, nodeWithDeployment, podsOn, until, waitNodeReady } from './kube.js';
import { a, blockNamespace, plane } from './head.js';

const taintKey = 'graceful-node-termination/outdated';
const refreshEvent = (what: string, refreshId: string) =>
  localRefreshEvent(what, { id: refreshId, group: autoScalingGroupName });
const node = (name: string) => a.core.readNode({ name });
const ourTaints = async (name: string) => ((await node(name)).spec?.taints ?? []).filter((t) => t.key === taintKey);
const ourLabels = async (name: string) =>
  Object.keys((await node(name)).metadata?.labels ?? {}).filter((k) => k.startsWith('graceful-node-termination/'));

/** Dates our drain record's last write back, as the reconciler's next pass, minutes later, finds it. */
async function age(name: string, minutes: number): Promise<void> {
  const raw = (await node(name)).metadata?.annotations?.['graceful-node-termination/drain'];
  const record = JSON.parse(raw!) as Record<string, string>;
  const back = (iso: string | undefined) => (iso ? new Date(Date.parse(iso) - minutes * 60_000).toISOString() : iso);
  const aged = { ...record, updatedAt: back(record['updatedAt']) };
  a.kubectl('annotate', 'node', name, '--overwrite', `graceful-node-termination/drain=${JSON.stringify(aged)}`);
}

describe('marks converge', () => {
  const nodes = ['conv-old-1', 'conv-old-2', 'conv-old-3'].map((name) => ({ name, instanceId: newInstanceId() }));
  beforeAll(async () => {
    for (const n of nodes) await createKwokNode(a, n.name, n.instanceId, { scenario: 'converge' });
    for (const n of nodes) await waitNodeReady(a, n.name);
  });
  afterAll(() => {
    for (const n of nodes) a.kubectl('delete', 'node', n.name, '--wait=false');
  });

  const drainerWithNodes = (o: Parameters<typeof startDrainer>[1] = {}) => {
    const drainer = startDrainer(plane, o);
    for (const n of nodes) {
      drainer.groups.set(n.instanceId, autoScalingGroupName);
      drainer.versions.set(n.instanceId, '1');
    }
    return drainer;
  };

  it("overlapping refreshes: when B starts, A's marks go; when B ends, nothing of ours is left", async () => {
    const drainer = drainerWithNodes();
    try {
      const [refreshA, refreshB] = [randomUUID(), randomUUID()];
      drainer.refreshes.set(refreshA, { status: 'InProgress', desiredVersion: '2' });
      expect(statusOf(await drainer.invoke(refreshEvent('Started', refreshA)))).toBe('refresh-marked');
      expect((await ourTaints('conv-old-1')).map((t) => t.value)).toEqual([refreshA]);
      // A is superseded (an operator started B; A's ending event has not been handled).
      drainer.refreshes.set(refreshA, { status: 'Cancelled', desiredVersion: '2' });
      drainer.refreshes.set(refreshB, { status: 'InProgress', desiredVersion: '3' });
      expect(statusOf(await drainer.invoke(refreshEvent('Started', refreshB)))).toBe('refresh-marked');
      for (const n of nodes) expect((await ourTaints(n.name)).map((t) => t.value)).toEqual([refreshB]);

      drainer.refreshes.set(refreshB, { status: 'Successful', desiredVersion: '3' });
      expect(statusOf(await drainer.invoke(refreshEvent('Succeeded', refreshB)))).toBe('refresh-unmarked');
      for (const n of nodes) {
        expect(await ourTaints(n.name)).toEqual([]);
        expect(await ourLabels(n.name)).toEqual([]);
      }
    } finally {
      drainer.restore();
    }
  });

  describe('a refresh cancelled while its start is still marking (strategy minimal)', () => {
    let proxy: FaultProxy;
    let slow = true;
    beforeAll(async () => {
      // Each mark of these nodes takes 1.5 s to reach the API server while `slow`.
      proxy = await startFaultProxy(plane, {
        intercept: ({ method, url }) =>
          slow && method === 'PATCH' && url.pathname.startsWith('/api/v1/nodes/conv-old-')
            ? { forwardAfterMs: 1_500 }
            : undefined,
      });
    });
    afterAll(() => proxy?.stop());

    it('leaves no node cordoned: the cancel takes back what was marked, the start takes back what it marked after', async () => {
      const drainer = drainerWithNodes({ endpoint: proxy.url });
      try {
        const refreshId = randomUUID();
        drainer.refreshes.set(refreshId, { status: 'InProgress', desiredVersion: '2' });
        drainer.groupTags.set(refreshStrategyTag, boundStrategyTag(refreshId));
        const started = drainer.invoke(refreshEvent('Started', refreshId));
        await until(
          'the first outdated node cordoned',
          20_000,
          async () => (await node('conv-old-1')).spec?.unschedulable === true,
        );
        slow = false;
        drainer.refreshes.set(refreshId, { status: 'Cancelled', desiredVersion: '2' });
        expect(statusOf(await drainer.invoke(refreshEvent('Cancelled', refreshId)))).toBe('refresh-unmarked');
        expect(statusOf(await started)).toBe('refresh-marked');

        for (const n of nodes) {
          expect((await node(n.name)).spec?.unschedulable).toBeFalsy();
          expect(await ourLabels(n.name)).toEqual([]);
        }
        const reasons = (await eventsFor(a, 'Node', 'conv-old-3')).map((e) => e.reason);
        expect(reasons).toEqual(expect.arrayContaining(['MarkedOutdated', 'OutdatedMarksRemoved']));
      } finally {
        drainer.groupTags.clear();
        drainer.restore();
      }
    });
  });

  it("a lost ending event: the reconciler takes the refresh's marks and its strategy tag back", async () => {
    const drainer = drainerWithNodes();
    try {
      const refreshId = randomUUID();
      drainer.refreshes.set(refreshId, { status: 'InProgress', desiredVersion: '2' });
      expect(statusOf(await drainer.invoke(refreshEvent('Started', refreshId)))).toBe('refresh-marked');
      drainer.groupTags.set(refreshStrategyTag, boundStrategyTag(refreshId));
      // It succeeds; its Succeeded event never arrives.
      drainer.refreshes.set(refreshId, { status: 'Successful', desiredVersion: '2' });
      expect(statusOf(await drainer.reconcile())).toBe('reconciled');

      for (const n of nodes) {
        expect(await ourTaints(n.name)).toEqual([]);
        expect(await ourLabels(n.name)).toEqual([]);
      }
      expect(drainer.deletedTags).toEqual([{ group: autoScalingGroupName, key: refreshStrategyTag }]);
      expect(
        (await eventsFor(a, 'Node', 'conv-old-2')).some(
          (e) => e.reason === 'OutdatedMarksRemoved' && /is over \(Successful\)/.test(e.message),
        ),
      ).toBe(true);
    } finally {
      drainer.restore();
    }
  });
});

describe('drain marks converge', () => {
  blockNamespace('converge');

  it('a warm-pool return admitted while the cluster was unreachable keeps our marks only until the next pass', async () => {
    const { instanceId, node: name } = await nodeWithDeployment(a, 'converge', 'warm-unreachable', 1);
    const first = startDrainer(plane, { loadBalancerDelaySeconds: 0 });
    try {
      expect(statusOf(await first.terminate(instanceId, { origin: 'AutoScalingGroup', destination: 'WarmPool' }))).toBe(
        'drained',
      );
    } finally {
      first.restore();
    }
    // It leaves the pool; the cluster cannot be reached: admitted unchecked, marks stay.
    const unreachable = startDrainer(plane, { endpoint: 'https://127.0.0.1:9' });
    try {
      expect(
        statusOf(await unreachable.launch(instanceId, { origin: 'WarmPool', destination: 'AutoScalingGroup' })),
      ).toBe('launch-admitted-unchecked');
    } finally {
      unreachable.restore();
    }
    expect((await node(name)).spec?.unschedulable).toBe(true);

    // The next pass, minutes later: Auto Scaling says the instance is InService, the marks have no owner.
    await age(name, 10);
    const reconciler = startDrainer(plane);
    try {
      reconciler.groups.set(instanceId, autoScalingGroupName);
      expect(statusOf(await reconciler.reconcile())).toBe('reconciled');
    } finally {
      reconciler.restore();
    }
    const after = await node(name);
    expect(after.spec?.unschedulable).toBeFalsy();
    expect(after.metadata?.labels?.['node.kubernetes.io/exclude-from-external-load-balancers']).toBeUndefined();
    expect(await ourLabels(name)).toEqual([]);
    expect((await eventsFor(a, 'Node', name)).find((e) => e.reason === 'DrainMarksRemoved')?.message).toMatch(
      /reconciler found no owner/,
    );
  });

  it('a drain whose hand-off chain was lost is handed on again by the reconciler and completes, by instance id', async () => {
    const { instanceId, node: name } = await nodeWithDeployment(a, 'converge', 'lost-chain', 2, {
      deleteDelay: '20s',
      terminationGracePeriodSeconds: 60,
    });
    const drainer = startDrainer(plane, { handOff: true, drainTimeoutSeconds: 300, loadBalancerDelaySeconds: 1 });
    try {
      const token = randomUUID();
      drainer.groups.set(instanceId, autoScalingGroupName);
      drainer.terminating.add(instanceId);
      // The first invocation hands on; that hand-off is lost (its publish never lands anywhere).
      expect(statusOf(await drainer.terminate(instanceId, { token, remainingMs: 9_000 }))).toBe('handed-off');
      drainer.handOffs.length = 0;
      await age(name, 20);

      expect(statusOf(await drainer.reconcile())).toBe('reconciled');
      const resumed = drainer.handOffs[0]!;
      expect(resumed['LifecycleActionToken']).toBeUndefined();
      expect(resumed['GracefulNodeTerminationHandOff']).toMatchObject({ resumedBy: 'reconciler' });
      expect((await eventsFor(a, 'Node', name)).map((e) => e.reason)).toContain('DrainResumed');

      const statuses = [statusOf(await drainer.deliver(resumed, { remainingMs: 120_000 }))];
      while (statuses.at(-1) === 'handed-off')
        statuses.push(statusOf(await drainer.deliver(drainer.handOffs.at(-1)!, { remainingMs: 120_000 })));
      expect(statuses.at(-1)).toBe('drained');
      expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toEqual([
        expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
      ]);
      expect((await podsOn(a, name)).filter((p) => p.metadata?.namespace === 'converge')).toEqual([]);
    } finally {
      drainer.restore();
    }
  });
});
