// The marks of a `migrate` on the nodes it moves off: our PreferNoSchedule taint (its value the
// migration id) and, with --cordon-all, a cordon; the migration label and its record (groups,
// lease, whether it cordoned). JSON patches conditional on the node as read, as the refresh's
// marks (outdated-node-api.ts): the taint appended, removed by its index after a test.
import type { NodeGateway } from '../../cluster/ports/node-gateway.js';
import type { NodeInfo } from '../../cluster/model.js';
import { formatMigrationRecord } from '../../cluster/marks/migration-record.js';
import { migratingTaintKey, migrationAnnotation, migrationLabel, ownerLabel } from '../../cluster/marks/mark-keys.js';
import { otherMarksOfOurs } from '../../cluster/marks/our-marks.js';
import type { KubeHttp } from './kube-http.js';
import { labelOps, nodePatcher, pointer } from './outdated-node-api.js';

type MarkMigrating = NodeGateway['markMigrating'];

export function createMigrationNodeApi(kube: KubeHttp): Pick<NodeGateway, 'markMigrating' | 'unmarkMigrating'> {
  const { get, patch } = nodePatcher(kube);
  return {
    markMigrating: (node, marks) => patch(node, markOps(node, marks), `mark node ${node.name} for a migration`),
    async unmarkMigrating(read) {
      let node: NodeInfo | undefined = read;
      // After a conflict (kwok's and the kubelet's status writes move the node on), a fresh
      // read, as long as it carries the same migration record as read: a renewed lease is the
      // owner's answer, not ours to override.
      for (let attempt = 0; node !== undefined && attempt < 5; attempt++) {
        if (
          node.labels[migrationLabel] !== read.labels[migrationLabel] ||
          node.migration?.renewedAtMs !== read.migration?.renewedAtMs
        )
          break;
        const { ops, removed } = unmarkOps(node);
        const result = await patch(node, ops, `take back the migration's marks on node ${node.name}`);
        if (result !== 'changed') return { result, removed };
        node = await get(node.name);
      }
      return { result: node === undefined ? 'node-gone' : 'changed', removed: [] };
    },
  };
}

function markOps(node: NodeInfo, marks: Parameters<MarkMigrating>[1]): object[] {
  const labels = { [migrationLabel]: marks.record.id, [ownerLabel]: marks.owner };
  const ops = labelOps(node, labels, migrationAnnotation, formatMigrationRecord(marks.record));
  if (marks.taint) {
    const taint = { key: migratingTaintKey, value: marks.record.id, effect: 'PreferNoSchedule' };
    ops.push(
      node.taints.length > 0
        ? { op: 'add', path: '/spec/taints/-', value: taint }
        : { op: 'add', path: '/spec/taints', value: [taint] },
    );
  }
  if (marks.cordon) ops.push({ op: 'add', path: '/spec/unschedulable', value: true });
  return ops;
}

function unmarkOps(node: NodeInfo): { ops: object[]; removed: string[] } {
  const removed: string[] = [];
  const ops: object[] = [{ op: 'replace', path: '/metadata/resourceVersion', value: node.resourceVersion }];
  if (node.labels[migrationLabel] !== undefined)
    ops.push({ op: 'remove', path: `/metadata/labels/${pointer(migrationLabel)}` });
  if (node.migration !== undefined)
    ops.push({ op: 'remove', path: `/metadata/annotations/${pointer(migrationAnnotation)}` });
  // Our taints only, from the last so earlier indexes stay valid, each tested in place.
  const ours = node.taints.flatMap((t, i) => (t.key === migratingTaintKey ? [i] : [])).reverse();
  for (const i of ours)
    ops.push(
      { op: 'test', path: `/spec/taints/${i}/key`, value: migratingTaintKey },
      { op: 'remove', path: `/spec/taints/${i}` },
    );
  if (ours.length > 0) removed.push(`taint ${migratingTaintKey}:PreferNoSchedule`);
  // The cordon only when the record says the migration set it, and no drain of ours owns the node now.
  if (node.migration?.cordoned === true && node.unschedulable && node.drain === undefined) {
    ops.push({ op: 'remove', path: '/spec/unschedulable' });
    removed.push('cordon');
  }
  if (!otherMarksOfOurs(node, 'migration') && node.labels[ownerLabel] !== undefined) {
    ops.push({ op: 'remove', path: `/metadata/labels/${pointer(ownerLabel)}` });
  }
  return { ops, removed };
}
