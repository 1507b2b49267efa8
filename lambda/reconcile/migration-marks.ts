// The reconciler's part in `migrate`: a migration's marks (migrationLabel, its record, our
// PreferNoSchedule taint, a cordon it set) are taken back once the command that renews their
// lease is gone (owners.ts), conditionally on the node as read, with an Event.
import type { ClusterGateway } from '../cluster/ports/cluster-gateway.js';
import type { NodeInfo } from '../cluster/model.js';
import { migrationMarksRemoved } from '../cluster/events/mark-events.js';
import { migrationLabel } from '../cluster/marks/mark-keys.js';
import type { Clock } from '../shared/clock.js';
import type { Log } from '../shared/log.js';
import { migrationOwner } from './owners.js';

/** True when the node's migration marks were taken back. */
export async function reconcileMigration(
  deps: { readonly cluster: ClusterGateway; readonly clock: Clock; readonly log: Log },
  node: NodeInfo,
): Promise<boolean> {
  const id = node.labels[migrationLabel];
  if (id === undefined) return false;
  const owner = migrationOwner(node.migration, deps.clock.now());
  if (owner.kind === 'alive') return false;
  const { result, removed } = await deps.cluster.unmarkMigrating(node);
  if (result !== 'patched') return false;
  deps.log.info('took back the marks of a migration whose command is gone', {
    node: node.name,
    migration: id,
    why: owner.why,
    removed,
  });
  await deps.cluster.record(migrationMarksRemoved(node, { id, why: owner.why, removed }));
  return true;
}
