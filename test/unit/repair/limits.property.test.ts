// Properties of node repair's storm and parallel limits (lambda/repair/limits.ts), as managed node groups'
// NodeRepairConfig defines them: held exactly above the threshold, more unhealthy nodes never lift the hold, at least
// one node at a time and never more than the limit allows, and a replacement held whenever a process it needs is
// suspended.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { parallelLimit, replacementHeld, stormOf } from '../../../lambda/repair/limits.js';
import type { Limit } from '../../../lambda/shared/repair-settings.js';

const limitArb: fc.Arbitrary<Limit> = fc.oneof(
  fc.integer({ min: 1, max: 50 }).map((count) => ({ count })),
  fc.integer({ min: 1, max: 100 }).map((percentage) => ({ percentage })),
);
const groupArb = fc
  .integer({ min: 0, max: 200 })
  .chain((total) => fc.tuple(fc.constant(total), fc.integer({ min: 0, max: total })));

describe("repair's limits (properties)", () => {
  test.prop([groupArb, fc.option(limitArb, { nil: undefined })])(
    'repair is held exactly above the threshold (by default: more than 20 % of more than 5 nodes)',
    ([total, unhealthy], max) => {
      const held =
        max === undefined
          ? total > 5 && unhealthy / total > 0.2
          : 'count' in max
            ? unhealthy > max.count
            : unhealthy / total > max.percentage / 100;
      expect(stormOf(total, unhealthy, max) !== undefined).toBe(held);
      if (held) expect(stormOf(total, unhealthy, max)).toContain(`${unhealthy} of its ${total} nodes`);
    },
  );

  test.prop([groupArb, fc.option(limitArb, { nil: undefined }), fc.nat(20)])(
    'one more unhealthy node never lifts a hold, one more healthy node never starts one',
    ([total, unhealthy], max, more) => {
      if (stormOf(total, unhealthy, max) !== undefined)
        expect(stormOf(total + more, unhealthy + more, max)).toBeDefined();
      if (stormOf(total + more, unhealthy, max) !== undefined && total > 5)
        expect(stormOf(total, unhealthy, max)).toBeDefined();
    },
  );

  test.prop([fc.integer({ min: 0, max: 500 }), limitArb, fc.nat(50)])(
    'at least one node at a time, no more than the limit allows, and never fewer for more unhealthy nodes',
    (unhealthy, max, more) => {
      const n = parallelLimit(unhealthy, max);
      expect(Number.isInteger(n)).toBe(true);
      if ('count' in max) expect(n).toBe(max.count);
      else {
        expect(n).toBeGreaterThanOrEqual(1);
        expect(n).toBeLessThanOrEqual(Math.max(1, (unhealthy * max.percentage) / 100));
      }
      expect(parallelLimit(unhealthy + more, max)).toBeGreaterThanOrEqual(n);
    },
  );

  test.prop([
    fc.subarray(['ReplaceUnhealthy', 'Terminate', 'Launch', 'AZRebalance', 'HealthCheck', 'AlarmNotification']),
  ])('a replacement is held exactly when a process it needs is suspended, and says which', (suspended) => {
    const needed = suspended.filter((p) => ['ReplaceUnhealthy', 'Terminate', 'Launch'].includes(p));
    const why = replacementHeld(suspended);
    expect(why !== undefined).toBe(needed.length > 0);
    for (const p of needed) expect(why).toContain(p);
  });
});
