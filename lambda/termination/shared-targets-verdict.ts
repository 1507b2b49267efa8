// What the shared load-balancer readings (shared-targets.ts) say of one terminating instance:
// the groups that still hold it, those that could not be read, and those not read since its
// wait began (pending: they hold as before a first reading, without a warning).
import type { ReadingResult, SharedReading } from '../cluster/ports/target-readings.js';
import type { TargetHold, TargetReading } from '../shared/aws-ports.js';
import { AccessDeniedError } from '../shared/errors.js';

export const sameLb = (a: { kind: string; id: string }, b: { kind: string; id: string }) =>
  a.kind === b.kind && a.id === b.id;

/** The same failure, or the same instances in the same states. */
export function sameReading(a: ReadingResult, b: ReadingResult): boolean {
  if (a.failure !== b.failure) return false;
  const x = Object.entries(a.targets ?? {});
  const y = b.targets ?? {};
  return x.length === Object.keys(y).length && x.every(([id, state]) => y[id] === state);
}

/** What the readings taken since `sinceMs` say of one instance. */
export function verdict(
  instanceId: string,
  candidates: readonly TargetHold[],
  readings: readonly SharedReading[],
  sinceMs: number,
): { reading: TargetReading; pending: TargetHold[] } {
  const holds: TargetHold[] = [];
  const unread: TargetHold[] = [];
  const pending: TargetHold[] = [];
  let denied = 0;
  for (const c of candidates) {
    const r = readings.find((x) => sameLb(x.lb, c))?.reading;
    if (r === undefined || r.atMs < sinceMs) pending.push(c);
    else if (r.failure !== undefined) {
      unread.push(c);
      if (r.failure === 'denied') denied++;
    } else {
      const state = r.targets?.[instanceId];
      if (state !== undefined) holds.push({ ...c, state });
    }
  }
  if (candidates.length > 0 && denied === candidates.length) {
    const error = new AccessDeniedError('the shared reading of every load balancer was denied', 403);
    return { reading: { read: false, denied: true, error, calls: 0 }, pending: [] };
  }
  return { reading: { read: true, holds, unread, calls: 0 }, pending };
}
