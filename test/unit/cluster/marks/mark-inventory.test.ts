// The inventory of our node marks (lambda/cluster/marks/mark-inventory.ts), which cleanup shows and
// takes back: every key is documented in docs/marks.md, and what a node carries is read off the
// node, its drain record deciding what is ours.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../../../lambda/cluster/model.js';
import { marksOnNode, nodeMarkKeys } from '../../../../lambda/cluster/marks/mark-inventory.js';
import { lifecycleAction } from '../../../fixtures/drain-sources.js';

const node = (o: Partial<NodeInfo>): NodeInfo => ({
  name: 'n',
  uid: 'u',
  providerId: 'aws:///a/i-1',
  unschedulable: false,
  ready: true,
  taints: [],
  labels: {},
  ...o,
});
const drain = { source: lifecycleAction('sha256:a', 'h'), notifiedAtMs: 0, startedAtMs: 0, updatedAtMs: 0 };

describe('the node mark inventory', () => {
  it('has every key in docs/marks.md', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', '..', '..', 'docs', 'marks.md'), 'utf8');
    for (const key of [...nodeMarkKeys.labels, ...nodeMarkKeys.annotations, ...nodeMarkKeys.taints])
      expect(doc, key).toContain(`\`${key}\``);
  });

  it("counts a cordon or a label as ours only when a record of ours says so; a refresh's cordon only with its label", () => {
    expect(
      marksOnNode(
        node({ unschedulable: true, labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' } }),
      ),
    ).toEqual([]);
    expect(
      marksOnNode(
        node({ unschedulable: true, drain: { ...drain, set: ['exclude-from-load-balancers'], priorLabel: 'false' } }),
      ),
    ).toEqual([
      'label node.kubernetes.io/exclude-from-external-load-balancers: restored to "false"',
      'annotation graceful-node-termination/drain: removed',
    ]);
    expect(
      marksOnNode(
        node({
          unschedulable: true,
          labels: { 'graceful-node-termination/refresh': 'r-1', 'graceful-node-termination/refresh-cordoned': 'true' },
        }),
      ),
    ).toEqual([
      'label graceful-node-termination/refresh=r-1: removed',
      'label graceful-node-termination/refresh-cordoned: removed',
      'cordon (a refresh of ours set it): lifted',
    ]);
  });
});
