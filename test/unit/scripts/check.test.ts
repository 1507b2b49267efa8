// The check command's cluster reads (scripts/check.ts): the pod lists per node run a few at a
// time, however many nodes the group has (issue 27, item 7).
import type { CoreV1Api, PolicyV1Api, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { checkNodes, podListConcurrency } from '../../../scripts/check.js';
import { UsageError } from '../../../scripts/command-options.js';
import { renderRules, rulesFromOptions, rulesFromVariables } from '../../../scripts/drain-rules-option.js';

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

describe('each pod’s drain rule', () => {
  const podOn = (
    name: string,
    o: {
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      owner?: string;
      priorityClassName?: string;
    } = {},
  ): V1Pod => ({
    metadata: {
      name,
      namespace: 'shop',
      uid: name,
      labels: o.labels,
      annotations: o.annotations,
      ownerReferences: o.owner
        ? [{ kind: o.owner, name: 'x', uid: 'x', apiVersion: 'v1', controller: true }]
        : undefined,
    },
    spec: { nodeName: 'node-a', containers: [], priorityClassName: o.priorityClassName },
    status: { phase: 'Running' },
  });
  const pods = [
    podOn('web-1', { owner: 'ReplicaSet' }),
    podOn('cache-1', { owner: 'ReplicaSet', labels: { 'cluster.x-k8s.io/drain': 'skip' } }),
    podOn('report-1', { owner: 'Job' }),
    podOn('db-1', { owner: 'StatefulSet', labels: { tier: 'db' } }),
    podOn('dns-1', { owner: 'ReplicaSet', priorityClassName: 'system-cluster-critical' }),
    podOn('agent-1', { owner: 'DaemonSet' }),
  ];
  const core = {
    listPodForAllNamespaces: async () => ({ items: pods }),
    listNamespacedPod: async () => ({ items: pods }),
  } as unknown as CoreV1Api;
  const policy = { listNamespacedPodDisruptionBudget: async () => ({ items: [] }) } as unknown as PolicyV1Api;

  it('shows what the drain does with each pod, in its order, and why', async () => {
    const rules = rulesFromOptions({
      'drain-rules': JSON.stringify([
        { name: 'db-last', behavior: 'Drain', order: 100, pods: [{ selector: { matchLabels: { tier: 'db' } } }] },
      ]),
    });
    const result = await checkNodes(core, policy, ['node-a'], { rules });
    expect(renderRules(result.rules)).toBe(
      [
        'NODE    POD            RULE           ORDER  BECAUSE',
        'node-a  shop/report-1  WaitCompleted  -      Job pod',
        'node-a  shop/web-1     Drain          0      default',
        'node-a  shop/db-1      Drain          100    rule db-last',
        'node-a  shop/dns-1     Drain          2000   critical (system-cluster-critical)',
        'node-a  shop/agent-1   Skip           -      DaemonSet pod (EVICT_DAEMONSET_PODS off)',
        'node-a  shop/cache-1   Skip           -      label cluster.x-k8s.io/drain=skip',
      ].join('\n'),
    );
    // A pod the rules skip is no finding: the drain does not wait for it.
    expect(result.findings.map((f) => f.pod)).toEqual(['shop/report-1']);
  });

  it('refuses rules it cannot read, saying what is wrong', () => {
    expect(() => rulesFromOptions({ 'drain-rules': '[{"name":"x","behavior":"Evict"}]' })).toThrow(
      '--drain-rules: rule 0.behavior must be one of Drain, Skip, WaitCompleted',
    );
    expect(rulesFromVariables({ DRAIN_RULES: '[]', EVICT_DAEMONSET_PODS: 'true' })).toEqual({
      drainRules: [],
      evictDaemonSetPods: true,
    });
  });
});

// From a review of the drain rules' check (51d1ae0; was test/unit/scripts/drain-rules-option-review.test.ts).
describe('check --drain-rules @file', () => {
  it('names the option and the file it cannot read, as bad usage (exit 2), not a failure', () => {
    const read = () => rulesFromOptions({ 'drain-rules': '@no-such-rules.json' });
    expect(read).toThrow(UsageError);
    expect(read).toThrow(/--drain-rules: cannot read no-such-rules\.json/);
  });
});

// From a review of the drain rules' check (51d1ae0; was test/unit/scripts/drain-rules-option-review.test.ts).
describe('check --function', () => {
  it('reads EVICT_DAEMONSET_PODS as the function does (" true " is true there)', async () => {
    const { rulesFromVariables } = await import('../../../scripts/drain-rules-option.js');
    expect(rulesFromVariables({ EVICT_DAEMONSET_PODS: ' true ' }).evictDaemonSetPods).toBe(true);
  });
});
