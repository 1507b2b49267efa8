// The drain record (drainAnnotation): what a drain of ours wrote on the node. The phase a resumed
// drain picks up in, its deadline, its fair eviction window and the end of its load-balancer wait
// are all read from here, never from a message. Anything unreadable is treated as absent.
import { createHash } from 'node:crypto';
import { formatSurges, parseSurges } from './surge-marks.js';
import { type DrainRecord, type TargetsReading, type StoredHold, type DrainMark } from '../model.js';
import { iso, jsonObject } from './json-object.js';

/**
 * A lifecycle token identifies the action, and whoever holds it can complete it: it is never
 * written where `get nodes` can read it. Tokens are random UUIDs, so a hash names the action
 * without revealing it; every action re-proves its authority by presenting the token (or its
 * instance) to Auto Scaling, never by what the node says.
 */
export function actionIdOf(token: string): string {
  return `sha256:${createHash('sha256').update(token).digest('hex').slice(0, 32)}`;
}

export function formatDrainRecord(r: DrainRecord): string {
  return JSON.stringify({
    action: r.action,
    ...(r.hook ? { hook: r.hook } : {}),
    notifiedAt: iso(r.notifiedAtMs),
    startedAt: iso(r.startedAtMs),
    updatedAt: iso(r.updatedAtMs),
    set: r.set,
    ...(r.priorLabel !== undefined ? { priorLabel: r.priorLabel } : {}),
    ...(r.aheadOf ? { aheadOf: r.aheadOf } : {}),
    ...(r.spot ? { spot: true } : {}),
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
  const action =
    typeof v['action'] === 'string'
      ? v['action']
      : typeof v['token'] === 'string'
        ? v['token'] === ''
          ? ''
          : actionIdOf(v['token'])
        : undefined;
  if (action === undefined || Number.isNaN(startedAtMs)) return undefined;
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
    action,
    hook: typeof v['hook'] === 'string' ? v['hook'] : '',
    notifiedAtMs: orStarted(time('notifiedAt')),
    startedAtMs,
    updatedAtMs: orStarted(time('updatedAt')),
    set,
    ...(typeof v['priorLabel'] === 'string' ? { priorLabel: v['priorLabel'] } : {}),
    ...(aheadOf !== undefined ? { aheadOf } : {}),
    ...(v['spot'] === true ? { spot: true } : {}),
    ...(evicted > 0 ? { evicted } : {}),
    ...(!Number.isNaN(drainedAtMs) ? { drained: { atMs: drainedAtMs, outcome } } : {}),
    ...(Array.isArray(v['volumes']) ? { volumes: v['volumes'].filter((x): x is string => typeof x === 'string') } : {}),
    ...(parseTargets(v['targets']) !== undefined ? { targets: parseTargets(v['targets']) } : {}),
    ...(parseSurges(v['surges']) !== undefined ? { surges: parseSurges(v['surges']) } : {}),
  };
}
