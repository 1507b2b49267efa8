// Review of drain rules, one pod at a time: the pod's own `drain` mark, and the shapes of
// DRAIN_RULES Cluster API's API server refuses (an empty `pods` list, an empty pod selector).
import { describe, expect, it } from 'vitest';
import { podRule, type DrainRuleSettings } from '../../../lambda/cluster/rules/drain-rules.js';
import { drainRuleProblems } from '../../../lambda/shared/drain-rule-variables.js';
import { pod } from '../../fakes/fake-world.js';

const now = Date.parse('2026-11-27T12:00:00Z');
const skipBatch: DrainRuleSettings = {
  drainRules: [
    {
      name: 'skip-batch',
      behavior: 'Skip',
      pods: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'batch' } } }],
    },
  ],
  evictDaemonSetPods: false,
};

describe('a pod’s own drain mark', () => {
  it('drain wins over a deployment-wide rule, as skip and wait-completed do', () => {
    const marked = pod({
      name: 'exporter',
      namespace: 'batch',
      annotations: { 'graceful-node-termination/drain': 'drain' },
    });
    expect(podRule(marked, skipBatch, now)).toMatchObject({
      behavior: 'Drain',
      order: 0,
      source: 'graceful-node-termination/drain=drain',
    });
    const ordered = pod({
      name: 'exporter-2',
      namespace: 'batch',
      labels: { 'graceful-node-termination/drain': 'Drain', 'graceful-node-termination/drain-order': '7' },
    });
    expect(podRule(ordered, skipBatch, now)).toMatchObject({ behavior: 'Drain', order: 7 });
  });
});

describe('DRAIN_RULES shapes Cluster API refuses', () => {
  it('refuses an empty pods list and an empty pod selector (MinItems=1, MinProperties=1), which would select every pod', () => {
    expect(drainRuleProblems([{ name: 'none', behavior: 'Skip', pods: [] }])).not.toEqual([]);
    expect(drainRuleProblems([{ name: 'empty', behavior: 'Skip', pods: [{}] }])).not.toEqual([]);
  });

  it('takes every int32 order, the lowest too', () => {
    expect(drainRuleProblems([{ name: 'first', behavior: 'Drain', order: -2147483648 }])).toEqual([]);
    expect(drainRuleProblems([{ name: 'too-low', behavior: 'Drain', order: -2147483649 }])).not.toEqual([]);
  });
});

describe('karpenter.sh/do-not-disrupt durations, from the wire', () => {
  it('count from the pod’s status.startTime, as Karpenter 1.12 does (IsDoNotDisruptActive), not from its binding', async () => {
    const { toPodInfo } = await import('../../../lambda/adapters/kubernetes/object-codecs.js');
    const boundMs = now - 75_000;
    const wire = {
      metadata: { name: 'trainer', namespace: 'ml', uid: 'u-1', annotations: { 'karpenter.sh/do-not-disrupt': '1m' } },
      spec: { nodeName: 'node-a', containers: [] },
      status: {
        phase: 'Running',
        startTime: new Date(boundMs + 30_000),
        conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: new Date(boundMs) }],
      },
    };
    // Started 45 s ago: Karpenter still protects it (45 s < 1m), although it was bound 75 s ago.
    expect(podRule(toPodInfo(wire as never), { drainRules: [], evictDaemonSetPods: false }, now)).toMatchObject({
      behavior: 'WaitCompleted',
      untilMs: boundMs + 90_000,
    });
  });
});
