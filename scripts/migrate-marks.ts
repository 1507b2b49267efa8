// The marks `migrate` sets on the old nodes and takes back: written through the gateway the
// handler uses (migration-node-api.ts), owned by the command through a lease it renews every
// third of the lease; the reconciler takes them back once the lease is over (a command that
// died), and the command itself when it ends, whatever the way. A run that finds another
// migration's marks on the old nodes decides from what the nodes say now: a command that still
// renews its lease owns them (this run refuses), one that stopped renewing is gone, and its marks
// are taken over with what they set, its cordon included.
import type { EventRecorder } from '../lambda/cluster/ports/event-recorder.js';
import type { NodeGateway } from '../lambda/cluster/ports/node-gateway.js';
import type { NodeInfo, MigrationRecord } from '../lambda/cluster/model.js';
import { markedForMigration, migrationMarksRemoved } from '../lambda/cluster/events/mark-events.js';
import type { NodeReader } from '../lambda/adapters/kubernetes/node-reader.js';
import { migratingTaintKey, migrationLabel } from '../lambda/cluster/marks/mark-keys.js';

import type { MigrateRequest } from './migrate-plan.js';

export interface MarkDeps {
  readonly cluster: Pick<NodeReader, 'getNode'> &
    Pick<NodeGateway, 'markMigrating' | 'unmarkMigrating'> &
    EventRecorder;
  readonly out: (line: string) => void;
  /** The deployment: the owner label's value, so its reconciler finds the marks. */
  readonly owner: string;
}

/** Writes with a fresh read after a conflict (the node moved on), three tries; false when nothing was written. */
async function withNode(
  deps: MarkDeps,
  name: string,
  write: (node: NodeInfo) => Promise<'patched' | 'node-gone' | 'changed'>,
): Promise<boolean> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const node = await deps.cluster.getNode(name);
    if (node === undefined) return false;
    const result = await write(node);
    if (result !== 'changed') return result === 'patched';
  }
  return false;
}

