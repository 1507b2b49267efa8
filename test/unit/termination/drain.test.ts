// Phase 3, drain: evicts within the deadline the record dates, hands on when the invocation
// ends, and resumes straight into the load-balancer wait when the record says it drained.
import { describe, expect, it } from 'vitest';
import { DeadlinePolicy } from '../../../lambda/shared/deadline-policy.js';
import { drain, drainDeadlineOf } from '../../../lambda/termination/drain.js';
import { mark } from '../../../lambda/termination/mark.js';
import type { Marked } from '../../../lambda/termination/state.js';
import { pdbBlocks, pod } from '../../fakes/fake-world.js';
import { instanceId, phaseWorld } from '../../fakes/phase-world.js';

async function marked(w: ReturnType<typeof phaseWorld>, o: Parameters<typeof w.run>[0] = {}): Promise<Marked> {
  w.cluster.addNode('node-a', instanceId);
  return (await mark(w.run(o), w.verified())) as Marked;
}

describe('drain', () => {
  it("keeps the fair window from when the drain first saw the node, within the action's cap", () => {
    const d = { drainDeadlineMs: 1_000, minEvictionWindowMs: 60_000, latestDrainEndMs: 50_000 };
    expect(drainDeadlineOf(d, 0)).toBe(50_000);
    expect(drainDeadlineOf({ ...d, latestDrainEndMs: 900_000 }, 0)).toBe(60_000);
  });

  it('evicts and reports the drain over, dated for the load-balancer wait', async () => {
    const w = phaseWorld();
    const m = await marked(w);
    w.cluster.addPod(pod({ name: 'web', terminationMs: 5_000 }));
    const step = await drain(w.run(), m);
    expect(step).toMatchObject({ outcome: 'drained', drainedAtMs: w.clock.now(), evictedTotal: 1 });
    expect(w.cluster.reasons()).toContain('Node/Drained');
  });

  it('hands on when the invocation ends first, with the pods evicted so far in the record', async () => {
    const w = phaseWorld();
    const stopAt = w.clock.now() + 30_000;
    const m = await marked(w, {
      deadlinesFrom: () => w.deadlines({ invocationStopMs: stopAt }),
      sendHandOff: async () => 'sent',
    });
    w.cluster.addPod(pod({ name: 'web' }));
    const guarded = w.cluster.addPod(pod({ name: 'guarded' }));
    w.cluster.evictionRules.push(pdbBlocks('pdb', (p) => p.uid === guarded.uid));
    const step = await drain(w.run({ sendHandOff: async () => 'sent' }), {
      ...m,
      deadlines: w.deadlines({ invocationStopMs: stopAt }),
    });
    expect(step).toMatchObject({ stop: { handOff: 'drain', record: { evicted: 1 }, evictedTotal: 1 } });
  });

  it('goes straight to the wait when the record says the drain ended (no pod is asked about again)', async () => {
    const w = phaseWorld();
    const m = await marked(w);
    const record = { ...m.record, evicted: 4, drained: { atMs: w.clock.now() - 10_000, outcome: 'drained' as const } };
    w.cluster.calls.length = 0;
    const step = await drain(w.run(), { ...m, record });
    expect(step).toMatchObject({
      outcome: 'drained',
      drainedAtMs: record.drained.atMs,
      evictedTotal: 4,
      result: undefined,
    });
    expect(w.cluster.calls).toEqual([]);
  });

  it('under retain, completes with ABANDON at the deadline: no load-balancer wait, the instance stays', async () => {
    const w = phaseWorld();
    const m = await marked(w, { settings: { deadlinePolicy: DeadlinePolicy.RETAIN } });
    const guarded = w.cluster.addPod(pod({ name: 'guarded' }));
    w.cluster.evictionRules.push(pdbBlocks('pdb', (p) => p.uid === guarded.uid));
    const step = await drain(w.run({ settings: { deadlinePolicy: DeadlinePolicy.RETAIN } }), m);
    expect(step).toMatchObject({ stop: { complete: { outcome: 'retained', verdict: 'ABANDON' } } });
    expect(w.cluster.deletions).toEqual([]);
  });
});
