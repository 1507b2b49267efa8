import { describe, expect, it } from 'vitest';
import { choose, rank, type Candidate } from '../../../lambda/termination-policy/choose.js';
import type { NodeCost } from '../../../lambda/termination-policy/cost-rules.js';

const cost = (points: number, blocked = false): NodeCost => ({
  points,
  evicted: points,
  reasons: [],
  blockers: blocked ? [{ rule: 'runs-batch-work', pod: 'p', why: 'a Job' }] : [],
});
const cand = (
  id: string,
  points: number,
  o: { blocked?: boolean; zone?: string; market?: string } = {},
): Candidate => ({
  suggestion: { instanceId: id, availabilityZone: o.zone ?? 'a', instanceType: 't', market: o.market ?? 'on-demand' },
  node: `node-${id}`,
  cost: cost(points, o.blocked),
});
const ids = (rs: readonly { suggestion: { instanceId: string } }[]) => rs.map((r) => r.suggestion.instanceId);

describe('choosing within what Auto Scaling asks', () => {
  it('ranks unblocked first, then by cost, then in Auto Scaling order', () => {
    expect(ids(rank([cand('i-1', 5), cand('i-2', 0, { blocked: true }), cand('i-3', 1), cand('i-4', 1)]))).toEqual([
      'i-3',
      'i-4',
      'i-1',
      'i-2',
    ]);
  });

  it('ranks an instance with no node found after known unblocked nodes, before blocked ones', () => {
    const unknown: Candidate = { ...cand('i-9', 0), node: undefined, cost: { ...cost(0), unknown: true } };
    expect(ids(rank([unknown, cand('i-1', 0, { blocked: true }), cand('i-2', 7)]))).toEqual(['i-2', 'i-9', 'i-1']);
  });

  it('gives the cheapest, no more than the capacity asked per zone and market', () => {
    const c = choose(
      [cand('i-1', 5), cand('i-2', 1), cand('i-3', 2, { zone: 'b' }), cand('i-4', 0, { market: 'spot' })],
      [
        { availabilityZone: 'a', capacity: 1, market: 'on-demand' },
        { availabilityZone: 'b', capacity: 1, market: 'on-demand' },
      ],
      true,
    );
    expect(ids(c.chosen)).toEqual(['i-2', 'i-3']);
    expect(c.unfilled).toBe(0);
  });

  it('never gives a blocked node; what it cannot fill is unfilled', () => {
    const c = choose(
      [cand('i-1', 0, { blocked: true }), cand('i-2', 3)],
      [{ availabilityZone: 'a', capacity: 2, market: 'on-demand' }],
      true,
    );
    expect(ids(c.chosen)).toEqual(['i-2']);
    expect(ids(c.passedOver)).toEqual(['i-1']);
    expect(c.unfilled).toBe(1);
  });

  it('a closed window gives nothing and passes every candidate over', () => {
    const c = choose(
      [cand('i-1', 0), cand('i-2', 1)],
      [{ availabilityZone: 'a', capacity: 1, market: 'on-demand' }],
      false,
    );
    expect(c.chosen).toEqual([]);
    expect(ids(c.passedOver)).toEqual(['i-1', 'i-2']);
    expect(c.unfilled).toBe(1);
  });

  it('a zone asked for with no candidate is not a deferral', () => {
    const c = choose(
      [cand('i-1', 0)],
      [
        { availabilityZone: 'a', capacity: 1, market: 'on-demand' },
        { availabilityZone: 'z', capacity: 3, market: 'on-demand' },
      ],
      true,
    );
    expect(c.unfilled).toBe(0);
  });
});
