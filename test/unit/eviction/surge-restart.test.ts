// One restart per drain when two invocations of the same drain run side by side (a duplicated
// delivery, a killed invocation retried): found by the soak, seed 1, where a Deployment was
// restarted twice 8 ms apart for one drain. The restart is written over the version read only;
// a restart made since the drain began is joined.
import { beforeEach, describe, expect, it } from 'vitest';
import type { ClusterEvent, DrainRecord, SurgeMark } from '../../../lambda/cluster/model.js';
import type { DrainMoment } from '../../../lambda/eviction/rules.js';
import { DeploymentSurge } from '../../../lambda/eviction/surge-gate.js';
import { restartedSince, restartOnce, restartTries } from '../../../lambda/eviction/surge-restart.js';
import { TransientError } from '../../../lambda/shared/errors.js';
import { FakeClock, MemoryLog, type FakePod } from '../../fakes/fake-world.js';
import { deployment, FakeSurgeApi, lastReadyPod, surgeOn, surgeRecord } from '../../fixtures/surge.js';

const settings = surgeOn;
const node = { name: 'node-a', uid: 'n-1' };

describe('restartOnce', () => {
  it('writes over the version read', async () => {
    const api = new FakeSurgeApi();
    const out = await restartOnce(api, api.d!, '2026-11-22T10:00:00Z');
    expect(out).toEqual({ kind: 'restarted', d: expect.objectContaining({ restartedAt: '2026-11-22T10:00:00Z' }) });
    expect(api.restarts).toEqual(['2026-11-22T10:00:00Z']);
  });

  it('joins a restart written since the read instead of making a second', async () => {
    const api = new FakeSurgeApi();
    const read = api.d!;
    api.changed({ restartedAt: '2026-11-22T09:59:59Z' });
    const out = await restartOnce(api, read, '2026-11-22T10:00:00Z');
    expect(out).toEqual({ kind: 'joined', d: expect.objectContaining({ restartedAt: '2026-11-22T09:59:59Z' }) });
    expect(api.restarts).toEqual([]);
  });

  it('tries again over a change that is not a restart (status, scale), and gives up as transient when it never settles', async () => {
    const api = new FakeSurgeApi();
    let changes = 1;
    api.beforeRestart = () => (changes-- > 0 ? api.changed({ observedGeneration: 3 }) : undefined);
    expect((await restartOnce(api, api.d!, '2026-11-22T10:00:00Z')).kind).toBe('restarted');
    expect(api.restarts).toHaveLength(1);

    const busy = new FakeSurgeApi();
    busy.beforeRestart = () => busy.changed({ observedGeneration: 3 });
    await expect(restartOnce(busy, busy.d!, '2026-11-22T10:00:00Z')).rejects.toThrow(TransientError);
    expect(busy.restarts).toEqual([]);
    expect(restartTries).toBeGreaterThan(1);
  });

  it('says gone when the Deployment went, or came back as another object under the name', async () => {
    const api = new FakeSurgeApi();
    const read = api.d!;
    api.d = deployment({ uid: 'd-2', resourceVersion: '7' });
    expect(await restartOnce(api, read, '2026-11-22T10:00:00Z')).toEqual({ kind: 'gone' });
    api.d = undefined;
    expect(await restartOnce(api, read, '2026-11-22T10:00:00Z')).toEqual({ kind: 'gone' });
  });

  it('counts a restart since the drain began by whole seconds, as the restart value has them', () => {
    const began = Date.parse('2026-11-22T10:00:00.700Z');
    expect(restartedSince({ restartedAt: '2026-11-22T10:00:00Z' }, began)).toBe('2026-11-22T10:00:00Z');
    expect(restartedSince({ restartedAt: '2026-11-22T09:59:59Z' }, began)).toBeUndefined();
    expect(restartedSince({ restartedAt: undefined }, began)).toBeUndefined();
  });
});

