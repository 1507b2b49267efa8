// Phase 5, complete: the trigger's ending completes the action and tells it on the node.
import { describe, expect, it } from 'vitest';
import { complete } from '../../../lambda/termination/complete.js';
import { action, instanceId, phaseWorld } from '../../fakes/phase-world.js';

describe('complete', () => {
  it('completes with the verdict and tells the node', async () => {
    const w = phaseWorld();
    const node = w.cluster.addNode('node-a', instanceId);
    const report = await complete(w.run(), {
      node,
      outcome: 'drained',
      verdict: 'CONTINUE',
      evictedTotal: 2,
      result: undefined,
    });
    expect(report).toMatchObject({
      outcome: 'drained',
      lifecycleAction: 'completed',
      evictedTotal: 2,
      nodeName: 'node-a',
    });
    expect(w.lifecycle.completions).toEqual([expect.objectContaining({ action, result: 'CONTINUE' })]);
    expect(w.cluster.events.at(-1)).toMatchObject({ reason: 'LifecycleActionCompleted', type: 'Normal' });
  });

  it('says ABANDON as a warning, and an action another delivery completed as already completed', async () => {
    const w = phaseWorld();
    const node = w.cluster.addNode('node-a', instanceId);
    await w.lifecycle.complete(action, 'CONTINUE');
    const report = await complete(w.run(), {
      node,
      outcome: 'retained',
      verdict: 'ABANDON',
      evictedTotal: 0,
      result: undefined,
    });
    expect(report.lifecycleAction).toBe('already-completed');
    expect(w.cluster.events.at(-1)).toMatchObject({
      type: 'Warning',
      message: expect.stringMatching(/was already completed with ABANDON/),
    });
  });

  it('tells nothing on a node it never found', async () => {
    const w = phaseWorld();
    await complete(w.run(), {
      node: undefined,
      outcome: 'node-not-found',
      verdict: 'CONTINUE',
      evictedTotal: 0,
      result: undefined,
    });
    expect(w.cluster.events).toEqual([]);
    expect(w.lifecycle.completions).toHaveLength(1);
  });
});
