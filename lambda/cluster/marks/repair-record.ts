// Node auto repair's record (repairAnnotation): the repair is decided once, across passes.
import { type RepairRecord } from '../model.js';
import { iso, jsonObject } from './json-object.js';

export function formatRepairRecord(r: RepairRecord): string {
  return JSON.stringify({
    action: r.action,
    instanceId: r.instanceId,
    condition: r.condition,
    reason: r.reason,
    decidedAt: iso(r.decidedAtMs),
    ...(r.rebootedAtMs !== undefined ? { rebootedAt: iso(r.rebootedAtMs) } : {}),
    ...(r.cordoned ? { cordoned: true } : {}),
  });
}

/** The record as stored; anything unreadable is treated as absent (and never acted on). */
export function parseRepairRecord(raw: string | undefined): RepairRecord | undefined {
  const v = jsonObject(raw);
  if (v === undefined || (v['action'] !== 'replace' && v['action'] !== 'reboot')) return undefined;
  const decidedAtMs = typeof v['decidedAt'] === 'string' ? Date.parse(v['decidedAt']) : Number.NaN;
  const rebootedAtMs = typeof v['rebootedAt'] === 'string' ? Date.parse(v['rebootedAt']) : Number.NaN;
  if (Number.isNaN(decidedAtMs) || typeof v['instanceId'] !== 'string') return undefined;
  return {
    action: v['action'],
    instanceId: v['instanceId'],
    condition: typeof v['condition'] === 'string' ? v['condition'] : '',
    reason: typeof v['reason'] === 'string' ? v['reason'] : '',
    decidedAtMs,
    ...(Number.isNaN(rebootedAtMs) ? {} : { rebootedAtMs }),
    cordoned: v['cordoned'] === true,
  };
}
