// The drain record (drainAnnotation): what a drain of ours wrote on the node. The phase a resumed
// drain picks up in, its deadline, its fair eviction window and the end of its load-balancer wait
// are all read from here, never from a message. Anything unreadable is treated as absent.
import { formatSurges, parseSurges } from './surge-marks.js';
import type { DrainMark, DrainRecord, DrainSource, StoredHold, TargetsReading } from '../model.js';
import { actionIdOfToken, parseActionId } from './action-id.js';
import { traitsOf } from '../rules/drain-source.js';
import { iso, jsonObject } from './json-object.js';

export function formatDrainRecord(r: DrainRecord): string {
  return JSON.stringify({
    ...sourceFields(r.source),
    notifiedAt: iso(r.notifiedAtMs),
    startedAt: iso(r.startedAtMs),
    updatedAt: iso(r.updatedAtMs),
    set: r.set,
    ...(r.priorLabel !== undefined ? { priorLabel: r.priorLabel } : {}),
    ...(r.aheadOf ? { aheadOf: r.aheadOf } : {}),
    ...(r.evicted ? { evicted: r.evicted } : {}),
    ...(r.drained ? { drainedAt: iso(r.drained.atMs), outcome: r.drained.outcome } : {}),
    ...(r.volumes && r.volumes.length > 0 ? { volumes: r.volumes } : {}),
    ...(r.targets ? { targets: { readAt: iso(r.targets.atMs), holds: r.targets.holds, calls: r.targets.calls } } : {}),
    ...(r.surges && r.surges.length > 0 ? { surges: formatSurges(r.surges) } : {}),
  });
}

function parseTargets(v: unknown): TargetsReading | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const t = v as Record<string, unknown>;
  const atMs = typeof t['readAt'] === 'string' ? Date.parse(t['readAt']) : Number.NaN;
  if (Number.isNaN(atMs) || !Array.isArray(t['holds'])) return undefined;
  const holds = (t['holds'] as unknown[]).flatMap((h): StoredHold[] => {
    const o = h as Record<string, unknown> | null;
    if (o === null || typeof o !== 'object' || (o['kind'] !== 'target-group' && o['kind'] !== 'classic')) return [];
    if (typeof o['id'] !== 'string' || typeof o['name'] !== 'string' || typeof o['state'] !== 'string') return [];
    const port = Number.isInteger(o['port']) ? (o['port'] as number) : undefined;
    return [
      { kind: o['kind'], id: o['id'], name: o['name'], state: o['state'], ...(port !== undefined ? { port } : {}) },
    ];
  });
  return { atMs, holds, calls: Number.isInteger(t['calls']) ? (t['calls'] as number) : 0 };
}

/**
 * The record as stored on the node; anything unreadable is treated as absent. Records of the
 * versions before (a `token` in clear, `markedBy`) are read as the same record, token hashed.
 */
export function parseDrainRecord(raw: string | undefined): DrainRecord | undefined {
  const v = jsonObject(raw);
  if (v === undefined) return undefined;
  const time = (key: string) => (typeof v[key] === 'string' ? Date.parse(v[key] as string) : Number.NaN);
  const startedAtMs = time('startedAt');
  const source = sourceOf(v);
  if (source === undefined || Number.isNaN(startedAtMs)) return undefined;
  const orStarted = (ms: number) => (Number.isNaN(ms) ? startedAtMs : ms);
  const set = Array.isArray(v['set'])
    ? v['set'].filter((m): m is DrainMark => m === 'exclude-from-load-balancers' || m === 'cordon')
    : [];
  const drainedAtMs = time('drainedAt');
  const outcome = v['outcome'] === 'timed-out' ? 'timed-out' : 'drained';
  const evicted = Number.isInteger(v['evicted']) ? (v['evicted'] as number) : 0;
  const aheadOf =
    typeof v['aheadOf'] === 'string' ? v['aheadOf'] : typeof v['markedBy'] === 'string' ? v['markedBy'] : undefined;
  return {
    source,
    notifiedAtMs: orStarted(time('notifiedAt')),
    startedAtMs,
    updatedAtMs: orStarted(time('updatedAt')),
    set,
    ...(typeof v['priorLabel'] === 'string' ? { priorLabel: v['priorLabel'] } : {}),
    ...(aheadOf !== undefined ? { aheadOf } : {}),
    ...(evicted > 0 ? { evicted } : {}),
    ...(!Number.isNaN(drainedAtMs) ? { drained: { atMs: drainedAtMs, outcome } } : {}),
    ...(Array.isArray(v['volumes']) ? { volumes: v['volumes'].filter((x): x is string => typeof x === 'string') } : {}),
    ...(parseTargets(v['targets']) !== undefined ? { targets: parseTargets(v['targets']) } : {}),
    ...(parseSurges(v['surges']) !== undefined ? { surges: parseSurges(v['surges']) } : {}),
  };
}

/**
 * The source as the record has always been written, so records of every version read alike: `action` (the action
 * id, "" for marks set ahead), `hook` when known, `spot: true` for a Spot interruption.
 */
function sourceFields(source: DrainSource): Record<string, unknown> {
  const { actionId, resumableThrough: hook, legacy } = traitsOf(source);
  return {
    action: actionId ?? '',
    ...(hook !== undefined && hook !== '' ? { hook } : {}),
    ...(legacy === 'spot' ? { spot: true } : {}),
  };
}

/** Read back; a record of the versions before (a `token` in clear) is the same record, token hashed. */
function sourceOf(v: Record<string, unknown>): DrainSource | undefined {
  const hook = typeof v['hook'] === 'string' && v['hook'] !== '' ? v['hook'] : undefined;
  const raw = typeof v['action'] === 'string' ? v['action'] : typeof v['token'] === 'string' ? v['token'] : undefined;
  if (raw === undefined) return undefined;
  if (raw === '') return { kind: 'marked-ahead', hook };
  const actionId = parseActionId(raw) ?? (typeof v['action'] === 'string' ? undefined : actionIdOfToken(raw));
  if (actionId === undefined) return undefined;
  if (v['spot'] === true || actionId.startsWith('spot:')) return { kind: 'spot-interruption', actionId };
  if (actionId.startsWith('instance:')) return { kind: 'resumed', actionId, hook };
  return { kind: 'lifecycle-action', actionId, hook };
}
