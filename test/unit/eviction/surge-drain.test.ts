// Surge before evict inside the drain phase (the real NodeDrain, the fake world): the held pod
// is evicted once its replacement is Ready elsewhere, and the deadline policy still wins when
// no replacement ever is.
import { describe, expect, it } from 'vitest';
import { DeadlinePolicy } from '../../../lambda/shared/deadline-policy.js';
import { surgeSettings } from '../../../lambda/shared/surge-variables.js';
import { drain } from '../../../lambda/termination/drain.js';
import { mark } from '../../../lambda/termination/mark.js';
import type { Marked } from '../../../lambda/termination/state.js';
import { pdbBlocks, pod } from '../../fakes/fake-world.js';
import { FakeSurgeApi } from '../../fixtures/surge.js';
import { instanceId, phaseWorld } from '../../fakes/phase-world.js';

const settings = (timeoutSeconds: number) =>
  surgeSettings({
    surgeBeforeEvict: true,
    surgeNamespaces: undefined,
    surgePodSelector: undefined,
    surgeTimeoutSeconds: timeoutSeconds,
    surgeUntouchableManagers: undefined,
  })!;

function world() {
  const w = phaseWorld();
  const api = new FakeSurgeApi();
  Object.assign(w.deps, { surge: api });
  w.cluster.addNode('node-a', instanceId);
  const old = w.cluster.addPod(pod({ name: 'web-abc12-xyz12', terminationMs: 2_000 }));
  api.pods = [
    { name: old.name, uid: old.uid, nodeName: 'node-a', ready: true, terminating: false, unschedulable: false },
  ];
  let replacementReady = false;
  // The budget (minAvailable 1) lets the pod go only once another replica is Ready.
  w.cluster.evictionRules.push(pdbBlocks('web', (p) => p.uid === old.uid && !replacementReady));
  const readyAt = (ms: number) =>
    (api.onRestart = () =>
      w.clock.after(ms, () => {
        replacementReady = true;
        api.pods.push({
          name: 'web-new12-abcde',
          uid: 'new',
          nodeName: 'node-b',
          ready: true,
          terminating: false,
          unschedulable: false,
        });
      }));
  return { w, api, old, readyAt };
}

describe('surge before evict in the drain', () => {
  it('evicts the held pod once its replacement is Ready elsewhere, long before the deadline', async () => {
    const { w, api, old, readyAt } = world();
    readyAt(20_000);
    const t0 = w.clock.now();
    const m = (await mark(w.run({ settings: { surge: settings(300) } }), w.verified())) as Marked;
    const step = await drain(w.run({ settings: { surge: settings(300), deadlinePolicy: DeadlinePolicy.FORCE } }), m);

    expect(step).toMatchObject({ outcome: 'drained', evictedTotal: 1 });
    expect(api.restarts).toHaveLength(1);
    const evictions = w.cluster.calls.filter((c) => c.op === 'evict' && c.target === `default/${old.name}`);
    // Never asked while held: the one eviction comes after the replacement is Ready.
    expect(evictions).toHaveLength(1);
    expect(evictions[0]!.atMs - t0).toBeGreaterThanOrEqual(20_000);
    expect(evictions[0]!.atMs - t0).toBeLessThanOrEqual(22_000);
    expect(w.cluster.reasons()).toEqual(
      expect.arrayContaining(['Node/SurgeStarted', 'Node/SurgeReady', 'Node/Drained']),
    );
    expect((step as unknown as { record: { surges: unknown[] } }).record.surges).toEqual([
      expect.objectContaining({ state: 'ready' }),
    ]);
  });

  it('lets the force policy win when no replacement is ever Ready: held until its force time, then asked once and deleted', async () => {
    const { w, api, old } = world();
    const t0 = w.clock.now();
    const m = (await mark(w.run({ settings: { surge: settings(3600) } }), w.verified())) as Marked;
    const step = await drain(w.run({ settings: { surge: settings(3600), deadlinePolicy: DeadlinePolicy.FORCE } }), m);

    expect(step).toMatchObject({ outcome: 'timed-out' });
    expect(api.restarts).toHaveLength(1);
    expect(w.cluster.reasons()).toContain('Node/SurgeTimedOut');
    expect(w.cluster.events.find((e) => e.reason === 'SurgeTimedOut')?.message).toContain(
      'the drain deadline comes first',
    );
    // Deleted at the deadline (300 s) minus its grace period (30 s), as without surge.
    const deleted = w.cluster.calls.find((c) => c.op === 'delete' && c.target === `default/${old.name}`);
    expect(deleted).toBeDefined();
    expect(Math.round((deleted!.atMs - t0) / 1000)).toBeGreaterThanOrEqual(270);
    expect(Math.round((deleted!.atMs - t0) / 1000)).toBeLessThanOrEqual(273);
  });

  it('under leave, asks the held pod at the deadline at the latest', async () => {
    const { w, old } = world();
    const m = (await mark(w.run({ settings: { surge: settings(3600) } }), w.verified())) as Marked;
    const step = await drain(w.run({ settings: { surge: settings(3600), deadlinePolicy: DeadlinePolicy.LEAVE } }), m);
    expect(step).toMatchObject({ outcome: 'timed-out' });
    expect(
      w.cluster.calls.filter((c) => c.op === 'evict' && c.target === `default/${old.name}`).length,
    ).toBeGreaterThanOrEqual(1);
  });
});
