// Load-balancer readings shared across invocations (shared-targets.ts): many waiting
// terminations, each its own invocation (a SharedTargets of its own), one store of readings
// (the Leases, in memory) and one account's ELB. Time is stepped by hand: every waiter looks
// every half second, as the settle loop would.
import { describe, expect, it } from 'vitest';
import { settle } from '../../../lambda/termination/settle.js';
import { SharedTargets, republishMs, turnMs } from '../../../lambda/termination/shared-targets.js';
import { elbReadsPerSecond } from '../../../lambda/termination/reader-pace.js';
import { isStop, type Drained } from '../../../lambda/termination/state.js';
import type { TargetHold } from '../../../lambda/shared/aws-ports.js';
import { FakeClock, FakeLoadBalancers, MemoryLog } from '../../fakes/fake-world.js';
import { FakeReadingStore } from '../../fakes/fake-target-readings.js';
import { instanceId, phaseWorld } from '../../fakes/phase-world.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

const id = (n: number) => `i-0${String(n).padStart(16, '0')}`;

function world(groups: number, instances: number, releaseAfterMs: (instance: number, group: number) => number) {
  const clock = new FakeClock();
  const store = new FakeReadingStore();
  const elb = new FakeLoadBalancers(clock).share();
  const log = new MemoryLog();
  const start = clock.now();
  for (let i = 0; i < instances; i++)
    for (let g = 0; g < groups; g++) elb.hold(id(i), `tg-${g}`, start + releaseAfterMs(i, g));
  const waiters = Array.from(
    { length: instances },
    (_, i) =>
      new SharedTargets(
        {
          readings: store.readingsFor(),
          // Through the fake each time: a test may replace its answers.
          registry: { candidates: (s) => elb.candidates!(s), registered: (lb) => elb.registered!(lb) },
          clock,
          log,
        },
        `request-${i}`,
      ),
  );
  /** When each ELB call was made. */
  const calls: number[] = [];
  const registered = elb.registered!;
  elb.registered = async (lb) => (calls.push(clock.now()), registered(lb));
  return { clock, store, elb, log, start, waiters, calls };
}

type World = ReturnType<typeof world>;

/** Every waiter looks every 500 ms until each is let go by every group; when each was let go. */
async function run(w: World, o: { untilMs: number; candidates: TargetHold[]; closeWhenFree?: boolean }) {
  const freeAt = new Map<number, number>();
  for (let t = w.clock.now(); t < o.untilMs && freeAt.size < w.waiters.length; t += 500) {
    w.clock.advanceTo(t);
    for (const [i, waiter] of w.waiters.entries()) {
      if (freeAt.has(i)) continue;
      const look = await waiter.look(id(i), o.candidates, w.start, o.untilMs);
      if (look === undefined) throw new Error('sharing unavailable');
      if (look.reading.read && look.reading.holds.length === 0 && look.pending.length === 0) {
        freeAt.set(i, w.clock.now());
        if (o.closeWhenFree) await waiter.close();
      }
    }
  }
  return { freeAt, calls: w.calls };
}

const groupsOf = (n: number): TargetHold[] =>
  Array.from({ length: n }, (_, g) => ({
    kind: 'target-group',
    id: `arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/tg-${g}/0123456789abcdef`,
    name: `tg-${g}`,
    state: 'unknown',
  }));

