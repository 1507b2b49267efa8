// Phase 4, settle: the load-balancer wait runs from when the drain ended, as the record dates it.
import { describe, expect, it } from 'vitest';
import { settle } from '../../../lambda/termination/settle.js';
import type { Drained } from '../../../lambda/termination/state.js';
import { pod } from '../../fakes/fake-world.js';
import { instanceId, phaseWorld } from '../../fakes/phase-world.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

function drained(
  w: ReturnType<typeof phaseWorld>,
  drainedAtMs: number,
  o: { resumed?: boolean; stopMs?: number } = {},
): Drained {
  const node = w.cluster.addNode('node-a', instanceId);
  const record = { source: lifecycleAction('sha256:a', 'h'), notifiedAtMs: 0, startedAtMs: 0, updatedAtMs: 0, set: [] };
  const deadlines = w.deadlines({ invocationStopMs: o.stopMs ?? Number.POSITIVE_INFINITY });
  const result = o.resumed
    ? undefined
    : { outcome: 'drained' as const, evicted: 0, blocked: 0, forced: 0, stuck: [], returned: [], notWaitedFor: [] };
  return {
    node,
    claim: undefined,
    ownPendingClaim: undefined,
    record,
    deadlines,
    outcome: 'drained',
    drainedAtMs,
    evictedTotal: 0,
    result,
  };
}

describe('settle', () => {
  it('waits the load-balancer delay from the end of the drain', async () => {
    const w = phaseWorld();
    const start = w.clock.now();
    await settle(w.run(), drained(w, start));
    expect(w.clock.now() - start).toBe(60_000);
  });

  it('after a hand-off waits only what is left of it, and nothing when it is over', async () => {
    const w = phaseWorld();
    const start = w.clock.now();
    await settle(w.run(), drained(w, start - 45_000, { resumed: true }));
    expect(w.clock.now() - start).toBe(15_000);
    expect(w.log.messages()).toContain('still waiting for load balancers and volumes after the drain');
  });

  it('hands on a wait that does not fit the invocation, dating the drain in the record', async () => {
    const w = phaseWorld();
    const start = w.clock.now();
    const step = await settle(
      w.run({ sendHandOff: async () => 'sent' }),
      drained(w, start, { stopMs: start + 20_000 }),
    );
    expect(step).toMatchObject({
      stop: { handOff: 'settle', record: { drained: { atMs: start, outcome: 'drained' } } },
    });
  });

  it('notices a pod that lands back on the node meanwhile', async () => {
    const w = phaseWorld();
    const d = drained(w, w.clock.now());
    w.clock.after(10_000, () => w.cluster.addPod(pod({ name: 'back', tolerations: [{ operator: 'Exists' }] })));
    await settle(w.run(), d);
    expect(w.cluster.reasons()).toContain('Node/PodRescheduledOnDrainingNode');
  });
});
