// The surges of a drain as the drain record stores them (drain-record.ts): a hand-off or the
// reconciler resumes the wait and never restarts a Deployment twice for one drain.
import { type SurgeMark, type SurgeState } from '../model.js';

const states: ReadonlySet<string> = new Set(['waiting', 'ready', 'timed-out', 'refused']);

export function formatSurges(surges: readonly SurgeMark[]): unknown[] {
  return surges.map((s) => ({
    pod: s.pod,
    uid: s.uid,
    deployment: s.deployment,
    ...(s.restartedAt !== undefined ? { restartedAt: s.restartedAt } : {}),
    at: new Date(s.atMs).toISOString(),
    state: s.state,
    ...(s.reason !== undefined ? { reason: s.reason } : {}),
  }));
}

/** The surges as stored; an unreadable entry is dropped, never the record. */
export function parseSurges(v: unknown): readonly SurgeMark[] | undefined {
  if (!Array.isArray(v)) return undefined;
  return v.flatMap((x): SurgeMark[] => {
    if (typeof x !== 'object' || x === null) return [];
    const o = x as Record<string, unknown>;
    const atMs = typeof o['at'] === 'string' ? Date.parse(o['at']) : Number.NaN;
    if (
      typeof o['pod'] !== 'string' ||
      typeof o['uid'] !== 'string' ||
      typeof o['deployment'] !== 'string' ||
      Number.isNaN(atMs)
    )
      return [];
    if (typeof o['state'] !== 'string' || !states.has(o['state'])) return [];
    return [
      {
        pod: o['pod'],
        uid: o['uid'],
        deployment: o['deployment'],
        ...(typeof o['restartedAt'] === 'string' ? { restartedAt: o['restartedAt'] } : {}),
        atMs,
        state: o['state'] as SurgeState,
        ...(typeof o['reason'] === 'string' ? { reason: o['reason'] } : {}),
      },
    ];
  });
}
