// The record a `migrate` of ours keeps on an old node (migrationAnnotation): its groups, its lease.
import { type MigrationRecord } from '../model.js';
import { jsonObject } from './json-object.js';

export function formatMigrationRecord(r: MigrationRecord): string {
  return JSON.stringify({
    id: r.id,
    from: r.from,
    to: r.to,
    renewedAt: new Date(r.renewedAtMs).toISOString(),
    leaseSeconds: r.leaseSeconds,
    cordoned: r.cordoned,
  });
}

/** The record as stored on the node; anything unreadable is treated as absent. */
export function parseMigrationRecord(raw: string | undefined): MigrationRecord | undefined {
  const v = jsonObject(raw);
  if (v === undefined) return undefined;
  const renewedAtMs = typeof v['renewedAt'] === 'string' ? Date.parse(v['renewedAt']) : Number.NaN;
  const leaseSeconds = v['leaseSeconds'];
  if (
    typeof v['id'] !== 'string' ||
    Number.isNaN(renewedAtMs) ||
    typeof leaseSeconds !== 'number' ||
    !(leaseSeconds > 0)
  )
    return undefined;
  return {
    id: v['id'],
    // A group name is a string; anything else reads as none (String() of an object JSON can carry may throw).
    from: typeof v['from'] === 'string' ? v['from'] : '',
    to: typeof v['to'] === 'string' ? v['to'] : '',
    renewedAtMs,
    leaseSeconds,
    cordoned: v['cordoned'] === true,
  };
}
