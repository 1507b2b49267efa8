// Phase 4, settle: the instance is released once the departed pods' volumes are detached and
// the load balancers let it go, both re-derived (a hand-off resumes the same wait).
import { describe, expect, it } from 'vitest';
import { settle } from '../../../lambda/termination/settle.js';
import { pollIntervalMs, within } from '../../../lambda/termination/settle-targets.js';
import { isStop, type Deadlines, type Drained } from '../../../lambda/termination/state.js';
import { pod } from '../../fakes/fake-world.js';
import { instanceId, phaseWorld } from './phase-world.js';

type World = ReturnType<typeof phaseWorld>;

function drained(w: World, o: { resumed?: boolean; deadlines?: Partial<Deadlines> } = {}): Drained {
  const node = w.cluster.nodes.get('node-a') ?? w.cluster.addNode('node-a', instanceId);
  const startedAtMs = w.clock.now();
  const record = { action: 'sha256:a', hook: 'h', notifiedAtMs: startedAtMs, startedAtMs, updatedAtMs: startedAtMs, set: [] };
  const deadlines = w.deadlines({ loadBalancerDelayMs: 0, ...o.deadlines });
  const result = o.resumed ? undefined : { outcome: 'drained' as const, evicted: 1, blocked: 0, forced: 0, stuck: [], returned: [], notWaitedFor: [] };
  return { node, actionId: 'sha256:a', claim: undefined, ownPendingClaim: undefined, record, deadlines, outcome: 'drained', drainedAtMs: w.clock.now(), evictedTotal: 1, result };
}

const settled = async (w: World, d: Drained, o: Parameters<World['run']>[0] = {}) => {
  const start = w.clock.now();
  const step = await settle(w.run(o), d);
  return { step, seconds: (w.clock.now() - start) / 1000 };
};

describe('settle: volumes', () => {
  it('releases only after the departed pod’s VolumeAttachment is gone, and says how long it took', async () => {
    const w = phaseWorld();
    w.cluster.attach('pv-data');
    w.clock.after(8_000, () => w.cluster.detach('pv-data'));
    const { step, seconds } = await settled(w, drained(w));
    expect(seconds).toBe(8);
    expect(w.cluster.reasons()).toEqual(['Node/WaitingForVolumeDetach', 'Node/VolumesDetached']);
    expect(w.cluster.events.at(-1)!.message).toContain('pv-data (ebs.csi.aws.com) in 8 s');
    expect(step).toMatchObject({ settle: { volumeDetachSeconds: 8 } });
  });

  it('is not held by a volume a pod still on the node uses (a DaemonSet’s), nor by an inline one', async () => {
    const w = phaseWorld();
    w.cluster.addPod(pod({ name: 'agent', controllerKind: 'DaemonSet', claims: ['agent-cache'] }));
    w.cluster.attach('pv-agent');
    w.cluster.volumeClaims.set('pv-agent', 'default/agent-cache');
    w.cluster.attachments.set('inline', { name: 'inline', uid: 'u-inline', nodeName: 'node-a', attacher: 'ebs.csi.aws.com', persistentVolumeName: undefined });
    const { seconds } = await settled(w, drained(w));
    expect(seconds).toBe(0);
    expect(w.cluster.reasons()).toEqual([]);
  });

  it('is held by the volume of a finished pod still listed on the node (a Job’s): it can detach', async () => {
    const w = phaseWorld();
    w.cluster.addPod(pod({ name: 'report', controllerKind: 'Job', phase: 'Succeeded', claims: ['report-data'] }));
    w.cluster.attach('pv-report');
    w.cluster.volumeClaims.set('pv-report', 'default/report-data');
    w.clock.after(6_000, () => w.cluster.detach('pv-report'));
    expect((await settled(w, drained(w))).seconds).toBe(6);
  });

  it('is not held by another node’s attachment', async () => {
    const w = phaseWorld();
    w.cluster.attach('pv-elsewhere', 'node-b');
    expect((await settled(w, drained(w))).seconds).toBe(0);
  });

  it('holds no longer than the drain deadline, then names what was left', async () => {
    const w = phaseWorld();
    w.cluster.attach('pv-stuck', 'node-a', 'efs.csi.aws.com');
    const { seconds } = await settled(w, drained(w, { deadlines: { drainDeadlineMs: w.clock.now() + 45_000 } }));
    expect(seconds).toBe(45);
    const warning = w.cluster.events.find((e) => e.reason === 'VolumesNotDetached')!;
    expect(warning.type).toBe('Warning');
    expect(warning.message).toContain('pv-stuck (efs.csi.aws.com)');
  });

  it('waits for nothing when turned off (WAIT_FOR_VOLUME_DETACH=false)', async () => {
    const w = phaseWorld();
    w.cluster.attach('pv-data');
    expect((await settled(w, drained(w), { waitForVolumeDetach: false })).seconds).toBe(0);
    expect(w.cluster.calls.map((c) => c.op)).not.toContain('watch-attachments');
  });

  it('hands on in the middle of the wait, and the next invocation resumes it from the cluster', async () => {
    const w = phaseWorld();
    w.cluster.attach('pv-data');
    w.clock.after(8_000, () => w.cluster.detach('pv-data'));
    const d = drained(w, { deadlines: { invocationStopMs: w.clock.now() + 5_000 } });
    const first = await settled(w, d, { handOff: async () => 'sent' });
    expect(first.seconds).toBe(5);
    expect(isStop(first.step) && 'handOn' in first.step.stop && first.step.stop.handOn).toBe('settle');
    const resumed = await settled(w, { ...d, deadlines: { ...d.deadlines, invocationStopMs: Number.POSITIVE_INFINITY }, result: undefined });
    expect(resumed.seconds).toBe(3);
    expect(w.cluster.reasons()).toContain('Node/VolumesDetached');
  });
});

