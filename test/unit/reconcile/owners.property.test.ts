// Properties of the reconciler's ownership rules (lambda/reconcile/owners.ts) over generated records, lifecycle
// states and times: a young record is never taken, an owner once gone stays gone as time passes, a chain is resumed
// only while a terminate hook may hold the action and a hook to resume it through is known, and a lease or a repair
// is owned exactly as long as it says.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { RepairRecord } from '../../../lambda/cluster/model.js';
import {
  drainOwner,
  freshRecordMs,
  migrationOwner,
  rebootOwnerMs,
  rebootSlackMs,
  repairOwner,
  spotOwnerMs,
} from '../../../lambda/reconcile/owners.js';
import { rebootEscalationMs } from '../../../lambda/repair/reboot.js';
import { keepsDrainMarks, mayHoldTerminateAction } from '../../../lambda/shared/lifecycle-states.js';
import { drainRecordArb } from '../../fakes/arbitraries.js';

const states = [
  'InService',
  'Pending',
  'Terminating',
  'Terminating:Wait',
  'Terminating:Proceed',
  'Terminated',
  'Terminating:Retained',
  'Warmed:Pending:Wait',
  'Warmed:Stopped',
  'Standby',
  'Detaching',
];
const stateArb = fc.option(
  fc.record({
    instanceId: fc.constant('i-0123456789abcdef0'),
    group: fc.constant('workers'),
    lifecycleState: fc.constantFrom(...states),
    healthStatus: fc.constant('HEALTHY'),
  }),
  { nil: undefined },
);
const staleArb = fc.integer({ min: 60_000, max: 3 * 3600_000 });

describe("the reconciler's owners (properties)", () => {
  test.prop([drainRecordArb, stateArb, fc.nat(4 * 3600_000), staleArb])(
    'a young record is alive; a chain is resumed only while a hook may hold the action and the hook is known',
    (record, state, sinceUpdateMs, staleMs) => {
      const now = record.updatedAtMs + sinceUpdateMs;
      const owner = drainOwner(record, state, now, staleMs);
      if (sinceUpdateMs < freshRecordMs) expect(owner.kind).toBe('alive');
      if (owner.kind === 'stalled') {
        expect(state !== undefined && mayHoldTerminateAction(state.lifecycleState)).toBe(true);
        expect(record.source.kind).not.toBe('spot-interruption');
        expect(sinceUpdateMs).toBeGreaterThan(staleMs);
        expect(owner.idleMs).toBe(sinceUpdateMs);
      }
      if (owner.kind === 'gone' && record.source.kind !== 'spot-interruption')
        expect(state === undefined || !keepsDrainMarks(state.lifecycleState)).toBe(true);
      if (record.source.kind === 'spot-interruption' && now - record.notifiedAtMs < spotOwnerMs)
        expect(owner.kind).toBe('alive');
    },
  );

  test.prop([drainRecordArb, stateArb, fc.nat(4 * 3600_000), fc.nat(4 * 3600_000), staleArb])(
    'an owner once gone stays gone as time passes (the instance as it is)',
    (record, state, sinceUpdateMs, laterMs, staleMs) => {
      const now = record.updatedAtMs + sinceUpdateMs;
      if (drainOwner(record, state, now, staleMs).kind === 'gone')
        expect(drainOwner(record, state, now + laterMs, staleMs).kind).toBe('gone');
    },
  );

  test.prop([
    fc.record({
      id: fc.constant('m'),
      from: fc.constant('old'),
      to: fc.constant('new'),
      renewedAtMs: fc.integer({ min: 0, max: 1e12 }),
      leaseSeconds: fc.integer({ min: 1, max: 3600 }),
      cordoned: fc.boolean(),
    }),
    fc.integer({ min: -3600_000, max: 3 * 3600_000 }),
  ])('a migration is owned exactly while its lease lasts', (record, sinceRenewedMs) => {
    const owner = migrationOwner(record, record.renewedAtMs + sinceRenewedMs);
    expect(owner.kind).toBe(sinceRenewedMs < record.leaseSeconds * 1000 ? 'alive' : 'gone');
  });

  test.prop([
    fc.record(
      {
        action: fc.constantFrom('replace', 'reboot') as fc.Arbitrary<RepairRecord['action']>,
        instanceId: fc.constant('i-0123456789abcdef0'),
        condition: fc.constant('Ready'),
        reason: fc.constant('KubeletDown'),
        decidedAtMs: fc.integer({ min: 0, max: 1e12 }),
        rebootedAfterMs: fc.nat(3 * 3600_000),
        cordoned: fc.boolean(),
      },
      { requiredKeys: ['action', 'instanceId', 'condition', 'reason', 'decidedAtMs', 'cordoned'] },
    ),
    stateArb,
    fc.nat(8 * 3600_000),
    fc.nat(4 * 3600_000),
  ])(
    'a reboot is owned through its drain, its escalation window and the slack, never less than two hours',
    (r, state, ageMs, drainTimeoutMs) => {
      const { rebootedAfterMs, ...rest } = r;
      const record: RepairRecord = {
        ...rest,
        ...(rebootedAfterMs !== undefined ? { rebootedAtMs: r.decidedAtMs + rebootedAfterMs } : {}),
      };
      fc.pre(record.action === 'reboot' && state !== undefined);
      const now = record.decidedAtMs + ageMs;
      const phaseEndMs =
        record.rebootedAtMs !== undefined
          ? record.rebootedAtMs + rebootEscalationMs
          : record.decidedAtMs + drainTimeoutMs;
      const owned = now <= Math.max(record.decidedAtMs + rebootOwnerMs, phaseEndMs + rebootSlackMs);
      expect(repairOwner(record, state, now, drainTimeoutMs).kind).toBe(
        owned || ageMs < freshRecordMs ? 'alive' : 'gone',
      );
    },
  );
});
