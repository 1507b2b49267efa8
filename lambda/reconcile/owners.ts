// Whether a mark's owner is still there, decided from Auto Scaling's answers only: a drain's
// marks belong to its lifecycle action (alive while the instance is leaving, retained or in the
// warm pool), a refresh's to that refresh (alive while pending, in progress or cancelling).
import type { DrainRecord, MigrationRecord, RepairRecord } from '../cluster/model.js';
import type { InstanceState } from '../shared/aws-ports.js';
import { keepsDrainMarks, mayHoldTerminateAction } from '../shared/lifecycle-states.js';
import { traitsOf } from '../cluster/rules/drain-source.js';
import { rebootEscalationMs } from '../repair/reboot.js';

/** A record this young is left alone: Auto Scaling's reads may not show its action yet. */
export const freshRecordMs = 120_000;
/** A Spot drain's owner is the two-minute warning; EC2 reclaims the instance shortly after. */
export const spotOwnerMs = 10 * 60_000;

export type DrainOwner =
  /** The action (or the retention, or the warm pool) still holds the marks. */
  | { readonly kind: 'alive' }
  /** No owner: take the marks back. */
  | { readonly kind: 'gone'; readonly why: string }
  /** The action waits, but nothing carried the drain on for longer than a hand-off interval. */
  | { readonly kind: 'stalled'; readonly group: string; readonly hook: string; readonly idleMs: number };

export function drainOwner(
  record: DrainRecord,
  state: InstanceState | undefined,
  nowMs: number,
  staleAfterMs: number,
): DrainOwner {
  const idleMs = nowMs - record.updatedAtMs;
  if (idleMs < freshRecordMs) return { kind: 'alive' };
  const traits = traitsOf(record.source);
  switch (traits.owner) {
    case 'notice':
      return noticeOwner(record, state, nowMs);
    case 'terminate-action':
      return actionOwner(traits.resumableThrough, state, idleMs, staleAfterMs);
  }
}

/** A Spot interruption's marks are owned by the warning: EC2 reclaims the instance shortly after it. */
function noticeOwner(record: DrainRecord, state: InstanceState | undefined, nowMs: number): DrainOwner {
  if (nowMs - record.notifiedAtMs < spotOwnerMs) return { kind: 'alive' };
  return state !== undefined && keepsDrainMarks(state.lifecycleState)
    ? { kind: 'alive' }
    : { kind: 'gone', why: 'the Spot interruption is long past and the instance is still running' };
}

/**
 * A lifecycle action's marks (or those set ahead of it) are owned by the instance's terminate action: alive while
 * the instance is leaving, retained or in the warm pool; stalled when the action waits but nothing carried the drain
 * on, and the hook is known to heartbeat the action by instance id (never a finished drain's wait).
 */
function actionOwner(
  hook: string | undefined,
  state: InstanceState | undefined,
  idleMs: number,
  staleAfterMs: number,
): DrainOwner {
  if (state === undefined) return { kind: 'gone', why: 'the instance is in no Auto Scaling group any more' };
  if (!keepsDrainMarks(state.lifecycleState))
    return { kind: 'gone', why: `the instance is ${state.lifecycleState}: the terminate action is over` };
  if (mayHoldTerminateAction(state.lifecycleState) && hook !== undefined && idleMs > staleAfterMs)
    return { kind: 'stalled', group: state.group, hook, idleMs };
  return { kind: 'alive' };
}

/** Auto Scaling acts on SetInstanceHealth at its next health check: a replacement not begun by then never will. */
export const replaceOwnerMs = 15 * 60_000;
/**
 * A reboot's record is owned by its repair pass for at least this long, and for its own phases (its drain until the
 * drain deadline, then the escalation window after the reboot) and rebootSlackMs more: a record past both is a pass
 * that died, or REPAIR turned off.
 */
export const rebootOwnerMs = 2 * 60 * 60_000;
export const rebootSlackMs = 30 * 60_000;

/**
 * A repair's record is owned by the replacement while Auto Scaling carries it out (the
 * instance leaving or retained), by the reboot for a while; the record of a replacement Auto
 * Scaling never began (health check grace period, health reset by someone) is taken back, and
 * the next repair pass decides again.
 */
export function repairOwner(
  record: RepairRecord,
  state: InstanceState | undefined,
  nowMs: number,
  drainTimeoutMs = 0,
): { readonly kind: 'alive' } | { readonly kind: 'gone'; readonly why: string } {
  const ageMs = nowMs - record.decidedAtMs;
  if (ageMs < freshRecordMs) return { kind: 'alive' };
  if (state === undefined) return { kind: 'gone', why: 'the instance is in no Auto Scaling group any more' };
  if (record.action === 'reboot') {
    // From what the record says now: draining until its deadline, then rebooted and watched for the escalation.
    const phaseEndMs =
      record.rebootedAtMs !== undefined
        ? record.rebootedAtMs + rebootEscalationMs
        : record.decidedAtMs + drainTimeoutMs;
    return nowMs > Math.max(record.decidedAtMs + rebootOwnerMs, phaseEndMs + rebootSlackMs)
      ? { kind: 'gone', why: `the reboot was decided ${Math.round(ageMs / 60_000)} min ago and never finished` }
      : { kind: 'alive' };
  }
  if (keepsDrainMarks(state.lifecycleState)) return { kind: 'alive' };
  return ageMs > replaceOwnerMs
    ? {
        kind: 'gone',
        why:
          `Auto Scaling still has the instance ${state.lifecycleState} ${Math.round(ageMs / 60_000)} min after it ` +
          `was marked Unhealthy`,
      }
    : { kind: 'alive' };
}

/**
 * A migration's marks belong to the `migrate` command that renews their lease while it runs:
 * once the lease is over, the command is gone (killed, its machine asleep) and so is their owner.
 * An unreadable record has no owner either.
 */
export function migrationOwner(
  record: MigrationRecord | undefined,
  nowMs: number,
): { readonly kind: 'alive' } | { readonly kind: 'gone'; readonly why: string } {
  if (record === undefined) return { kind: 'gone', why: 'has no readable record' };
  const endMs = record.renewedAtMs + record.leaseSeconds * 1000;
  if (nowMs < endMs) return { kind: 'alive' };
  return {
    kind: 'gone',
    why:
      `stopped renewing its lease (last ${new Date(record.renewedAtMs).toISOString()}, lease ${record.leaseSeconds} ` +
      `s): the command is gone`,
  };
}