describe('settle: load balancers', () => {
  const wait = { loadBalancerWait: { minMs: 5_000, maxMs: 300_000 }, loadBalancerDelayMs: 60_000 };

  it('releases once the target group has let the instance go, not a fixed delay', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers;
    w.loadBalancers.hold(instanceId, 'k8s-default-web', w.clock.now() + 8_000);
    const { step, seconds } = await settled(w, drained(w, { deadlines: wait }));
    // Looks every 2 s, then sparser (jittered): the first look after 8 s ends it.
    expect(seconds).toBeGreaterThanOrEqual(8);
    expect(seconds).toBeLessThan(8 + 10);
    expect(w.cluster.reasons()).toEqual(['Node/WaitingForTargetDeregistration', 'Node/TargetsDeregistered']);
    expect(w.cluster.events.at(-1)!.message).toMatch(/k8s-default-web \d+(\.\d)? s/);
    expect(isStop(step) ? undefined : step.settle.targetDeregistrationSeconds).toBeCloseTo(seconds, 0);
  });

  it('in no target group: releases at the minimum wait after one look', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers;
    const { step, seconds } = await settled(w, drained(w, { deadlines: wait }));
    expect(seconds).toBe(5);
    expect(w.loadBalancers.readings).toBe(1);
    expect(step).toMatchObject({ settle: { targetDeregistrationSeconds: 0 } });
  });

  it('denied: waits the fixed delay, with one warning', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers;
    w.loadBalancers.failure = { denied: true };
    const { seconds } = await settled(w, drained(w, { deadlines: wait }));
    expect(seconds).toBe(60);
    expect(w.log.messages('warn').filter((m) => m.startsWith('could not read the load balancers (access denied'))).toHaveLength(1);
  });

  it('held past the maximum: released then, with a Warning naming what held it', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers;
    w.loadBalancers.hold(instanceId, 'a3f0-legacy', Number.POSITIVE_INFINITY, 'classic');
    const { seconds } = await settled(w, drained(w, { deadlines: wait }));
    expect(seconds).toBe(300);
    expect(w.cluster.events.find((e) => e.reason === 'TargetsNotDeregistered')?.message).toContain('a3f0-legacy (draining)');
  });

  it('both waits overlap: the later one decides', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers;
    w.cluster.attach('pv-data');
    w.clock.after(20_000, () => w.cluster.detach('pv-data'));
    w.loadBalancers.hold(instanceId, 'k8s-default-web', w.clock.now() + 8_000);
    const { seconds } = await settled(w, drained(w, { deadlines: wait }));
    expect(seconds).toBe(20);
    expect(w.cluster.reasons()).toContain('Node/TargetsDeregistered');
    expect(w.cluster.reasons()).toContain('Node/VolumesDetached');
  });

  it('handing on in the middle, tells first what already let go (the next invocation cannot know it was held)', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers;
    w.cluster.attach('pv-data');
    w.clock.after(30_000, () => w.cluster.detach('pv-data'));
    w.loadBalancers.hold(instanceId, 'k8s-default-web', w.clock.now() + 8_000);
    const { step } = await settled(w, drained(w, { deadlines: { ...wait, invocationStopMs: w.clock.now() + 20_000 } }), { handOff: async () => 'sent' });
    expect(isStop(step)).toBe(true);
    expect(w.cluster.reasons()).toEqual(['Node/WaitingForTargetDeregistration', 'Node/WaitingForVolumeDetach', 'Node/TargetsDeregistered']);
  });

  it('a reading that does not answer in time is a failed one, in real time (the request is not waited for)', async () => {
    const started = Date.now();
    const reading = await within(new Promise<never>(() => {}), 50);
    expect(reading).toMatchObject({ read: false, denied: false });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('looks sparser as the wait goes on, never more often than every 1.6 s nor less than every 12 s', () => {
    expect(pollIntervalMs(0, () => 0)).toBe(1600);
    expect(pollIntervalMs(1, () => 0.5)).toBe(3000);
    expect(pollIntervalMs(20, () => 1)).toBe(12_000);
  });
});
