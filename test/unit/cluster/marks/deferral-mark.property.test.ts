// Properties of the termination policy's deferral mark codec (lambda/cluster/marks/deferral-mark.ts): format then
// parse is the identity, and anything else stored reads as a mark with a time and a group or as none, without a throw.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { DeferralMark } from '../../../../lambda/cluster/model.js';
import { formatDeferral, parseDeferral } from '../../../../lambda/cluster/marks/deferral-mark.js';
import { nearRecords, untrusted } from '../../../fakes/arbitraries.js';

const markArb: fc.Arbitrary<DeferralMark> = fc.record({
  sinceMs: fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2100-01-01T00:00:00Z') }),
  group: fc.string({ maxLength: 255 }),
});

describe('the deferral mark codec (properties)', () => {
  test.prop([markArb])('format then parse is the identity', (mark) => {
    expect(parseDeferral(formatDeferral(mark))).toEqual(mark);
  });

  test.prop([
    fc.option(
      fc.oneof(
        untrusted.map((v) => JSON.stringify(v) ?? ''),
        fc.string(),
        nearRecords(markArb.map(formatDeferral), ['since', 'group']),
      ),
      { nil: undefined },
    ),
  ])('anything stored reads as a mark with a time and a group or as none, and never throws', (text) => {
    const m = parseDeferral(text);
    if (m === undefined) return;
    expect(Number.isFinite(m.sinceMs)).toBe(true);
    expect(typeof m.group).toBe('string');
    expect(parseDeferral(formatDeferral(m))).toEqual(m);
  });
});
