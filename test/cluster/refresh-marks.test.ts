// Instance refresh marks on the real plane (issue 14): the handler, given the refresh's
// EventBridge events, taints exactly the nodes whose instances are not on the desired launch
// template version, cordons them with the minimal strategy, and at the end (success or cancel)
// takes back exactly what it set, leaving other taints and other people's cordons alone.
import { randomUUID } from 'node:crypto';
import { refreshEvent as localRefreshEvent } from '../../demo/instance-refresh.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundStrategyTag } from '../../lambda/refresh/strategy-tag.js';
import { refreshStrategyTag } from '../../lambda/shared/group-tags.js';
import { autoScalingGroupName, startDrainer, statusOf, type Drainer } from './drainer.js';
import { createKwokNode, eventsFor, newInstanceId, waitNodeReady } from './kube.js';
import { a, plane } from './head.js';

const taintKey = 'graceful-node-termination/outdated';

const refreshEvent = (what: string, refreshId: string) =>
  localRefreshEvent(what, { id: refreshId, group: autoScalingGroupName });

describe('instance refresh marks', () => {
  let drainer: Drainer;
  const nodes = [
    { name: 'refresh-old-1', instanceId: newInstanceId(), version: '1' },
    { name: 'refresh-old-2', instanceId: newInstanceId(), version: '1' },
    { name: 'refresh-new-1', instanceId: newInstanceId(), version: '2' },
  ];
  const node = (name: string) => a.core.readNode({ name });

  beforeAll(async () => {
    drainer = startDrainer(plane);
    for (const n of nodes) {
      // old-2 carries somebody else's taint, which must survive our marks and their removal.
      await createKwokNode(
        a,
        n.name,
        n.instanceId,
        { scenario: 'refresh' },
        n.name === 'refresh-old-2' ? [{ key: 'team', value: 'payments', effect: 'NoSchedule' }] : [],
      );
      drainer.groups.set(n.instanceId, autoScalingGroupName);
      drainer.versions.set(n.instanceId, n.version);
    }
    for (const n of nodes) await waitNodeReady(a, n.name);
  });
  afterAll(() => drainer?.restore());

  it('taints only the outdated nodes when the refresh starts, and removes exactly that when it succeeds', async () => {
    const refreshId = randomUUID();
    drainer.refreshes.set(refreshId, { status: 'InProgress', desiredVersion: '2' });

    expect(statusOf(await drainer.invoke(refreshEvent('Started', refreshId)))).toBe('refresh-marked');

    for (const name of ['refresh-old-1', 'refresh-old-2']) {
      const n = await node(name);
      expect(n.spec?.taints?.filter((t) => t.key === taintKey)).toEqual([
        expect.objectContaining({ key: taintKey, value: refreshId, effect: 'PreferNoSchedule' }),
      ]);
      expect(n.metadata?.labels?.['graceful-node-termination/refresh']).toBe(refreshId);
      expect(n.spec?.unschedulable).toBeUndefined();
      expect((await eventsFor(a, 'Node', name)).map((e) => e.reason)).toContain('MarkedOutdated');
    }
    expect((await node('refresh-new-1')).spec?.taints ?? []).toEqual([]);

    drainer.refreshes.set(refreshId, { status: 'Successful', desiredVersion: '2' });
    expect(statusOf(await drainer.invoke(refreshEvent('Succeeded', refreshId)))).toBe('refresh-unmarked');

    const old1 = await node('refresh-old-1');
    expect(old1.spec?.taints ?? []).toEqual([]);
    expect(old1.metadata?.labels?.['graceful-node-termination/refresh']).toBeUndefined();
    expect(old1.metadata?.annotations?.['graceful-node-termination/refresh-marks']).toBeUndefined();
    expect((await node('refresh-old-2')).spec?.taints).toEqual([
      { key: 'team', value: 'payments', effect: 'NoSchedule' },
    ]);
  });

  it('with the minimal strategy cordons them, and a cancelled refresh uncordons only what it cordoned', async () => {
    const refreshId = randomUUID();
    drainer.refreshes.set(refreshId, { status: 'InProgress', desiredVersion: '2' });
    drainer.groupTags.set(refreshStrategyTag, boundStrategyTag(refreshId));
    a.kubectl('cordon', 'refresh-old-2'); // an operator's cordon, before the refresh

    expect(statusOf(await drainer.invoke(refreshEvent('Started', refreshId)))).toBe('refresh-marked');
    expect((await node('refresh-old-1')).spec?.unschedulable).toBe(true);
    expect(((await node('refresh-old-1')).spec?.taints ?? []).filter((t) => t.key === taintKey)).toEqual([]);

    drainer.refreshes.set(refreshId, { status: 'Cancelled', desiredVersion: '2' });
    expect(statusOf(await drainer.invoke(refreshEvent('Cancelled', refreshId)))).toBe('refresh-unmarked');

    expect((await node('refresh-old-1')).spec?.unschedulable).toBeUndefined();
    expect((await node('refresh-old-2')).spec?.unschedulable).toBe(true);
    expect(
      (await eventsFor(a, 'Node', 'refresh-old-1')).find(
        (e) => e.reason === 'OutdatedMarksRemoved' && /cancelled/.test(e.message),
      )?.message,
    ).toMatch(/removed what it set \(cordon\)/);
    drainer.groupTags.clear();
  });
});
