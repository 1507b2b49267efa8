// How long retries may go on, as the caller knows it: the invocation's remaining time (the
// router sets it per record), or a shorter budget a best-effort step sets for itself (the
// sibling survey). Carried with the async context, so a port's retry loop (aws-patience.ts)
// reads it without every call site passing it: a throttled call that starts in the last
// seconds of an invocation gives up in time instead of being killed by Lambda mid-retry.
//   https://nodejs.org/api/async_context.html#class-asynclocalstorage
import { AsyncLocalStorage } from 'node:async_hooks';

const budgets = new AsyncLocalStorage<{ readonly untilMs: number }>();

/** Runs fn with every retry bounded by untilMs (clock time), or by a tighter budget already in force. */
export function withinBudget<T>(untilMs: number, fn: () => Promise<T>): Promise<T> {
  return budgets.run({ untilMs: Math.min(untilMs, budgetUntilMs()) }, fn);
}

/** When retries in this context must have given up; infinite outside any budget. */
export function budgetUntilMs(): number {
  return budgets.getStore()?.untilMs ?? Number.POSITIVE_INFINITY;
}
