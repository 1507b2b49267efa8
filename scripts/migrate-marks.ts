// The marks `migrate` sets on the old nodes and takes back: written through the gateway the
// handler uses (migration-node-api.ts), owned by the command through a lease it renews every
// third of the lease; the reconciler takes them back once the lease is over (a command that
// died), and the command itself when it ends, whatever the way.
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
      const taint = !request.cordonAll && !node.taints.some((t) => t.key === migratingTaintKey);
      const result = await deps.cluster.markMigrating(node, {
        record: record(cordon),
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