describe('load-balancer readings shared across invocations', () => {
  it('reads each group once for every instance it holds: the calls grow with the groups, not with the instances', async () => {
    const w = world(3, 20, (i) => 6_000 + i * 500);
    const { freeAt } = await run(w, { untilMs: w.start + 120_000, candidates: groupsOf(3) });
    expect(freeAt.size).toBe(20);
    // 20 instances x 3 groups read alone: 60 calls a round. Shared: 3 a round.
    const seconds = (Math.max(...freeAt.values()) - w.start) / 1000;
    expect(w.elb.registeredCalls.length).toBeLessThanOrEqual(Math.ceil(seconds / 2) * 3 + 3);
    // One invocation read for everyone: the turn taken once, then renewed by the same.
  });

  it('stays under elbReadsPerSecond for the whole deployment, and lets each go within a round of its last group', async () => {
    const groups = 60;
    const w = world(groups, 30, (i, g) => 10_000 + ((i * 7 + g * 3) % 50) * 1_000);
    const { freeAt, calls } = await run(w, {
      untilMs: w.start + 300_000,
      candidates: groupsOf(groups),
      closeWhenFree: true,
    });
    expect(freeAt.size).toBe(30);
    // In any one-second window: at most elbReadsPerSecond calls.
    for (const t of calls)
      expect(calls.filter((c) => c >= t && c < t + 1_000).length).toBeLessThanOrEqual(elbReadsPerSecond);
    // A round of 60 groups at 5 a second is 12 s: each waiter free within a round (and a look) of its last group.
    const roundMs = (groups * 1000) / elbReadsPerSecond;
    for (const [i, at] of freeAt) {
      const lastLetGoMs =
        w.start + Math.max(...Array.from({ length: groups }, (_, g) => 10_000 + ((i * 7 + g * 3) % 50) * 1_000));
      expect(at).toBeGreaterThanOrEqual(lastLetGoMs);
      expect(at - lastLetGoMs).toBeLessThanOrEqual(roundMs + 1_000);
    }
  });

  it('a reader that comes back when it says reads at elbReadsPerSecond, not a fifth slower for its pauses', async () => {
    const groups = 60;
    const w = world(groups, 1, () => 600_000);
    const [reader] = w.waiters;
    // Back exactly when the look says (the settle loop's wake), for a minute.
    for (let at = w.clock.now(); at < w.start + 60_000;) {
      w.clock.advanceTo(at);
      const look = await reader!.look(id(0), groupsOf(groups), w.start, w.start + 600_000);
      expect(look!.nextAtMs).toBeGreaterThan(w.clock.now());
      at = look!.nextAtMs;
    }
    const inMinute = w.calls.filter((c) => c < w.start + 60_000).length;
    // 5 a second is 300; a 500 ms pause after each 2 s slice made it about 4 a second (260 here). Coming back a moment
    // after the first group is due (to read those due together in one look) costs a little of it.
    expect(inMinute).toBeGreaterThanOrEqual(0.93 * 60 * elbReadsPerSecond);
    expect(inMinute).toBeLessThanOrEqual(60 * elbReadsPerSecond + 1);
  });

  it('publishes a reading that says nothing new at most every republishMs, a change at once', async () => {
    const w = world(1, 1, () => 40_000);
    const { freeAt } = await run(w, { untilMs: w.start + 120_000, candidates: groupsOf(1) });
    const publishes = w.store.writes.filter((x) => x.startsWith('publish ')).length;
    // Read every 2 s for 40 s (about 20 readings): one Lease write each before.
    expect(w.elb.registeredCalls.length).toBeGreaterThanOrEqual(15);
    expect(publishes).toBeLessThanOrEqual(Math.ceil(40_000 / republishMs) + 2);
    // The let-go itself is not held back.
    expect(freeAt.get(0)! - w.start).toBeLessThanOrEqual(40_000 + 2_500);
  });

  it('takes no reading from before the wait began for a let-go', async () => {
    const w = world(1, 1, () => 30_000);
    // Another wave's reading of the group, taken before this wait: the instance was not in it yet.
    const [g] = groupsOf(1);
    await w.store.readingsFor().want(g!, w.start + 60_000);
    await w.store.readingsFor().publish(g!, { atMs: w.start - 10_000, by: 'earlier', targets: {} });
    // Another invocation holds the turn (and has not read since): this look reads nothing itself.
    w.store.turn = { holder: 'another', renewedAtMs: w.start, durationMs: 15_000, version: 'v1' };
    const look = await w.waiters[0]!.look(id(0), [g!], w.start, w.start + 60_000);
    expect(look?.reading).toMatchObject({ read: true, holds: [], unread: [] });
    expect(look?.pending.map((p) => p.name)).toEqual(['tg-0']);
    expect(w.elb.registeredCalls).toEqual([]);
  });

  it('passes the turn on when the reader is done: the next waiter reads at once', async () => {
    const w = world(2, 3, (i) => (i === 0 ? 3_000 : 20_000));
    const { freeAt } = await run(w, { untilMs: w.start + 120_000, candidates: groupsOf(2), closeWhenFree: true });
    expect(freeAt.size).toBe(3);
    const takes = w.store.writes.filter((x) => x.startsWith('take ') || x.startsWith('release '));
    // request-0 reads (renewing its turn) until it is let go, gives the turn back, and request-1 takes it next.
    const released = takes.indexOf('release request-0');
    expect(new Set(takes.slice(0, released))).toEqual(new Set(['take request-0']));
    expect(takes[released + 1]).toBe('take request-1');
    // No gap of a lapsed turn: readings went on within a second of the release.
    expect(freeAt.get(1)! - (w.start + 20_000)).toBeLessThanOrEqual(2_000 + 1_000);
  });

  it('backs off when ELB throttles it; the last readings stand and nobody is let go on them', async () => {
    const w = world(1, 2, () => 5_000);
    let throttled = 3;
    const registered = w.elb.registered!;
    w.elb.registered = async (lb) =>
      throttled-- > 0
        ? { read: false, denied: false, throttled: true, error: new Error('Throttling: Rate exceeded'), calls: 1 }
        : registered(lb);
    const { freeAt } = await run(w, { untilMs: w.start + 120_000, candidates: groupsOf(1) });
    expect(freeAt.size).toBe(2);
    expect(w.log.messages('warn').filter((m) => m.startsWith('ELB throttled the shared'))).toHaveLength(3);
    // Backoff 2, 4, 8 s after the first try: nothing read (so nothing released) before then.
    expect(Math.min(...freeAt.values()) - w.start).toBeGreaterThanOrEqual(14_000);
  });

  it('is unavailable without the Role: undefined (the waiter reads alone), said once', async () => {
    const w = world(1, 1, () => 5_000);
    w.store.denied = true;
    expect(await w.waiters[0]!.look(id(0), groupsOf(1), w.start, w.start + 60_000)).toBeUndefined();
    expect(await w.waiters[0]!.look(id(0), groupsOf(1), w.start, w.start + 60_000)).toBeUndefined();
    expect(
      w.log.messages('warn').filter((m) => m.startsWith('shared load-balancer readings are not allowed')),
    ).toHaveLength(1);
    expect(w.elb.registeredCalls).toEqual([]);
  });

  it('a lapsed turn is taken over, with the version seen (a turn held by another is left alone)', async () => {
    const w = world(1, 2, () => 60_000);
    await w.waiters[0]!.look(id(0), groupsOf(1), w.start, w.start + 300_000);
    expect(w.store.turn?.holder).toBe('request-0');
    await w.waiters[1]!.look(id(1), groupsOf(1), w.start, w.start + 300_000);
    expect(w.store.turn?.holder).toBe('request-0');
    // request-0's invocation stops without a word: its turn lapses, and request-1 reads on.
    w.clock.advanceTo(w.clock.now() + turnMs + 1);
    await w.waiters[1]!.look(id(1), groupsOf(1), w.start, w.start + 300_000);
    expect(w.store.turn?.holder).toBe('request-1');
  });
});