/** Marks every old node, then renews the lease on each until stopped. */
export async function markOldNodes(
  request: MigrateRequest,
  id: string,
  nodes: readonly string[],
  deps: MarkDeps,
): Promise<{ stop(): void }> {
  const record = (cordoned: boolean): MigrationRecord => ({
    id,
    from: request.from,
    to: request.to,
    renewedAtMs: Date.now(),
    leaseSeconds: request.leaseSeconds,
    cordoned,
  });
  let marked = 0;
  for (const name of nodes) {
    const done = await withNode(deps, name, async (node) => {
      const cordon = request.cordonAll && !node.unschedulable;
      // An earlier migration's cordon (a killed run's, taken over): its record said it was ours to
      // lift, so this record says so too, or nothing would ever lift it once this run ends.
      const inherited = node.migration?.cordoned === true && node.unschedulable;
      const taint = !request.cordonAll && !node.taints.some((t) => t.key === migratingTaintKey);
      const result = await deps.cluster.markMigrating(node, {
        record: record(cordon || inherited),
        owner: deps.owner,
        taint,
        cordon,
      });
      if (result === 'patched')
        await deps.cluster.record(
          markedForMigration(node, {
            id,
            from: request.from,
            to: request.to,
            cordoned: cordon,
            taintKey: migratingTaintKey,
          }),
        );
      return result;
    });
    if (done) marked++;
  }
  deps.out(
    `migration ${id}: marked ${marked} of ${nodes.length} old node(s) (${request.cordonAll ? 'cordoned' : `PreferNoSchedule taint ${migratingTaintKey}`}; lease ${request.leaseSeconds} s, renewed while this runs)`,
  );
  const renew = async () => {
    for (const name of nodes) {
      await withNode(deps, name, async (node) => {
        if (node.labels[migrationLabel] !== id || node.migration === undefined) return 'node-gone';
        return deps.cluster.markMigrating(node, {
          record: { ...node.migration, renewedAtMs: Date.now() },
          owner: deps.owner,
          taint: false,
          cordon: false,
        });
      }).catch((error: unknown) =>
        deps.out(
          `warning: could not renew the lease on ${name} (tried again in ${Math.round(request.leaseSeconds / 3)} s): ${(error as Error).message}`,
        ),
      );
    }
  };
  const timer = setInterval(() => void renew(), (request.leaseSeconds * 1000) / 3);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** Takes back this migration's marks on the nodes still there. */
export async function takeBackMarks(id: string, nodes: readonly string[], deps: MarkDeps): Promise<void> {
  let undone = 0;
  for (const name of nodes) {
    const done = await withNode(deps, name, async (node) => {
      if (node.labels[migrationLabel] !== id) return 'node-gone';
      const { result, removed } = await deps.cluster.unmarkMigrating(node);
      if (result === 'patched') await deps.cluster.record(migrationMarksRemoved(node, { id, why: 'ended', removed }));
      return result;
    });
    if (done) undone++;
  }
  if (undone > 0) deps.out(`took back the marks of migration ${id} on ${undone} node(s) still there`);
}

/** What another migration's marks on the old nodes decide: nothing, marks to take over (their ids), a live owner, Ctrl-C. */
export type EarlierMigration =
  'none' | 'interrupted' | { readonly takenOver: readonly string[] } | { readonly refused: string };

export interface WatchDeps extends Pick<MarkDeps, 'cluster' | 'out'> {
  readonly sleep: (ms: number) => Promise<void>;
  readonly pollMs: number;
  readonly interrupted?: (() => boolean) | undefined;
}

/**
 * How long after its last renewal a command that renews every third of its lease is gone: a
 * third of the lease and a grace (half of that, at least 5 s, for a slow API server), never past
 * the lease itself, when the reconciler takes its marks back anyway.
 */
export function goneAfterMs(record: MigrationRecord): number {
  const leaseMs = record.leaseSeconds * 1000;
  return Math.min(leaseMs, leaseMs / 3 + Math.max(5_000, leaseMs / 6));
}

/** Other migrations' records on these nodes: node name -> record. */
export async function othersOn(deps: Pick<MarkDeps, 'cluster'>, id: string, nodes: readonly string[]) {
  const found = new Map<string, MigrationRecord>();
  for (const name of nodes) {
    const node = await deps.cluster.getNode(name);
    if (node?.migration !== undefined && node.labels[migrationLabel] === node.migration.id && node.migration.id !== id)
      found.set(name, node.migration);
  }
  return found;
}

/**
 * Another migration's marks on the old nodes (a run killed inside its lease, or one still
 * running): watched until its command renews them (alive: refused, so two runs never shrink the
 * group at once) or until it has been quiet for longer than it renews (gone: this run takes the
 * marks over, markOldNodes keeping the cordon it set). Never longer than the rest of its lease.
 */
export async function awaitEarlierMigration(
  id: string,
  nodes: readonly string[],
  deps: WatchDeps,
): Promise<EarlierMigration> {
  const first = await othersOn(deps, id, nodes);
  if (first.size === 0) return 'none';
  const owners = [...new Set([...first.values()].map((r) => r.id))];
  const ids = owners.join(', ');
  const goneAtMs = Math.max(...[...first.values()].map((r) => r.renewedAtMs + goneAfterMs(r)));
  const last = Math.max(...[...first.values()].map((r) => r.renewedAtMs));
  if (goneAtMs > Date.now())
    deps.out(
      `${first.size} old node(s) carry the marks of migration ${ids} (lease last renewed ${new Date(last).toISOString()}): ` +
        `watching up to ${Math.ceil((goneAtMs - Date.now()) / 1000)} s whether its command still renews it`,
    );
  for (;;) {
    if (deps.interrupted?.()) return 'interrupted';
    const now = await othersOn(deps, id, [...first.keys()]);
    for (const [name, record] of now) {
      const before = first.get(name);
      if (before?.id === record.id && record.renewedAtMs > before.renewedAtMs)
        return {
          refused:
            `migration ${record.id} is still running: its command renewed its lease on ${name} at ` +
            `${new Date(record.renewedAtMs).toISOString()}; let it finish, or stop it (Ctrl-C) and run again`,
        };
    }
    if (now.size === 0) return 'none';
    if (Date.now() >= goneAtMs) {
      deps.out(`migration ${ids} stopped renewing its lease: its command is gone; taking over its marks`);
      return { takenOver: owners };
    }
    await deps.sleep(Math.max(0, Math.min(deps.pollMs, goneAtMs - Date.now())));
  }
}
