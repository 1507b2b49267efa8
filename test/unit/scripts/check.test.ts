// The check command's cluster reads (scripts/check.ts): the pod lists per node run a few at a
// time, however many nodes the group has (issue 27, item 7).
import type { CoreV1Api, PolicyV1Api, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { checkNodes, podListConcurrency } from '../../../scripts/check.js';

describe('checkNodes', () => {
  it('lists the pods of 200 nodes with at most podListConcurrency lists in flight, and finds every node', async () => {
    let inFlight = 0;
    let most = 0;
    const listed: string[] = [];
    const core = {
      listPodForAllNamespaces: async ({ fieldSelector }: { fieldSelector: string }) => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 1));
        inFlight--;
        listed.push(fieldSelector);
        return { items: [] as V1Pod[] };
      },
      listNamespacedPod: async () => ({ items: [] }),
    } as unknown as CoreV1Api;
    const policy = { listNamespacedPodDisruptionBudget: async () => ({ items: [] }) } as unknown as PolicyV1Api;
    const nodes = Array.from({ length: 200 }, (_, i) => `node-${i}`);

    const result = await checkNodes(core, policy, nodes);

    expect(most).toBe(podListConcurrency);
    expect(listed.sort()).toEqual(nodes.map((n) => `spec.nodeName=${n}`).sort());
    expect(result.nodes).toEqual(nodes);
  });
});
