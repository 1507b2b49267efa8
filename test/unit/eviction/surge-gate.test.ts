// Surge before evict's gate: it holds a Deployment's last Ready pod off the leaving nodes
// until a replacement is Ready elsewhere, writes the record before the restart, resumes from
// the record without a second restart, and never holds past its timeout or the force time.
import { beforeEach, describe, expect, it } from 'vitest';
import type { ClusterEvent, DrainRecord } from '../../../lambda/cluster/model.js';

import type { DrainMoment } from '../../../lambda/eviction/rules.js';
import { DeploymentSurge, unschedulableAfterMs } from '../../../lambda/eviction/surge-gate.js';
import { TransientError } from '../../../lambda/shared/errors.js';
import { transientTries } from '../../../lambda/eviction/surge-tries.js';
import { FakeClock, MemoryLog, pod, type FakePod } from '../../fakes/fake-world.js';
import { deployment, FakeSurgeApi, lastReadyPod, surgeOn, surgeRecord } from '../../fixtures/surge.js';

const settings = surgeOn;
const node = { name: 'node-a', uid: 'n-1' };

describe('surge gate', () => {
  let clock: FakeClock;
  let api: FakeSurgeApi;
  let events: ClusterEvent[];
  let log: MemoryLog;
  let marked: Set<string>;
  let record: DrainRecord;
  let old: FakePod;
  let t0: number;

  beforeEach(() => {
    clock = new FakeClock();
    t0 = clock.now();
    api = new FakeSurgeApi();
    events = [];
    log = new MemoryLog();
    marked = new Set(['node-a', 'node-s']);
    record = surgeRecord(clock.now());
    old = lastReadyPod(api);
  });

  const gate = (r: DrainRecord = record) =>
    new DeploymentSurge(
      {
        settings,
        node,
        surges: r.surges ?? [],
        saveSurges: (surges) => api.saveDrainRecord(node.name, { ...r, updatedAtMs: clock.now(), surges }),
        owner: 'gnt',
        drainStartedAtMs: r.startedAtMs,
      },
      {
        api,
        nodes: { drainMarkedNames: async () => marked },
        events: { record: async (e) => void events.push(e) },
        clock,
        log,
      },
    );
  const moment = (o: Partial<DrainMoment> = {}): DrainMoment => ({
    nowMs: clock.now(),
    force: false,
    drainDeadlineMs: clock.now() + 600_000,
    // The fair window: 5 s from when the drain began (t0).
    windowEndMs: t0 + 5_000,
    windowMs: 5_000,
    latestDrainEndMs: clock.now() + 900_000,
    tier: 0,
    orderOf: () => 0,
    tierReachedMs: new Map([[0, t0]]),
    attempts: new Map(),
    accepted: new Set(),
    ...o,
  });
  const replacement = (o: { ready: boolean; nodeName?: string; unschedulable?: boolean }) => ({
    name: 'web-new12-abcde',
    uid: 'new',
    nodeName: o.nodeName ?? 'node-b',
    ready: o.ready,
    terminating: false,
    unschedulable: o.unschedulable ?? false,
  });
  const reasons = () => events.filter((e) => e.regarding.kind === 'Node').map((e) => e.reason);

  it('records first, restarts once, holds the pod until the replacement is Ready on a node that stays, then lets it go', async () => {
    const g = gate();
    expect([...(await g.held([old], moment()))]).toEqual([old.uid]);
    expect(api.records).toHaveLength(1);
    expect(api.records[0]!.surges).toEqual([
      expect.objectContaining({
        uid: old.uid,
        deployment: { namespace: 'default', name: 'web' },
        state: 'waiting',
        restartedAt: api.restarts[0],
      }),
    ]);
    expect(api.restarts).toEqual(['2026-11-22T10:00:00Z']);
    expect(reasons()).toEqual(['SurgeStarted']);
    expect(g.nextCheckMs()).toBe(clock.now() + 2_000);

    // A replacement Ready on a sibling that is leaving too does not count.
    api.pods.push(replacement({ ready: true, nodeName: 'node-s' }));
    clock.advanceTo(clock.now() + 2_000);
    expect((await g.held([old], moment())).size).toBe(1);

    api.pods[1] = replacement({ ready: true });
    clock.advanceTo(clock.now() + 2_000);
    expect((await g.held([old], moment())).size).toBe(0);
    expect(reasons()).toEqual(['SurgeStarted', 'SurgeReady']);
    expect(g.marks()).toEqual([expect.objectContaining({ state: 'ready' })]);
    expect(api.restarts).toHaveLength(1);
  });

  it('does nothing for a pod whose Deployment has a Ready replica elsewhere, or that is not asked to surge', async () => {
    api.pods.push(replacement({ ready: true }));
    expect((await gate().held([old], moment())).size).toBe(0);
    api.pods.pop();
    api.d = deployment({ annotations: {} });
    expect((await gate().held([old], moment())).size).toBe(0);
    expect(api.restarts).toEqual([]);
    expect(events).toEqual([]);
  });

  it('refuses maxSurge 0 by name with an Event on the pod and the node, and holds nothing', async () => {
    api.d = deployment({ maxSurge: 0 });
    const g = gate();
    expect((await g.held([old], moment())).size).toBe(0);
    expect(events.map((e) => `${e.regarding.kind}/${e.reason}`)).toEqual(['Pod/SurgeRefused', 'Node/SurgeRefused']);
    expect(events[0]!.message).toContain('(max-surge-zero)');
    expect(g.marks()).toEqual([expect.objectContaining({ state: 'refused', reason: 'max-surge-zero' })]);
    expect(api.restarts).toEqual([]);
  });

  it('refuses a StatefulSet pod that asks for a surge, and never reads a Deployment for it', async () => {
    const sts = pod({
      name: 'db-0',
      controllerKind: 'StatefulSet',
      annotations: { 'graceful-node-termination/surge-before-evict': 'true' },
    });
    expect((await gate().held([sts], moment())).size).toBe(0);
    expect(events[0]!.message).toContain('(statefulset)');
  });

  it('never restarts without the record written first', async () => {
    api.saveResult = 'node-gone';
    expect((await gate().held([old], moment())).size).toBe(0);
    expect(api.restarts).toEqual([]);
    expect(events[0]!.message).toContain('(not-recorded)');
  });

  // Found by the soak (seed 16): a restart that got no answer (an API timeout) ended the surge at
  // once and evicted a Deployment's only Ready pod, while a node that stays could take a replacement.
  it('holds the pod through a transient failure of its restart, writes the restart at the next pass, and lets go once Ready elsewhere', async () => {
    const restart = api.restartDeployment.bind(api);
    let failures = 1;
    api.restartDeployment = async (d, at) => {
      if (failures-- > 0) throw new TransientError('restart deployment default/web failed: no answer within 10 s');
      return restart(d, at);
    };
    const g = gate();
    expect([...(await g.held([old], moment()))]).toEqual([old.uid]);
    expect(api.restarts).toEqual([]);
    clock.advanceTo(clock.now() + 2_000);
    expect((await g.held([old], moment())).size).toBe(1);
    expect(api.restarts).toHaveLength(1);
    api.pods.push(replacement({ ready: true }));
    clock.advanceTo(clock.now() + 2_000);
    expect((await g.held([old], moment())).size).toBe(0);
    expect(reasons()).toContain('SurgeReady');
  });

  it('a failure that lasts holds the pod no more than transientTries passes, then it is evicted as any other', async () => {
    api.restartDeployment = async () => {
      throw new TransientError('restart deployment default/web failed: 503');
    };
    const g = gate();
    const held: number[] = [];
    for (let pass = 0; pass < transientTries + 2; pass++) {
      held.push((await g.held([old], moment())).size);
      clock.advanceTo(clock.now() + 2_000);
    }
    expect(held).toEqual([...Array.from({ length: transientTries - 1 }, () => 1), 0, 0, 0]);
    expect(log.messages('warn')).toContain('surge before evict could not be decided; evicting as any other pod');
  });

  it('lets the pod go at its surge timeout, with SurgeTimedOut', async () => {
    const g = gate();
    await g.held([old], moment());
    clock.advanceTo(clock.now() + 60_000);
    expect((await g.held([old], moment())).size).toBe(0);
    expect(reasons()).toEqual(['SurgeStarted', 'SurgeTimedOut']);
    expect(events.at(-1)!.message).toContain('60 s (SURGE_TIMEOUT_SECONDS)');
  });

  it('lets the pod go at its force time under DEADLINE_POLICY=force, before the surge timeout', async () => {
    const g = gate();
    const deadline = clock.now() + 40_000;
    await g.held([old], moment({ force: true, drainDeadlineMs: deadline, latestDrainEndMs: deadline }));
    // Forced at the deadline minus its grace period (30 s): 10 s in.
    clock.advanceTo(clock.now() + 10_000);
    expect(
      (await g.held([old], moment({ force: true, drainDeadlineMs: deadline, latestDrainEndMs: deadline }))).size,
    ).toBe(0);
    expect(events.at(-1)!.message).toContain('the drain deadline comes first');
  });

  it('refuses for lack of capacity when the replacement stays Unschedulable', async () => {
    const g = gate();
    await g.held([old], moment());
    api.pods.push(replacement({ ready: false, nodeName: undefined as unknown as string, unschedulable: true }));
    clock.advanceTo(clock.now() + 2_000);
    expect((await g.held([old], moment())).size).toBe(1);
    clock.advanceTo(clock.now() + unschedulableAfterMs);
    expect((await g.held([old], moment())).size).toBe(0);
    expect(events.at(-1)!.message).toContain('(no-capacity)');
  });

  it('resumes a recorded surge without restarting again, and writes a recorded restart the template lacks', async () => {
    await gate().held([old], moment());
    const saved = api.records.at(-1)!;
    // The next invocation: the record says waiting, the Deployment carries the restart.
    const resumed = gate(saved);
    clock.advanceTo(clock.now() + 5_000);
    expect((await resumed.held([old], moment())).size).toBe(1);
    expect(api.restarts).toHaveLength(1);
    expect(log.messages()).toContain('surge before evict resumed: the Deployment already carries the restart');

    // An invocation that stopped between the record and the patch: the restart is written once.
    api.d = deployment({ restartedAt: undefined });
    api.restarts.length = 0;
    await gate(saved).held([old], moment());
    expect(api.restarts).toEqual([saved.surges![0]!.restartedAt]);
  });

  it('writes the restart a resumed record owes even when another pod of the Deployment joins it first', async () => {
    await gate().held([old], moment());
    const saved = api.records.at(-1)!;
    // The previous invocation stopped between the record and the patch; a twin is looked at first.
    api.d = deployment({ restartedAt: undefined });
    api.restarts.length = 0;
    const twin = pod({ name: 'web-abc12-qqq12', controllerKind: 'ReplicaSet' });
    api.pods.push({
      name: twin.name,
      uid: twin.uid,
      nodeName: 'node-a',
      ready: true,
      terminating: false,
      unschedulable: false,
    });
    const held = await gate(saved).held([twin, old], moment());
    expect(held).toEqual(new Set([twin.uid, old.uid]));
    expect(api.restarts).toEqual([saved.surges![0]!.restartedAt]);
  });

  it('joins a second pod of the same Deployment to the restart already made, and reads its Deployment once', async () => {
    old = { ...old, controllerUid: 'rs-1' };
    api.pods[0] = { ...api.pods[0]!, uid: old.uid };
    const twin = pod({ name: 'web-abc12-qqq12', controllerKind: 'ReplicaSet', controllerUid: 'rs-1' });
    api.pods.push({
      name: twin.name,
      uid: twin.uid,
      nodeName: 'node-a',
      ready: true,
      terminating: false,
      unschedulable: false,
    });
    const held = await gate().held([old, twin], moment());
    expect(held.size).toBe(2);
    expect(api.restarts).toHaveLength(1);
    expect(api.lookups).toBe(1);
  });

  it('tells SurgeReady when the rollout took the held pod out itself', async () => {
    const g = gate();
    await g.held([old], moment());
    api.pods.push(replacement({ ready: true }));
    await g.held([{ ...old, deletionTimestamp: new Date(clock.now()) }], moment());
    expect(reasons()).toEqual(['SurgeStarted', 'SurgeReady']);
  });
});
