// Properties of the drain plan (lambda/cluster/rules/drain-plan.ts) over generated nodes of pods and DRAIN_RULES:
// every pod in exactly one place, the eviction tiers in order (a tier keeps the pods' order as given), the plan's
// reading of a pod the drain rules' own, and the named readings agreeing with each other.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  drainPlan,
  evictionOrder,
  isEvicted,
  isWaitedFor,
  mustLeave,
  planRank,
  waitEndMs,
  waitsUntilDeadline,
} from '../../../../lambda/cluster/rules/drain-plan.js';
import { podRule } from '../../../../lambda/cluster/rules/drain-rules.js';
import { isFinished, isMirrorPod } from '../../../../lambda/cluster/rules/pods.js';
import { aroundT0, drainRuleSettingsArb, podsArb, t0 } from '../../../fakes/arbitraries.js';

describe('drain plan (properties)', () => {
  test.prop([podsArb(), drainRuleSettingsArb, aroundT0])(
    'every pod is in exactly one place: evicted, waited for, left, or ignored',
    (pods, settings, nowMs) => {
      const plan = drainPlan(pods, settings, nowMs);
      const placed = [...plan.evict, ...plan.waitFor, ...plan.leave, ...plan.ignore].map((p) => p.pod);
      expect(placed).toHaveLength(pods.length);
      expect(new Set(placed)).toEqual(new Set(pods));
    },
  );

  test.prop([podsArb(), drainRuleSettingsArb, aroundT0])(
    'the tiers are in order, and a tier keeps the order the pods came in',
    (pods, settings, nowMs) => {
      const { evict } = drainPlan(pods, settings, nowMs);
      for (let i = 1; i < evict.length; i++) {
        const [a, b] = [evict[i - 1]!, evict[i]!];
        expect(a.rule.order).toBeLessThanOrEqual(b.rule.order);
        if (a.rule.order === b.rule.order) expect(pods.indexOf(a.pod)).toBeLessThan(pods.indexOf(b.pod));
      }
    },
  );

  test.prop([podsArb(), drainRuleSettingsArb, aroundT0])(
    "each pod's rule is the drain rules' reading of that pod alone, whatever else is on the node",
    (pods, settings, nowMs) => {
      const plan = drainPlan(pods, settings, nowMs);
      for (const pod of pods) {
        expect(plan.ruleOf(pod)).toEqual(podRule(pod, settings, nowMs));
        expect(drainPlan([pod], settings, nowMs).ruleOf(pod)).toEqual(plan.ruleOf(pod));
      }
    },
  );

  test.prop([podsArb().chain((pods) => fc.tuple(fc.constant(pods), fc.shuffledSubarray(pods))), drainRuleSettingsArb])(
    'the plan of fewer pods, in any order, places each pod where the whole plan did',
    ([pods, some], settings) => {
      const whole = drainPlan(pods, settings, t0);
      const part = drainPlan(some, settings, t0);
      const where = (plan: typeof whole) => (pod: (typeof pods)[number]) =>
        plan.evict.some((p) => p.pod === pod)
          ? 'evict'
          : plan.waitFor.some((p) => p.pod === pod)
            ? 'wait'
            : plan.leave.some((p) => p.pod === pod)
              ? 'leave'
              : 'ignore';
      for (const pod of some) expect(where(part)(pod)).toBe(where(whole)(pod));
    },
  );

  test.prop([podsArb(), drainRuleSettingsArb, aroundT0])(
    'static and finished pods are ignored, never evicted, waited for or told',
    (pods, settings, nowMs) => {
      const plan = drainPlan(pods, settings, nowMs);
      for (const pod of pods.filter((p) => isMirrorPod(p) || isFinished(p)))
        expect(plan.ignore.map((p) => p.pod)).toContain(pod);
      for (const { rule } of plan.leave) expect(rule.builtIn).toBeUndefined();
      for (const { rule } of plan.ignore) expect(rule.builtIn).toBe(true);
    },
  );

  test.prop([podsArb(), drainRuleSettingsArb, aroundT0, aroundT0])(
    'the named readings agree: what must leave is evicted or waited for; a pod waited for until the deadline is never evicted',
    (pods, settings, nowMs, batchUntilMs) => {
      const plan = drainPlan(pods, settings, nowMs);
      for (const pod of pods) {
        const rule = plan.ruleOf(pod);
        expect(mustLeave(rule)).toBe(rule.behavior !== 'Skip');
        expect(isEvicted(rule) && !mustLeave(rule)).toBe(false);
        if (waitsUntilDeadline(rule)) {
          expect(isEvicted(rule)).toBe(false);
          expect(isWaitedFor(rule) && waitEndMs(rule, batchUntilMs)).toBe(Number.POSITIVE_INFINITY);
        }
        if (isWaitedFor(rule) && !waitsUntilDeadline(rule))
          expect(waitEndMs(rule, batchUntilMs)).toBeLessThanOrEqual(batchUntilMs);
        expect(planRank(rule)).toBe({ WaitCompleted: 0, Drain: 1, Skip: 2 }[rule.behavior]);
        expect(evictionOrder(rule)).toBe(
          rule.behavior === 'Drain' ? rule.order : rule.behavior === 'Skip' ? Number.POSITIVE_INFINITY : 0,
        );
      }
    },
  );
});
