// What a drain records of its surges in the drain record (node-marks.ts), so a hand-off or the
// reconciler resumes the wait and never restarts a Deployment twice for one drain.

export type SurgeState = 'waiting' | 'ready' | 'timed-out' | 'refused';

export interface SurgeMark {
  /** The pod the surge is for (its uid: a pod of the same name later is another pod). */
  readonly pod: string;
  readonly uid: string;
  /** namespace/name of its Deployment. */
  readonly deployment: string;
  /** The restart annotation's value we wrote (undefined: refused, nothing written). */
  readonly restartedAt?: string | undefined;
  /** When the surge began (the per-pod timeout runs from here) or was refused. */
  readonly atMs: number;
  readonly state: SurgeState;
  /** The refusal's name (max-surge-zero, no-readiness-probe, ...). */
  readonly reason?: string | undefined;
}

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
    if (typeof o['pod'] !== 'string' || typeof o['uid'] !== 'string' || typeof o['deployment'] !== 'string' || Number.isNaN(atMs)) return [];
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
