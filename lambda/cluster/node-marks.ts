// Everything we ever set on a Node, and who owns it. A mark carries its owner: this
// deployment (the owner label, which also lets the reconciler find every marked node with
// one label-selector list), and why (the drain record names the lifecycle action by a hash of
// its token; a refresh's marks name the refresh and its group). Only what a record says we
// set is ever taken back, and a label is restored to the value it had before.
import { createHash } from 'node:crypto';
import { formatSurges, parseSurges, type SurgeMark } from './surge-marks.js';

/** https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-exclude-from-external-load-balancers */
export const excludeFromLoadBalancersLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';

/** On every node carrying any mark of ours; its value is the deployment's name. */
export const ownerLabel = 'graceful-node-termination/owner';
/** Our drain record (JSON, DrainRecord). */
export const drainAnnotation = 'graceful-node-termination/drain';
/** Which invocation carries a long drain on next (claim.ts). */
export const handOffAnnotation = 'graceful-node-termination/hand-off';
/** Our PreferNoSchedule taint on nodes an instance refresh replaces; its value is the refresh id. */
export const outdatedTaintKey = 'graceful-node-termination/outdated';
/** On every node a refresh of ours marked (the refresh id), so its end finds them with one list. */
export const refreshLabel = 'graceful-node-termination/refresh';
/** Beside it when that refresh cordoned the node (strategy minimal): the cordon is ours to take back. */
export const refreshCordonedLabel = 'graceful-node-termination/refresh-cordoned';
/** The Auto Scaling group of that refresh (a group name can be longer than a label value). */
export const refreshGroupAnnotation = 'graceful-node-termination/refresh-group';
/** Our node auto repair's record (JSON, RepairRecord): the repair is decided once, across passes. */
export const repairAnnotation = 'graceful-node-termination/repair';

/**
 * Non-graceful node shutdown: pods without a matching toleration are deleted and their volumes
 * detached at once. Only for a node whose machine is really down.
 * https://kubernetes.io/docs/concepts/cluster-administration/node-shutdown/#non-graceful-node-shutdown
 */
export const outOfServiceTaintKey = 'node.kubernetes.io/out-of-service';
/** Beside our out-of-service taint: the instance EC2 said was terminated when we set it (the taint is ours to take back). */
export const outOfServiceAnnotation = 'graceful-node-termination/out-of-service';

/** On a node the termination policy passed over while it deferred a scale-in (DeferralMark, JSON). */
export const deferralAnnotation = 'graceful-node-termination/deferred';

/** On every node a `migrate` of ours marked: the migration id, so one list finds them. */
export const migrationLabel = 'graceful-node-termination/migration';
/** Beside it: the migration's record (JSON, MigrationRecord): its groups, its lease, whether it cordoned. */
export const migrationAnnotation = 'graceful-node-termination/migration';
/** Our PreferNoSchedule taint on the nodes a migration moves off; its value is the migration id. */
export const migratingTaintKey = 'graceful-node-termination/migrating';

/**
 * What `migrate` set on an old node. The command renews `renewedAtMs` while it runs; once the
 * lease is over (the command died), the reconciler takes back exactly these marks.
 */
export interface MigrationRecord {
  readonly id: string;
  readonly from: string;
  readonly to: string;
  readonly renewedAtMs: number;
  readonly leaseSeconds: number;
  /** The migration cordoned the node (--cordon-all): the cordon is ours to lift. */
  readonly cordoned: boolean;
}

export function formatMigrationRecord(r: MigrationRecord): string {
  return JSON.stringify({ id: r.id, from: r.from, to: r.to, renewedAt: new Date(r.renewedAtMs).toISOString(), leaseSeconds: r.leaseSeconds, cordoned: r.cordoned });
}

/** An annotation's JSON object; undefined when absent or not one. */
function jsonObject(raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The record as stored on the node; anything unreadable is treated as absent. */
export function parseMigrationRecord(raw: string | undefined): MigrationRecord | undefined {
  const v = jsonObject(raw);
  if (v === undefined) return undefined;
  const renewedAtMs = typeof v['renewedAt'] === 'string' ? Date.parse(v['renewedAt']) : Number.NaN;
  const leaseSeconds = v['leaseSeconds'];
  if (typeof v['id'] !== 'string' || Number.isNaN(renewedAtMs) || typeof leaseSeconds !== 'number' || !(leaseSeconds > 0)) return undefined;
  return { id: v['id'], from: String(v['from'] ?? ''), to: String(v['to'] ?? ''), renewedAtMs, leaseSeconds, cordoned: v['cordoned'] === true };
}

export type DrainMark = 'exclude-from-load-balancers' | 'cordon';

/** When the scale-in that passed the node over first deferred, and of which group. */
export interface DeferralMark {
  readonly sinceMs: number;
  readonly group: string;
}

export const formatDeferral = (m: DeferralMark): string => JSON.stringify({ since: new Date(m.sinceMs).toISOString(), group: m.group });

export function parseDeferral(raw: string | undefined): DeferralMark | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Record<string, unknown>;
    const sinceMs = typeof v['since'] === 'string' ? Date.parse(v['since']) : Number.NaN;
    return Number.isNaN(sinceMs) || typeof v['group'] !== 'string' ? undefined : { sinceMs, group: v['group'] };
  } catch {
    return undefined;
  }
}

