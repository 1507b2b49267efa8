// How the observe demo tells observe mode and decides that nothing changed (demo/observe-lines.ts):
// the run fails when the node was cordoned, labelled or annotated, or one of its pods left.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { observeLine, unchangedNode } from '../../../demo/observe-lines.js';

const node = (
  o: { unschedulable?: boolean; labels?: Record<string, string>; annotations?: Record<string, string> } = {},
) =>
  ({
    metadata: { name: 'demo-node-1', labels: o.labels ?? {}, annotations: o.annotations ?? {} },
    spec: { unschedulable: o.unschedulable },
  }) as V1Node;
const pod = (uid: string, phase = 'Running') => ({ metadata: { uid }, status: { phase } }) as V1Pod;

describe('the observe demo', () => {
  it('finds nothing changed when only a batch pod finished on its own', () => {
    const before = { node: node(), pods: [pod('a'), pod('job', 'Running')] };
    expect(unchangedNode(before, { node: node(), pods: [pod('a'), pod('job', 'Succeeded')] })).toEqual([]);
  });

  it('names each change observe mode must never make', () => {
    const before = { node: node(), pods: [pod('a'), pod('b')] };
    const after = {
      node: node({
        unschedulable: true,
        labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' },
        annotations: { 'graceful-node-termination/drain': '{}' },
      }),
      pods: [pod('a')],
    };
    expect(unchangedNode(before, after)).toEqual([
      'the node was cordoned',
      'the node was labelled out of load balancers',
      '1 of its pods left',
      'our annotations changed on the node',
    ]);
  });

  it('tells the handler’s observe lines, and no other', () => {
    expect(
      observeLine({
        message: 'observe mode: what the termination would do',
        evict: ['shop/db-1', 'shop/web-2'],
        waitFor: ['batch/job-3'],
        blocked: [{ pod: 'shop/db-1', budget: 'db' }],
      }),
    ).toEqual([
      'observed',
      'would evict shop/db-1, shop/web-2; let batch/job-3 finish first; held up now: shop/db-1 by budget db; ' +
        'nothing written but Events',
    ]);
    expect(observeLine({ message: 'drain started' })).toBeUndefined();
  });
});
