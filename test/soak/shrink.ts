// Shrinking a failing soak: the shortest timeline found that still violates one of the same
// invariants. Each try is a whole run on the same plane (minutes of real time), so the budget is
// a few runs: first everything after the first violation goes (it cannot have caused it), then
// chunks of what is left, halves first (delta debugging, Zeller's ddmin), as far as the budget goes.
import type { PlaneInfo } from '../cluster/plane/plane.js';
import type { SoakClock } from './clock.js';
import type { Violation } from './observations.js';
import { runScenario, type RunResult } from './runner.js';
import type { Scenario, TimedEvent } from './scenario.js';

export interface Shrunk {
  readonly scenario: Scenario;
  readonly violations: readonly Violation[];
  /** Runs made while shrinking. */
  readonly runs: number;
}

/** A scenario with these events only, long enough for the last of them. */
export function withTimeline(scenario: Scenario, timeline: readonly TimedEvent[]): Scenario {
  const lastMs = Math.max(0, ...timeline.map((e) => e.atMs));
  return { ...scenario, timeline, minutes: Math.min(scenario.minutes, Math.ceil((lastMs + 30_000) / 30_000) / 2) };
}

/**
 * ddmin over the timeline with a budget of tries: `fails` says whether a timeline still fails.
 * Pure apart from `fails`, so it is tested without a plane.
 */
export async function minimize<T>(
  items: readonly T[],
  fails: (candidate: readonly T[]) => Promise<boolean>,
  budget: number,
): Promise<{ readonly items: readonly T[]; readonly tries: number }> {
  let current = [...items];
  let tries = 0;
  let n = 2;
  while (current.length > 1 && tries < budget) {
    const size = Math.ceil(current.length / n);
    let reduced = false;
    for (let start = 0; start < current.length && tries < budget; start += size) {
      const candidate = [...current.slice(0, start), ...current.slice(start + size)];
      tries++;
      if (await fails(candidate)) {
        current = candidate;
        n = Math.max(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (n >= current.length) break;
      n = Math.min(current.length, n * 2);
    }
  }
  return { items: current, tries };
}

export async function shrink(
  failed: RunResult,
  o: { plane: PlaneInfo; clock: SoakClock; say: (line: string) => void; nextRun: () => number; budget?: number },
): Promise<Shrunk> {
  const names = new Set(failed.violations.map((v) => v.invariant));
  let best: Shrunk = { scenario: failed.scenario, violations: failed.violations, runs: 0 };
  let runs = 0;
  const fails = async (timeline: readonly TimedEvent[]): Promise<boolean> => {
    runs++;
    const scenario = withTimeline(failed.scenario, timeline);
    o.say(`shrinking: try ${runs}, ${timeline.length} events over ${scenario.minutes} min`);
    const result = await runScenario(scenario, { plane: o.plane, run: o.nextRun(), clock: o.clock, say: () => {} });
    const same = result.violations.filter((v) => names.has(v.invariant));
    if (same.length > 0 && timeline.length <= best.scenario.timeline.length)
      best = { scenario, violations: same, runs };
    o.say(`shrinking: try ${runs} ${same.length > 0 ? 'still fails' : 'passes'}`);
    return same.length > 0;
  };
  const firstMs = Math.min(...failed.violations.map((v) => v.atMs ?? Infinity)) - failed.observations.startMs;
  const before = failed.scenario.timeline.filter((e) => e.atMs <= firstMs);
  let timeline = failed.scenario.timeline;
  if (before.length < timeline.length && before.length > 0 && (await fails(before))) timeline = before;
  await minimize(timeline, fails, (o.budget ?? 4) - runs);
  return { ...best, runs };
}