/** The node's cordon is a refresh's of ours: a drain that finds it takes it over. */
export function adoptsRefreshCordon(node: { readonly unschedulable: boolean; readonly labels: Readonly<Record<string, string>> }): boolean {
  return node.unschedulable && node.labels[refreshCordonedLabel] !== undefined;
}

/**
 * What a drain of ours wrote on the node. The phase a resumed drain picks up in, its deadline,
 * its fair eviction window and the end of its load-balancer wait are all read from here, never
 * from a message: a hand-off only says "carry on this action".
 */
export interface DrainRecord {
  /** Which lifecycle action (actionIdOf its token); '' when marked ahead of its own drain. */
  readonly action: string;
  /** The terminate hook, so the reconciler can address the action by instance id ('' for Spot). */
  readonly hook: string;
  /** The notification's time: the drain deadline runs from here. */
  readonly notifiedAtMs: number;
  /** When our drain first saw the node: the fair eviction window runs from here. */
  readonly startedAtMs: number;
  /** The last write of this drain (mark, hand-off): the reconciler's measure of progress. */
  readonly updatedAtMs: number;
  readonly set: readonly DrainMark[];
  /** The load-balancer label's value before we set it ("false", say): restored, not removed. */
  readonly priorLabel?: string | undefined;
  /** Marked ahead by the drain of this sibling instance (same group, also terminating). */
  readonly aheadOf?: string | undefined;
  /** A Spot interruption: no lifecycle action; it ends when EC2 reclaims the instance. */
  readonly spot?: boolean | undefined;
  /** Pods evicted so far, over every invocation of this drain. */
  readonly evicted?: number | undefined;
  /** Set when the drain ended: the load-balancer wait runs from here. */
  readonly drained?: { readonly atMs: number; readonly outcome: 'drained' | 'timed-out' } | undefined;
  /**
   * The volumes attached to the node when the drain first saw it, and after (status.volumesAttached):
   * the attach/detach controller drops a volume from the status as its detach begins, so an
   * invocation that resumes the drain cannot learn them from the node alone (volume-names.ts).
   */
  readonly volumes?: readonly string[] | undefined;
  /** The settle phase's last reading of the load balancers, kept across hand-offs (settle-targets.ts). */
  readonly targets?: TargetsReading | undefined;
  /** Surge before evict (surge-marks.ts): each Deployment restarted for this drain, once. */
  readonly surges?: readonly SurgeMark[] | undefined;
}

/** What held the instance at the last look, and when that was. */
export interface TargetsReading {
  readonly atMs: number;
  readonly holds: readonly StoredHold[];
  /** ELB calls the wait made so far, over every invocation (its budget is per termination). */
  readonly calls: number;
}

export interface StoredHold {
  readonly kind: 'target-group' | 'classic';
  readonly id: string;
  readonly name: string;
  readonly state: string;
  readonly port?: number | undefined;
}

/**
 * A lifecycle token identifies the action, and whoever holds it can complete it: it is never
 * written where `get nodes` can read it. Tokens are random UUIDs, so a hash names the action
 * without revealing it; every action re-proves its authority by presenting the token (or its
 * instance) to Auto Scaling, never by what the node says.
 */
export function actionIdOf(token: string): string {
  return `sha256:${createHash('sha256').update(token).digest('hex').slice(0, 32)}`;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function formatDrainRecord(r: DrainRecord): string {
  return JSON.stringify({
    action: r.action,
    ...(r.hook ? { hook: r.hook } : {}),
    notifiedAt: iso(r.notifiedAtMs),
    startedAt: iso(r.startedAtMs),
    updatedAt: iso(r.updatedAtMs),
    set: r.set,
    ...(r.priorLabel !== undefined ? { priorLabel: r.priorLabel } : {}),
    ...(r.aheadOf ? { aheadOf: r.aheadOf } : {}),
    ...(r.spot ? { spot: true } : {}),
    ...(r.evicted ? { evicted: r.evicted } : {}),
    ...(r.drained ? { drainedAt: iso(r.drained.atMs), outcome: r.drained.outcome } : {}),
    ...(r.volumes && r.volumes.length > 0 ? { volumes: r.volumes } : {}),
    ...(r.targets ? { targets: { readAt: iso(r.targets.atMs), holds: r.targets.holds, calls: r.targets.calls } } : {}),
    ...(r.surges && r.surges.length > 0 ? { surges: formatSurges(r.surges) } : {}),
  });
}

function parseTargets(v: unknown): TargetsReading | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const t = v as Record<string, unknown>;
  const atMs = typeof t['readAt'] === 'string' ? Date.parse(t['readAt']) : Number.NaN;
  if (Number.isNaN(atMs) || !Array.isArray(t['holds'])) return undefined;
  const holds = (t['holds'] as unknown[]).flatMap((h): StoredHold[] => {
    const o = h as Record<string, unknown> | null;
    if (o === null || typeof o !== 'object' || (o['kind'] !== 'target-group' && o['kind'] !== 'classic')) return [];
    if (typeof o['id'] !== 'string' || typeof o['name'] !== 'string' || typeof o['state'] !== 'string') return [];
    const port = Number.isInteger(o['port']) ? (o['port'] as number) : undefined;
    return [{ kind: o['kind'], id: o['id'], name: o['name'], state: o['state'], ...(port !== undefined ? { port } : {}) }];
  });
  return { atMs, holds, calls: Number.isInteger(t['calls']) ? (t['calls'] as number) : 0 };
}