describe('two invocations of one drain', () => {
  let clock: FakeClock;
  let api: FakeSurgeApi;
  let events: ClusterEvent[];
  let record: DrainRecord;
  let old: FakePod;

  beforeEach(() => {
    clock = new FakeClock();
    api = new FakeSurgeApi();
    events = [];
    record = surgeRecord(clock.now());
    old = lastReadyPod(api);
  });

  const gate = (surges: readonly SurgeMark[] = []) =>
    new DeploymentSurge(
      {
        settings,
        node,
        surges,
        saveSurges: (s) => api.saveDrainRecord(node.name, { ...record, updatedAtMs: clock.now(), surges: s }),
        owner: 'gnt',
        drainStartedAtMs: record.startedAtMs,
      },
      {
        api,
        nodes: { drainMarkedNames: async () => new Set(['node-a']) },
        events: { record: async (e) => void events.push(e) },
        clock,
        log: new MemoryLog(),
      },
    );
  const moment = (): DrainMoment => ({
    nowMs: clock.now(),
    force: false,
    drainDeadlineMs: clock.now() + 600_000,
    windowEndMs: clock.now() + 5_000,
    windowMs: 5_000,
    latestDrainEndMs: clock.now() + 900_000,
    tier: 0,
    orderOf: () => 0,
    tierReachedMs: new Map([[0, clock.now()]]),
    attempts: new Map(),
    accepted: new Set(),
  });
  const started = () => events.filter((e) => e.regarding.kind === 'Node' && e.reason === 'SurgeStarted');

  it('the second to look finds the restart of the first and waits with it', async () => {
    const [first, second] = [gate(), gate()];
    expect((await first.held([old], moment())).size).toBe(1);
    clock.advanceTo(clock.now() + 1_500);
    expect((await second.held([old], moment())).size).toBe(1);
    expect(api.restarts).toHaveLength(1);
    expect(second.marks()).toEqual([expect.objectContaining({ state: 'waiting', restartedAt: api.restarts[0] })]);
    expect(started()).toHaveLength(1);
  });

  it('both decide before either writes: the second write is refused (409) and joins the first', async () => {
    const [first, second] = [gate(), gate()];
    // The first invocation's restart lands between the second's read and its write.
    api.beforeRestart = () => {
      api.beforeRestart = () => {};
      void first.held([old], moment());
    };
    const held = await second.held([old], moment());
    await new Promise((r) => setTimeout(r, 0));
    expect(held.size).toBe(1);
    expect(api.restarts).toHaveLength(1);
    expect(second.marks()).toEqual([expect.objectContaining({ state: 'waiting', restartedAt: api.restarts[0] })]);
    expect(started()).toHaveLength(1);
  });

  it('a resumed record whose restart a twin is writing at the same moment is not written twice', async () => {
    const mark: SurgeMark = {
      pod: `default/${old.name}`,
      uid: old.uid,
      deployment: { namespace: 'default', name: 'web' },
      restartedAt: '2026-11-22T10:00:00Z',
      atMs: clock.now(),
      state: 'waiting',
    };
    api.beforeRestart = () => {
      api.beforeRestart = () => {};
      api.changed({ restartedAt: mark.restartedAt });
    };
    expect((await gate([mark]).held([old], moment())).size).toBe(1);
    expect(api.restarts).toEqual([]);
    expect(api.d!.restartedAt).toBe(mark.restartedAt);
  });

  it('a resumed record whose own restart lost to an earlier one of a twin (since the drain began) is not written again', async () => {
    // The twin restarted at the drain's start; this record names a restart a second later, refused then.
    api.changed({ restartedAt: '2026-11-22T10:00:00Z' });
    const mark: SurgeMark = {
      pod: `default/${old.name}`,
      uid: old.uid,
      deployment: { namespace: 'default', name: 'web' },
      restartedAt: '2026-11-22T10:00:01Z',
      atMs: clock.now(),
      state: 'waiting',
    };
    expect((await gate([mark]).held([old], moment())).size).toBe(1);
    expect(api.restarts).toEqual([]);
  });
});
