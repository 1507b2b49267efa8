// Properties of the termination policy's choice (lambda/termination-policy/choose.ts) over generated suggestions,
// capacity asks per zone and market, and node costs: never an instance outside the suggestion, never more than asked
// in a zone and market, never a blocked node, the cheapest first, and no capacity left unfilled while an unblocked
// candidate of its zone and market waits.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { choose, rank, type Candidate } from '../../../lambda/termination-policy/choose.js';
import type { CapacityAsk } from '../../../lambda/termination-policy/payload.js';
import { indexedArray } from '../../fakes/arbitraries.js';

const zones = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];
const markets = ['on-demand', 'spot'];

const candidateArb = (i: number): fc.Arbitrary<Candidate> =>
  fc
    .record({
      zone: fc.constantFrom(...zones),
      market: fc.constantFrom(...markets),
      node: fc.option(fc.constant(`node-${i}`), { nil: undefined, freq: 5 }),
      blocked: fc.boolean(),
      unknown: fc.boolean(),
      points: fc.integer({ min: 0, max: 4000 }).map((p) => p / 100),
    })
    .map((g) => ({
      suggestion: {
        instanceId: `i-${String(i).padStart(17, '0')}`,
        availabilityZone: g.zone,
        instanceType: 'm5.large',
        market: g.market,
      },
      node: g.node,
      cost: {
        blockers: g.blocked ? [{ rule: 'runs-batch-work' as const, pod: 'default/job', why: 'runs a Job' }] : [],
        points: g.points,
        reasons: [],
        evicted: 0,
        ...(g.unknown ? { unknown: true } : {}),
      },
    }));

const candidatesArb = indexedArray(12, candidateArb);
const capacityArb: fc.Arbitrary<CapacityAsk[]> = fc.array(
  fc.record({
    availabilityZone: fc.constantFrom(...zones),
    capacity: fc.integer({ min: 0, max: 5 }),
    market: fc.constantFrom(...markets),
  }),
  { maxLength: 6 },
);

const bucket = (zone: string, market: string) => `${zone}|${market}`;
const asked = (capacity: readonly CapacityAsk[], key: string) =>
  capacity.filter((c) => bucket(c.availabilityZone, c.market) === key).reduce((n, c) => n + c.capacity, 0);

describe("the termination policy's choice (properties)", () => {
  test.prop([candidatesArb, capacityArb, fc.boolean()])(
    'never an instance outside the suggestion, never twice, and never more than asked per zone and market',
    (candidates, capacity, open) => {
      const { chosen } = choose(candidates, capacity, open);
      const ids = chosen.map((r) => r.suggestion.instanceId);
      expect(new Set(ids).size).toBe(ids.length);
      for (const r of chosen) expect(candidates.map((c) => c.suggestion)).toContain(r.suggestion);
      const counts = new Map<string, number>();
      for (const r of chosen) {
        const key = bucket(r.suggestion.availabilityZone, r.suggestion.market);
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      for (const [key, n] of counts) expect(n).toBeLessThanOrEqual(asked(capacity, key));
      expect(chosen.length).toBeLessThanOrEqual(capacity.reduce((n, c) => n + c.capacity, 0));
    },
  );

  test.prop([candidatesArb, capacityArb, fc.boolean()])(
    'never a blocked node, nothing outside the windows, and the cheapest first',
    (candidates, capacity, open) => {
      const { chosen, passedOver } = choose(candidates, capacity, open);
      if (!open) expect(chosen).toEqual([]);
      for (const r of chosen) expect(r.cost.blockers).toEqual([]);
      for (let i = 1; i < chosen.length; i++) expect(chosen[i - 1]!.rank).toBeLessThan(chosen[i]!.rank);
      expect(chosen.filter((r) => passedOver.includes(r))).toEqual([]);
      for (const r of passedOver) expect(!open || r.cost.blockers.length > 0).toBe(true);
    },
  );

  test.prop([candidatesArb, capacityArb])(
    'no capacity is left unfilled while an unblocked candidate of its zone and market is not given',
    (candidates, capacity) => {
      const { chosen, unfilled } = choose(candidates, capacity, true);
      let left = 0;
      for (const key of new Set(candidates.map((c) => bucket(c.suggestion.availabilityZone, c.suggestion.market)))) {
        const want = asked(capacity, key);
        if (!capacity.some((c) => bucket(c.availabilityZone, c.market) === key)) continue;
        const given = chosen.filter((r) => bucket(r.suggestion.availabilityZone, r.suggestion.market) === key).length;
        const free = candidates.filter(
          (c) => bucket(c.suggestion.availabilityZone, c.suggestion.market) === key && c.cost.blockers.length === 0,
        ).length;
        expect(given).toBe(Math.min(want, free));
        left += want - given;
      }
      expect(unfilled).toBe(left);
    },
  );

  test.prop([candidatesArb])(
    "ranks blocked nodes last, instances without a node before them, then by points, ties in Auto Scaling's order",
    (candidates) => {
      const ranked = rank(candidates);
      expect(ranked.map((r) => r.rank)).toEqual(candidates.map((_, i) => i + 1));
      const band = (c: Candidate) => (c.cost.blockers.length > 0 ? 2 : c.cost.unknown ? 1 : 0);
      for (let i = 1; i < ranked.length; i++) {
        const [a, b] = [ranked[i - 1]!, ranked[i]!];
        expect(band(a)).toBeLessThanOrEqual(band(b));
        if (band(a) === band(b)) expect(a.cost.points).toBeLessThanOrEqual(b.cost.points);
        if (band(a) === band(b) && a.cost.points === b.cost.points)
          expect(candidates.findIndex((c) => c.suggestion === a.suggestion)).toBeLessThan(
            candidates.findIndex((c) => c.suggestion === b.suggestion),
          );
      }
    },
  );
});
