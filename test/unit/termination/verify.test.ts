// Phase 1, verify: the node by providerID, and a hand-off checked against the claim on it.
import { describe, expect, it } from 'vitest';
import { actionIdOfToken } from '../../../lambda/cluster/marks/action-id.js';
import { isStop } from '../../../lambda/termination/state.js';
import { verify } from '../../../lambda/termination/verify.js';
import { instanceId, phaseWorld, token } from '../../fakes/phase-world.js';
import { lifecycleAction, resumedAction } from '../../fixtures/drain-sources.js';

const record = {
  source: lifecycleAction(token, 'workers-terminate'),
  notifiedAtMs: 0,
  startedAtMs: 0,
  updatedAtMs: 0,
  set: [],
};

describe('verify', () => {
  it('completes CONTINUE when no node has the instance (nothing to drain, nothing to hold)', async () => {
    const w = phaseWorld();
    const step = await verify(w.run());
    expect(step).toEqual({
      stop: { complete: expect.objectContaining({ outcome: 'node-not-found', verdict: 'CONTINUE', node: undefined }) },
    });
  });

  it("finds the node and the claim a first notification replaces (an earlier, finished termination's)", async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId, { handOffClaim: 'sha256:old/3/r-old' });
    const step = await verify(w.run());
    expect(step).toMatchObject({
      node: { name: 'node-a' },
      claim: 'sha256:old/3/r-old',
      ownPendingClaim: undefined,
    });
  });

  it('stands a hand-off down whose claim the node no longer holds (a duplicate, replayed or reordered delivery)', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId, { handOffClaim: `${actionIdOfToken(token)}/2/request-2`, drain: record });
    const step = await verify(
      w.run({ handOff: { count: 1, claim: `${actionIdOfToken(token)}/1/request-1`, byReconciler: false } }),
    );
    expect(step).toEqual({ stop: { end: 'superseded' } });
  });

  it("carries a hand-off on whose claim is the node's", async () => {
    const w = phaseWorld();
    const claim = `${actionIdOfToken(token)}/2/request-2`;
    w.cluster.addNode('node-a', instanceId, { handOffClaim: claim, drain: record });
    const step = await verify(w.run({ handOff: { count: 2, claim, byReconciler: false } }));
    expect(isStop(step)).toBe(false);
    expect(step).toMatchObject({ claim });
  });

  it('recognises its own claim left by a crashed earlier attempt of the same request', async () => {
    const w = phaseWorld();
    const claim = `${actionIdOfToken(token)}/1/request-1`;
    w.cluster.addNode('node-a', instanceId, { handOffClaim: claim, drain: record });
    expect(await verify(w.run())).toMatchObject({ ownPendingClaim: claim });
  });

  it('stands a late duplicate of the notification down while a chain carries the same action', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId, { handOffClaim: `${actionIdOfToken(token)}/1/request-9`, drain: record });
    expect(await verify(w.run())).toEqual({ stop: { end: 'superseded' } });
  });

  it("carries a resume by instance (the reconciler's) on only over the drain the reconciler wrote for it, never a record that may be an earlier action's", async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId, { drain: record });
    const byReconciler = {
      source: resumedAction(instanceId),
      handOff: { count: 1, claim: undefined, byReconciler: true },
    };
    expect(await verify(w.run(byReconciler))).toEqual({
      stop: { end: 'superseded' },
    });
    expect(w.cluster.calls.filter((c) => !c.op.startsWith('list') && !c.op.startsWith('get'))).toEqual([]);
    w.cluster.addNode('node-a', instanceId, { drain: { ...record, source: resumedAction(instanceId) } });
    expect(await verify(w.run(byReconciler))).toMatchObject({ node: { name: 'node-a' }, claim: undefined });
  });

  it("stands down for a notification whose action a by-instance drain already carries, and replaces an earlier action's", async () => {
    const w = phaseWorld();
    const t = w.clock.now();
    const byInstance = { ...record, source: resumedAction(instanceId), startedAtMs: t + 1_000_000 };
    w.cluster.addNode('node-a', instanceId, { drain: byInstance, handOffClaim: `instance:${instanceId}/2/request-r` });
    expect(await verify(w.run({ notifiedAtMs: t }))).toEqual({ stop: { end: 'superseded' } });
    // The same claim, from a drain that started before this action did: an earlier termination's.
    w.cluster.addNode('node-a', instanceId, {
      drain: { ...byInstance, startedAtMs: t - 1 },
      handOffClaim: `instance:${instanceId}/2/request-r`,
    });
    expect(await verify(w.run({ notifiedAtMs: t }))).toMatchObject({
      node: { name: 'node-a' },
      claim: `instance:${instanceId}/2/request-r`,
    });
  });
});
