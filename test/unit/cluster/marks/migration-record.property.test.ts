// Properties of the migration record's codec (lambda/cluster/marks/migration-record.ts): format then parse is the
// identity, and anything else stored reads as a record with a lease or as none, without a throw.
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { MigrationRecord } from '../../../../lambda/cluster/model.js';
import { formatMigrationRecord, parseMigrationRecord } from '../../../../lambda/cluster/marks/migration-record.js';
import { nearRecords, untrusted } from '../../../fakes/arbitraries.js';

const recordTime = fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2100-01-01T00:00:00Z') });
const migrationArb: fc.Arbitrary<MigrationRecord> = fc.record({
  id: fc.string({ maxLength: 20 }),
  from: fc.string({ maxLength: 20 }),
  to: fc.string({ maxLength: 20 }),
  renewedAtMs: recordTime,
  leaseSeconds: fc.integer({ min: 1, max: 86_400 }),
  cordoned: fc.boolean(),
});

describe('the migration record codec (properties)', () => {
  test.prop([migrationArb])('format then parse is the identity', (record) => {
    expect(parseMigrationRecord(formatMigrationRecord(record))).toEqual(record);
  });

  test.prop([
    fc.oneof(
      untrusted.map((v) => JSON.stringify(v) ?? ''),
      fc.string(),
      nearRecords(migrationArb.map(formatMigrationRecord), [
        'id',
        'from',
        'to',
        'renewedAt',
        'leaseSeconds',
        'cordoned',
      ]),
    ),
  ])('anything stored reads as a record with a lease or as none, and never throws', (text) => {
    const r = parseMigrationRecord(text);
    if (r === undefined) return;
    expect(r.leaseSeconds).toBeGreaterThan(0);
    expect(Number.isFinite(r.renewedAtMs)).toBe(true);
    expect(parseMigrationRecord(formatMigrationRecord(r))).toEqual(r);
  });

  it('a record whose group is an object JSON can carry reads without a throw (found by the property above)', () => {
    const text = '{"id":"m","from":{"toString":1},"to":"new","renewedAt":"2026-11-22T10:00:00.000Z","leaseSeconds":60}';
    expect(parseMigrationRecord(text)).toMatchObject({ id: 'm', from: '', to: 'new', leaseSeconds: 60 });
  });
});
