// Who owns a repair record (reconcile/owners.ts), each rule alone: a fresh record, an instance
// in no group, a replacement under way or never begun, a reboot young or abandoned.
import { describe, expect, it } from 'vitest';
import type { RepairRecord } from '../../../lambda/cluster/model.js';
import { rebootOwnerMs, replaceOwnerMs, repairOwner } from '../../../lambda/reconcile/owners.js';

const now = Date.parse('2026-11-27T12:00:00Z');
const min = 60_000;
const record = (o: Partial<RepairRecord> = {}): RepairRecord => ({
  action: 'replace',
  instanceId: 'i-0123456789abcdef0',
  condition: 'NetworkingReady',
  reason: 'IPAMDNotReady',
  decidedAtMs: now - 20 * min,
  cordoned: false,
  ...o,
});
const state = (lifecycleState: string) => ({ instanceId: 'i-0123456789abcdef0', group: 'workers', lifecycleState });

describe('the owner of a repair record', () => {
  it('is alive while the record is fresh, whatever Auto Scaling says', () => {
    expect(repairOwner(record({ decidedAtMs: now - 60_000 }), undefined, now).kind).toBe('alive');
  });

  it('is gone once the instance is in no group', () => {
    expect(repairOwner(record(), undefined, now)).toMatchObject({ kind: 'gone', why: /no Auto Scaling group/ });
  });

  it('is the replacement while the instance leaves or is retained', () => {
    for (const s of ['Terminating', 'Terminating:Wait', 'Terminating:Retained'])
      expect(repairOwner(record({ decidedAtMs: now - 5 * replaceOwnerMs }), state(s), now).kind, s).toBe('alive');
  });

  it('is gone when Auto Scaling never began the replacement: still InService past the window', () => {
    expect(repairOwner(record({ decidedAtMs: now - replaceOwnerMs + min }), state('InService'), now).kind).toBe(
      'alive',
    );
    expect(repairOwner(record({ decidedAtMs: now - replaceOwnerMs - min }), state('InService'), now)).toMatchObject({
      kind: 'gone',
      why: /still has the instance InService 16 min/,
    });
  });

  it('is the reboot for two hours, then gone', () => {
    expect(
      repairOwner(record({ action: 'reboot', decidedAtMs: now - rebootOwnerMs + min }), state('InService'), now).kind,
    ).toBe('alive');
    expect(
      repairOwner(record({ action: 'reboot', decidedAtMs: now - rebootOwnerMs - min }), state('InService'), now),
    ).toMatchObject({ kind: 'gone', why: /never finished/ });
  });
});
