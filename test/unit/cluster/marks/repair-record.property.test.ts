// Properties of node auto repair's record codec (lambda/cluster/marks/repair-record.ts): format then parse is the
// identity, and anything else stored reads as a replace or reboot record or as none (never acted on), without a throw.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { RepairRecord } from '../../../../lambda/cluster/model.js';
import { formatRepairRecord, parseRepairRecord } from '../../../../lambda/cluster/marks/repair-record.js';
import { nearRecords, untrusted } from '../../../fakes/arbitraries.js';

const recordTime = fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2100-01-01T00:00:00Z') });
const repairArb: fc.Arbitrary<RepairRecord> = fc.record(
  {
    action: fc.constantFrom('replace', 'reboot') as fc.Arbitrary<RepairRecord['action']>,
    instanceId: fc.stringMatching(/^i-[0-9a-f]{17}$/),
    condition: fc.string({ maxLength: 20 }),
    reason: fc.string({ maxLength: 20 }),
    decidedAtMs: recordTime,
    rebootedAtMs: recordTime,
    cordoned: fc.boolean(),
  },
  { requiredKeys: ['action', 'instanceId', 'condition', 'reason', 'decidedAtMs', 'cordoned'] },
);

describe('the repair record codec (properties)', () => {
  test.prop([repairArb])('format then parse is the identity', (record) => {
    expect(parseRepairRecord(formatRepairRecord(record))).toEqual(record);
  });

  test.prop([
    fc.oneof(
      untrusted.map((v) => JSON.stringify(v) ?? ''),
      fc.string(),
      nearRecords(repairArb.map(formatRepairRecord), [
        'action',
        'instanceId',
        'condition',
        'reason',
        'decidedAt',
        'rebootedAt',
        'cordoned',
      ]),
    ),
  ])('anything stored reads as a replace or reboot record or as none, and never throws', (text) => {
    const r = parseRepairRecord(text);
    if (r === undefined) return;
    expect(['replace', 'reboot']).toContain(r.action);
    expect(Number.isFinite(r.decidedAtMs)).toBe(true);
    expect(parseRepairRecord(formatRepairRecord(r))).toEqual(r);
  });
});