/**
 * The record as stored on the node; anything unreadable is treated as absent. Records of the
 * versions before (a `token` in clear, `markedBy`) are read as the same record, token hashed.
 */
export function parseDrainRecord(raw: string | undefined): DrainRecord | undefined {
  const v = jsonObject(raw);
  if (v === undefined) return undefined;
  const time = (key: string) => (typeof v[key] === 'string' ? Date.parse(v[key] as string) : Number.NaN);
  const startedAtMs = time('startedAt');
  const action = typeof v['action'] === 'string' ? v['action'] : typeof v['token'] === 'string' ? (v['token'] === '' ? '' : actionIdOf(v['token'])) : undefined;
  if (action === undefined || Number.isNaN(startedAtMs)) return undefined;
  const orStarted = (ms: number) => (Number.isNaN(ms) ? startedAtMs : ms);
  const set = Array.isArray(v['set']) ? v['set'].filter((m): m is DrainMark => m === 'exclude-from-load-balancers' || m === 'cordon') : [];
  const drainedAtMs = time('drainedAt');
  const outcome = v['outcome'] === 'timed-out' ? 'timed-out' : 'drained';
  const evicted = Number.isInteger(v['evicted']) ? (v['evicted'] as number) : 0;
  const aheadOf = typeof v['aheadOf'] === 'string' ? v['aheadOf'] : typeof v['markedBy'] === 'string' ? v['markedBy'] : undefined;
  return {
    action,
    hook: typeof v['hook'] === 'string' ? v['hook'] : '',
    notifiedAtMs: orStarted(time('notifiedAt')),
    startedAtMs,
    updatedAtMs: orStarted(time('updatedAt')),
    set,
    ...(typeof v['priorLabel'] === 'string' ? { priorLabel: v['priorLabel'] } : {}),
    ...(aheadOf !== undefined ? { aheadOf } : {}),
    ...(v['spot'] === true ? { spot: true } : {}),
    ...(evicted > 0 ? { evicted } : {}),
    ...(!Number.isNaN(drainedAtMs) ? { drained: { atMs: drainedAtMs, outcome } } : {}),
    ...(Array.isArray(v['volumes']) ? { volumes: v['volumes'].filter((x): x is string => typeof x === 'string') } : {}),
    ...(parseTargets(v['targets']) !== undefined ? { targets: parseTargets(v['targets']) } : {}),
    ...(parseSurges(v['surges']) !== undefined ? { surges: parseSurges(v['surges']) } : {}),
  };
}

/** What a repair of ours decided for a node, and what it set (repair/). */
export interface RepairRecord {
  readonly action: 'replace' | 'reboot';
  readonly instanceId: string;
  /** The condition and reason that stayed bad past their rule. */
  readonly condition: string;
  readonly reason: string;
  readonly decidedAtMs: number;
  /** Reboot only: when EC2 was asked to reboot (before that, the node drains). */
  readonly rebootedAtMs?: number | undefined;
  /** Our cordon (reboot), taken back with the record; never a cordon someone else set. */
  readonly cordoned: boolean;
}

export function formatRepairRecord(r: RepairRecord): string {
  return JSON.stringify({
    action: r.action,
    instanceId: r.instanceId,
    condition: r.condition,
    reason: r.reason,
    decidedAt: iso(r.decidedAtMs),
    ...(r.rebootedAtMs !== undefined ? { rebootedAt: iso(r.rebootedAtMs) } : {}),
    ...(r.cordoned ? { cordoned: true } : {}),
  });
}

/** The record as stored; anything unreadable is treated as absent (and never acted on). */
export function parseRepairRecord(raw: string | undefined): RepairRecord | undefined {
  const v = jsonObject(raw);
  if (v === undefined || (v['action'] !== 'replace' && v['action'] !== 'reboot')) return undefined;
  const decidedAtMs = typeof v['decidedAt'] === 'string' ? Date.parse(v['decidedAt']) : Number.NaN;
  const rebootedAtMs = typeof v['rebootedAt'] === 'string' ? Date.parse(v['rebootedAt']) : Number.NaN;
  if (Number.isNaN(decidedAtMs) || typeof v['instanceId'] !== 'string') return undefined;
  return {
    action: v['action'],
    instanceId: v['instanceId'],
    condition: typeof v['condition'] === 'string' ? v['condition'] : '',
    reason: typeof v['reason'] === 'string' ? v['reason'] : '',
    decidedAtMs,
    ...(Number.isNaN(rebootedAtMs) ? {} : { rebootedAtMs }),
    cordoned: v['cordoned'] === true,
  };
}
