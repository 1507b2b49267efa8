// Properties of a node's departure cost (lambda/termination-policy/cost-rules.ts) over generated pods with budgets,
// owners, priorities and deletion costs: one more pod never makes a node cheaper nor takes a blocker away, what the
// drain would not evict costs nothing, and a node with a Job's or a do-not-disrupt pod is blocked.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { CostPod } from '../../../lambda/cluster/ports/choice-gateway.js';
import { podRule, defaultDrainRuleSettings } from '../../../lambda/cluster/rules/drain-rules.js';
import { isDrainable, isTerminating } from '../../../lambda/cluster/rules/pods.js';
import { departing, nodeCost, type RuleOf } from '../../../lambda/termination-policy/cost-rules.js';
import { indexedArray, podArb, t0 } from '../../fakes/arbitraries.js';

const ruleOf: RuleOf = (pod) => podRule(pod, defaultDrainRuleSettings, t0);

const costPodArb = (i: number): fc.Arbitrary<CostPod> =>
  fc
    .record({
      info: podArb(i),
      ready: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, { arbitrary: fc.constant(false), weight: 1 }),
      priority: fc.integer({ min: -1000, max: 2_000_000_000 }),
      deletionCost: fc.integer({ min: -2_000, max: 2_000 }),
      localStorage: fc.boolean(),
      pinned: fc.boolean(),
      budgets: fc.array(
        fc.record({
          name: fc.constantFrom('pdb-a', 'pdb-b'),
          disruptionsAllowed: fc.constantFrom(0, 0, 1),
          currentHealthy: fc.integer({ min: 0, max: 3 }),
        }),
        { maxLength: 2 },
      ),
      owner: fc.option(
        fc.record({
          kind: fc.constantFrom('ReplicaSet', 'StatefulSet'),
          name: fc.constantFrom('web', 'db'),
          readyReplicas: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
        }),
        { nil: undefined },
      ),
    })
    .map(({ pinned, ...p }): CostPod => {
      const requiredNodeLabels: Record<string, string[]> = pinned ? { 'eks.amazonaws.com/nodegroup': ['workers'] } : {};
      return { ...p, requiredNodeLabels };
    });

const nodePodsArb = indexedArray(8, costPodArb);
const nodeLabels = { 'eks.amazonaws.com/nodegroup': 'workers' };
const cost = (pods: readonly CostPod[]) => nodeCost(pods, 'workers', nodeLabels, ruleOf);

describe("a node's departure cost (properties)", () => {
  test.prop([nodePodsArb, costPodArb(99)])(
    'one more pod never makes a node cheaper, nor unblocks a blocked node',
    (pods, more) => {
      const [before, after] = [cost(pods), cost([...pods, more])];
      expect(after.points).toBeGreaterThanOrEqual(before.points);
      expect(after.evicted).toBeGreaterThanOrEqual(before.evicted);
      // Which blocker a pod is told with may change (the first rule that finds one), but blocked stays blocked.
      if (before.blockers.length > 0) expect(after.blockers.length).toBeGreaterThan(0);
    },
  );

  test.prop([nodePodsArb, costPodArb(99)])(
    'a pod the drain would not evict or wait for (DaemonSet, static, finished, leaving, skipped) costs nothing',
    (pods, more) => {
      const leaves = isDrainable(more.info) && !isTerminating(more.info) && ruleOf(more.info).behavior !== 'Skip';
      fc.pre(!leaves);
      expect(cost([...pods, more])).toEqual(cost(pods));
    },
  );

  test.prop([nodePodsArb])(
    'every pod the drain would move costs at least half a point, and is counted once',
    (pods) => {
      const c = cost(pods);
      expect(c.evicted).toBe(departing(pods, ruleOf).length);
      expect(c.points).toBeGreaterThanOrEqual(c.evicted * 0.5 - 0.005);
      expect(c.reasons[0]).toBe(`${c.evicted} pod${c.evicted === 1 ? '' : 's'} to evict`);
    },
  );

  test.prop([nodePodsArb])('a node with a pod its drain would wait for is blocked', (pods) => {
    const waited = departing(pods, ruleOf).some((p) => ruleOf(p.info).behavior === 'WaitCompleted');
    expect(cost(pods).blockers.some((b) => b.rule === 'runs-batch-work')).toBe(waited);
  });
});
