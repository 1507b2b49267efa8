// How often the settle phase's load-balancer wait (settle-targets.ts) looks, and how much one
// termination's wait may spend: looks sparser as the wait goes on, a reading's longest time (an
// invocation with less before it hands on cannot read), and a budget of ELB calls over all its
// invocations.

/** Looks get sparser as the wait goes on: 2 s, 3 s, 4.5 s, ... up to 10 s, jittered. */
export function pollIntervalMs(look: number, random: () => number = Math.random): number {
  return Math.round(Math.min(10_000, 2000 * 1.5 ** look) * (0.8 + 0.4 * random()));
}

/** The longest one reading may take: two attempts of 3 s and the backoff between (runtime.ts). */
export const readBudgetMs = 8_000;
/** ELB calls one termination's wait may make, over all its invocations: then the last reading stands. */
export const callBudget = 400;
