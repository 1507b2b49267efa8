// Which instances to give Auto Scaling: the cheapest departures first, within the capacity it
// asks for in each Availability Zone and market, never a node with a blocker. Only among the
// instances it suggested, so its own constraints hold (scale-in protection, AZ balance,
// instances already leaving are never suggested).
import type { NodeCost } from './cost-rules.js';
import type { CapacityAsk, Suggestion } from './payload.js';

export interface Candidate {
  readonly suggestion: Suggestion;
  /** Its node, or undefined when no node of the cluster is this instance (nothing to drain). */
  readonly node: string | undefined;
  readonly cost: NodeCost;
}

export interface Ranked extends Candidate {
  /** 1 = cheapest. */
  readonly rank: number;
}

export interface Choice {
  /** What Auto Scaling gets, cheapest first. */
  readonly chosen: readonly Ranked[];
  /** Candidates not given, with a blocker (or all, outside the maintenance windows). */
  readonly passedOver: readonly Ranked[];
  /** Capacity asked in zones that had candidates, left unfilled: Auto Scaling asks again. */
  readonly unfilled: number;
}

const bucket = (zone: string, market: string) => `${zone}|${market}`;

/** 0: known, unblocked; 1: no node found (a node under another name may be anything); 2: blocked. */
const band = (c: Candidate) => (c.cost.blockers.length > 0 ? 2 : c.cost.unknown ? 1 : 0);

/**
 * Blocked nodes last, instances with no node found before them, then by cost points, then in Auto Scaling's order (its
 * choice among equals).
 */
export function rank(candidates: readonly Candidate[]): Ranked[] {
  return candidates
    .map((c, i) => ({ c, i }))
    .sort((a, b) => band(a.c) - band(b.c) || a.c.cost.points - b.c.cost.points || a.i - b.i)
    .map(({ c }, i) => ({ ...c, rank: i + 1 }));
}

/** `open`: inside a maintenance window (or none configured); closed: nothing is given. */
export function choose(candidates: readonly Candidate[], capacity: readonly CapacityAsk[], open: boolean): Choice {
  const left = new Map<string, number>();
  for (const c of capacity)
    left.set(bucket(c.availabilityZone, c.market), (left.get(bucket(c.availabilityZone, c.market)) ?? 0) + c.capacity);
  const ranked = rank(candidates);
  const chosen: Ranked[] = [];
  const passedOver: Ranked[] = [];
  const seen = new Set<string>();
  for (const r of ranked) {
    const key = bucket(r.suggestion.availabilityZone, r.suggestion.market);
    if (!left.has(key)) continue;
    seen.add(key);
    if (!open || r.cost.blockers.length > 0) {
      passedOver.push(r);
      continue;
    }
    if (left.get(key)! > 0) {
      chosen.push(r);
      left.set(key, left.get(key)! - 1);
    }
  }
  const unfilled = [...seen].reduce((n, key) => n + Math.max(0, left.get(key)!), 0);
  return { chosen, passedOver, unfilled };
}
