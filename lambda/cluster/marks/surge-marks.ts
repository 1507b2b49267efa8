// The surges of a drain as the drain record stores them (drain-record.ts): a hand-off or the
// reconciler resumes the wait and never restarts a Deployment twice for one drain.
import type { DeploymentRef, SurgeMark, SurgeState } from '../model.js';

const states: ReadonlySet<string> = new Set(['waiting', 'ready', 'timed-out', 'refused']);

export function formatSurges(surges: readonly SurgeMark[]): unknown[] {
  return surges.map((s) => ({
    pod: s.pod,
    uid: s.uid,
    deployment: s.deployment !== undefined ? deploymentKey(s.deployment) : '',
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
        deployment: deploymentRef(o['deployment']),
        ...(typeof o['restartedAt'] === 'string' ? { restartedAt: o['restartedAt'] } : {}),
        atMs,
        state: o['state'] as SurgeState,
        ...(typeof o['reason'] === 'string' ? { reason: o['reason'] } : {}),
      },
    ];
  });
}

/** A Deployment as the record, the Events and the logs name it: namespace/name. */
export function deploymentKey(ref: DeploymentRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/** namespace/name read back ('' is a refusal with no Deployment: a StatefulSet's pod). */
function deploymentRef(key: string): DeploymentRef | undefined {
  const at = key.indexOf('/');
  return at > 0 ? { namespace: key.slice(0, at), name: key.slice(at + 1) } : undefined;
}
