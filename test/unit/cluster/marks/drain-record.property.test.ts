// Properties of the drain record's codec (lambda/cluster/marks/drain-record.ts, with surge-marks.ts): what a drain
// writes reads back the same (format then parse is the identity), anything else on the node reads as a record of
// the right shape or none, and never throws.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { formatDrainRecord, parseDrainRecord } from '../../../../lambda/cluster/marks/drain-record.js';
import { drainRecordArb, nearRecords, untrusted } from '../../../fakes/arbitraries.js';

/** Text that may be stored under the annotation: JSON of anything, near-records, and bytes that are not JSON. */
const storedArb = fc.oneof(
  untrusted.map((v) => JSON.stringify(v) ?? 'undefined'),
  nearRecords(drainRecordArb.map(formatDrainRecord), [
    'action',
    'token',
    'startedAt',
    'set',
    'targets',
    'surges',
    'drainedAt',
    'spot',
    'evicted',
    'volumes',
    'priorLabel',
    'aheadOf',
    'markedBy',
  ]),
  fc.string(),
);

describe('the drain record codec (properties)', () => {
  test.prop([drainRecordArb])('format then parse is the identity', (record) => {
    expect(parseDrainRecord(formatDrainRecord(record))).toEqual(record);
  });

  test.prop([drainRecordArb])('formatting what was read back writes the same text', (record) => {
    const text = formatDrainRecord(record);
    expect(formatDrainRecord(parseDrainRecord(text)!)).toBe(text);
  });

  test.prop([storedArb])('anything stored reads as a well-formed record or as none, and never throws', (text) => {
    const r = parseDrainRecord(text);
    if (r === undefined) return;
    expect(Number.isFinite(r.startedAtMs) && Number.isFinite(r.notifiedAtMs) && Number.isFinite(r.updatedAtMs)).toBe(
      true,
    );
    expect(['lifecycle-action', 'resumed', 'spot-interruption', 'marked-ahead']).toContain(r.source.kind);
    for (const m of r.set) expect(['exclude-from-load-balancers', 'cordon']).toContain(m);
    if (r.evicted !== undefined) expect(Number.isInteger(r.evicted) && r.evicted > 0).toBe(true);
    for (const v of r.volumes ?? []) expect(typeof v).toBe('string');
    for (const s of r.surges ?? []) expect(['waiting', 'ready', 'timed-out', 'refused']).toContain(s.state);
    // What was read writes back without a throw, and one write later is a fixed point (an empty list is written as
    // absent: it reads back as none).
    const rewritten = parseDrainRecord(formatDrainRecord(r));
    expect(rewritten).toBeDefined();
    expect(parseDrainRecord(formatDrainRecord(rewritten!))).toEqual(rewritten);
  });
});
