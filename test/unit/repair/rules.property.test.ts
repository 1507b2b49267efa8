// Properties of node auto repair's judgement (lambda/repair/rules.ts) over generated conditions and settings: a node
// whose monitored conditions are all True is healthy, a repair is due only once a monitored condition has been bad
// for its rule's wait (measured from a real lastTransitionTime), a due repair stays due as time passes, and the
// stronger action wins. A condition the settings do not monitor is never judged, whatever its name.
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { NodeCondition } from '../../../lambda/cluster/model.js';
import { judge, ruleFor } from '../../../lambda/repair/rules.js';
import {
  defaultRepairSettings,
  parseRepairSettings,
  RepairAction,
  type RepairSettings,
} from '../../../lambda/shared/repair-settings.js';
import { prototypeNames } from '../../fakes/arbitraries.js';

const nowMs = Date.parse('2026-11-22T10:00:00Z');
const types = ['Ready', 'KernelReady', 'NetworkingReady', 'AcceleratedHardwareReady', 'DiskPressure', 'Custom'];
const conditionArb: fc.Arbitrary<NodeCondition> = fc.record({
  type: fc.constantFrom(...types),
  status: fc.constantFrom('True', 'False', 'Unknown'),
  reason: fc.constantFrom('KubeletDown', 'NetworkDown', ''),
  sinceMs: fc.oneof(fc.integer({ min: nowMs - 3 * 3600_000, max: nowMs }), fc.constant(Number.NaN)),
});
/** A node's conditions: one of each type at most, as the API server keeps them. */
const conditionsArb = fc.uniqueArray(conditionArb, { maxLength: 4, selector: (c) => c.type });
const settingsArb: fc.Arbitrary<RepairSettings> = fc
  .array(
    fc.record({
      nodeMonitoringCondition: fc.constantFrom(...types),
      nodeUnhealthyReason: fc.constantFrom('KubeletDown', 'NetworkDown'),
      minRepairWaitTimeMins: fc.integer({ min: 0, max: 120 }),
      repairAction: fc.constantFrom(RepairAction.REPLACE, RepairAction.REBOOT, RepairAction.NO_ACTION),
    }),
    { maxLength: 3 },
  )
  .map((overrides) => ({ ...defaultRepairSettings, overrides }));
const strength = { [RepairAction.REPLACE]: 2, [RepairAction.REBOOT]: 1, [RepairAction.NO_ACTION]: 0 };

describe("node repair's judgement (properties)", () => {
  test.prop([conditionsArb, settingsArb])(
    'healthy when every monitored condition is True; due only after its rule, from a real transition time',
    (conditions, settings) => {
      const verdict = judge({ conditions }, settings, nowMs);
      const bad = conditions.filter((c) => c.status !== 'True' && ruleFor(settings, c.type, c.reason) !== undefined);
      if (bad.length === 0) expect(verdict.kind).toBe('healthy');
      if (verdict.kind === 'due') {
        const c = bad.find((x) => x.type === verdict.bad.condition && x.reason === verdict.bad.reason)!;
        expect(Number.isNaN(c.sinceMs)).toBe(false);
        expect(c.sinceMs + ruleFor(settings, c.type, c.reason)!.minutes * 60_000).toBeLessThanOrEqual(nowMs);
        for (const other of bad.filter((x) => !Number.isNaN(x.sinceMs))) {
          const rule = ruleFor(settings, other.type, other.reason)!;
          if (other.sinceMs + rule.minutes * 60_000 <= nowMs)
            expect(strength[verdict.action]).toBeGreaterThanOrEqual(strength[rule.action]);
        }
      }
      if (verdict.kind === 'waiting') expect(verdict.dueAtMs).toBeGreaterThan(nowMs - 1);
    },
  );

  test.prop([conditionsArb, settingsArb, fc.nat(6 * 3600_000)])(
    'a repair due now is due later too, with an action at least as strong',
    (conditions, settings, laterMs) => {
      const now = judge({ conditions }, settings, nowMs);
      const later = judge({ conditions }, settings, nowMs + laterMs);
      if (now.kind === 'due') {
        expect(later.kind).toBe('due');
        if (later.kind === 'due') expect(strength[later.action]).toBeGreaterThanOrEqual(strength[now.action]);
      }
    },
  );

  it.each(prototypeNames)('a condition type named %s, which REPAIR does not monitor, is not judged', (type) => {
    // Found by this property: repairAfterMinutes is a plain object, and ruleFor found what every object inherits
    // under these names (a condition named toString was judged, waiting on a rule of NaN minutes).
    const settings = parseRepairSettings('on');
    expect(typeof settings === 'object' && 'repairAfterMinutes' in settings).toBe(true);
    const verdict = judge(
      { conditions: [{ type, status: 'False', reason: 'x', sinceMs: nowMs - 3600_000 }] },
      settings as RepairSettings,
      nowMs,
    );
    expect(verdict).toEqual({ kind: 'healthy' });
  });

  it('a condition type named toString that REPAIR names is judged by its rule', () => {
    const settings = parseRepairSettings('{"repairAfterMinutes":{"toString":5}}') as RepairSettings;
    const conditions = [{ type: 'toString', status: 'False', reason: 'x', sinceMs: nowMs - 6 * 60_000 }];
    expect(judge({ conditions }, settings, nowMs)).toMatchObject({ kind: 'due', action: RepairAction.REPLACE });
    expect(judge({ conditions }, settings, nowMs - 2 * 60_000)).toMatchObject({ kind: 'waiting' });
  });
});