describe('the settle phase on shared readings', () => {
  const wait = { loadBalancerWait: { minMs: 5_000, maxMs: 300_000 }, loadBalancerDelayMs: 60_000 };
  const drainedNow = (w: ReturnType<typeof phaseWorld>): Drained => {
    const node = w.cluster.nodes.get('node-a') ?? w.cluster.addNode('node-a', instanceId);
    const now = w.clock.now();
    return {
      node,
      claim: undefined,
      ownPendingClaim: undefined,
      record: {
        source: lifecycleAction('sha256:a', 'h'),
        notifiedAtMs: now,
        startedAtMs: now,
        updatedAtMs: now,
        set: [],
      },
      deadlines: w.deadlines(wait),
      outcome: 'drained',
      drainedAtMs: now,
      evictedTotal: 1,
      result: { outcome: 'drained', evicted: 1, blocked: 0, forced: 0, stuck: [], returned: [], notWaitedFor: [] },
    };
  };

  it('denied for every load balancer the shared reader read: the fixed delay, as a reading of its own would', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers.share();
    w.deps.readings = w.cluster;
    w.loadBalancers.hold(instanceId, 'k8s-default-web', w.clock.now() + 8_000);
    w.loadBalancers.failure = { denied: true };
    const now = w.clock.now();
    await settle(w.run(), drainedNow(w));
    expect((w.clock.now() - now) / 1000).toBe(60);
    expect(
      w.log.messages('warn').filter((m) => m.startsWith('could not read the load balancers (access denied')),
    ).toHaveLength(1);
  });

  it('releases once the shared reading says the group let the instance go, and gives the turn back', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers.share();
    w.deps.readings = w.cluster;
    w.loadBalancers.hold(instanceId, 'k8s-default-web', w.clock.now() + 8_000);
    const now = w.clock.now();
    const d = drainedNow(w);
    const step = await settle(w.run(), d);
    const seconds = (w.clock.now() - now) / 1000;
    expect(seconds).toBeGreaterThanOrEqual(8);
    expect(seconds).toBeLessThan(8 + 3);
    expect(w.loadBalancers.readings).toBe(0);
    expect(w.loadBalancers.registeredCalls.length).toBeGreaterThan(1);
    expect(w.cluster.readingStore.writes).toContain('release request-1');
    expect(w.cluster.reasons()).toEqual(['Node/WaitingForTargetDeregistration', 'Node/TargetsDeregistered']);
    expect(isStop(step) ? undefined : step.settle.loadBalancerCalls).toBe(w.loadBalancers.registeredCalls.length);
  });
});
