// How a shared load-balancer reading is kept on its Lease (ports/target-readings.ts): which load
// balancer (loadBalancerAnnotation), until when it is wanted (wantedUntilAnnotation), the last
// reading (readingAnnotation: times as ISO 8601, each registered instance with its state).
import type { LoadBalancerRef, ReadingResult } from '../ports/target-readings.js';
import { iso, jsonObject } from './json-object.js';

export function formatLoadBalancer(lb: LoadBalancerRef): string {
  return JSON.stringify({
    kind: lb.kind,
    id: lb.id,
    name: lb.name,
    ...(lb.port !== undefined ? { port: lb.port } : {}),
  });
}

/** Anything unreadable is absent: a reading nobody can tell the load balancer of is never used. */
export function parseLoadBalancer(raw: string | undefined): LoadBalancerRef | undefined {
  const v = jsonObject(raw);
  if (v === undefined || (v['kind'] !== 'target-group' && v['kind'] !== 'classic')) return undefined;
  if (typeof v['id'] !== 'string' || typeof v['name'] !== 'string') return undefined;
  const port = typeof v['port'] === 'number' && Number.isInteger(v['port']) ? v['port'] : undefined;
  return { kind: v['kind'], id: v['id'], name: v['name'], ...(port !== undefined ? { port } : {}) };
}

export function formatReading(r: ReadingResult): string {
  return JSON.stringify({
    at: iso(r.atMs),
    by: r.by,
    ...(r.failure !== undefined ? { failure: r.failure } : { targets: r.targets ?? {} }),
  });
}

const failures = new Set(['denied', 'unavailable']);

/** A reading without a time, or with neither targets nor a known failure, is absent (never read). */
export function parseReading(raw: string | undefined): ReadingResult | undefined {
  const v = jsonObject(raw);
  const atMs = typeof v?.['at'] === 'string' ? Date.parse(v['at']) : Number.NaN;
  if (v === undefined || Number.isNaN(atMs)) return undefined;
  const by = typeof v['by'] === 'string' ? v['by'] : '';
  if (typeof v['failure'] === 'string' && failures.has(v['failure']))
    return { atMs, by, failure: v['failure'] as ReadingResult['failure'] };
  const targets = v['targets'];
  if (typeof targets !== 'object' || targets === null || Array.isArray(targets)) return undefined;
  const states = Object.entries(targets).filter((e): e is [string, string] => typeof e[1] === 'string');
  return { atMs, by, targets: Object.fromEntries(states) };
}

/** Epoch milliseconds as the annotation holds them; 0 when unreadable (wanted by nobody). */
export function parseWantedUntil(raw: string | undefined): number {
  const ms = raw === undefined ? Number.NaN : Date.parse(raw);
  return Number.isNaN(ms) ? 0 : ms;
}
