// Properties of the pass view (lambda/eviction/pass-view.ts) at generated moments of a drain: the pods of a pass
// sorted once (waited for, evicted by order, left), a Skip pod never asked to leave, a WaitCompleted pod never
// evicted while the drain waits for it, and the eviction tier the lowest order present.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { evictionOrder, waitsUntilDeadline } from '../../../lambda/cluster/rules/drain-plan.js';
import { passView } from '../../../lambda/eviction/pass-view.js';
import { isDue, isEligible } from '../../../lambda/eviction/rules.js';
import { drainArb } from '../../fakes/drain-arbitraries.js';

describe('the pass view (properties)', () => {
  test.prop([drainArb])('remaining is waiting plus evictable, and a pod the rules leave is never in it', ({ view }) => {
    expect(new Set([...view.waiting, ...view.evictable])).toEqual(new Set(view.remaining));
    expect(view.waiting.filter((p) => view.evictable.includes(p))).toEqual([]);
    for (const pod of view.remaining) expect(view.ruleOf(pod).behavior).not.toBe('Skip');
    for (const pod of view.skipped) expect(view.ruleOf(pod)).toMatchObject({ behavior: 'Skip' });
    expect(view.skipped.filter((p) => view.remaining.includes(p))).toEqual([]);
  });

  test.prop([drainArb])(
    'a Skip pod is never evicted, and a WaitCompleted pod never while its wait lasts (never, if until the deadline)',
    ({ view, options }) => {
      const m = view.moment;
      for (const pod of view.evictable.filter((p) => isEligible(p, m) || isDue(p, m))) {
        const rule = view.ruleOf(pod);
        expect(rule.behavior).not.toBe('Skip');
        // Without a batch window (a Spot warning's two minutes) nothing is waited for: docs/drain-rules.md.
        if (options.batch !== undefined) expect(waitsUntilDeadline(rule)).toBe(false);
        if (options.batch !== undefined && rule.behavior === 'WaitCompleted')
          expect(m.nowMs).toBeGreaterThanOrEqual(Math.min(options.batch.untilMs, rule.untilMs ?? Infinity));
      }
    },
  );

  test.prop([drainArb])('the tier is the lowest order among the pods evicted', ({ view }) => {
    const orders = view.evictable.map((p) => evictionOrder(view.ruleOf(p)));
    expect(view.moment.tier).toBe(Math.min(...orders));
    for (const pod of view.evictable) expect(view.moment.orderOf(pod)).toBeGreaterThanOrEqual(view.moment.tier);
  });

  test.prop([drainArb])(
    'while a WaitCompleted pod remains with a batch window, the deadline is the batch-extended one',
    ({ view, options }) => {
      const holds = view.remaining.some((p) => view.ruleOf(p).behavior === 'WaitCompleted');
      const expected =
        holds && options.batch !== undefined
          ? Math.max(options.drainDeadlineMs, options.batch.deadlineMs)
          : options.drainDeadlineMs;
      expect(view.moment.drainDeadlineMs).toBe(expected);
    },
  );

  test.prop([drainArb, fc.nat(600_000)])(
    'a tier keeps the time it was first reached: a later pass never moves it',
    ({ options, state, view }, laterMs) => {
      const reached = new Map(state.tierReachedMs);
      passView(options, { ...state, nowMs: state.nowMs + laterMs });
      for (const [tier, at] of reached) expect(state.tierReachedMs.get(tier)).toBe(at);
      if (Number.isFinite(view.moment.tier)) expect(state.tierReachedMs.has(view.moment.tier)).toBe(true);
    },
  );
});
