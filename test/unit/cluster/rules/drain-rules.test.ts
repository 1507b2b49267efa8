// Drain rules, one pod at a time: Cluster API's label and behaviors, our marks, Karpenter's
// do-not-disrupt values (true, a Go duration, anything else ignored), deployment-wide rules
// (first match), the defaults that were the two fixed tiers, and configuration errors.
import { describe, expect, it } from 'vitest';
import {
  defaultDrainRuleSettings,
  podRule,
  type DrainRuleSettings,
  type WaitRule,
} from '../../../../lambda/cluster/rules/drain-rules.js';

import { parseGoDurationMs } from '../../../../lambda/cluster/rules/do-not-disrupt.js';
import { drainRuleProblems } from '../../../../lambda/shared/drain-rule-variables.js';
import { parseConfig, toEnvironment } from '../../../../lambda/shared/config.js';
import { pod } from '../../../fakes/fake-world.js';

const now = Date.parse('2026-11-27T12:00:00Z');
const rule = (p: Parameters<typeof pod>[0], settings: DrainRuleSettings = defaultDrainRuleSettings) =>
  podRule(pod(p), settings, now);
const settings = (rules: DrainRuleSettings['drainRules'], evictDaemonSetPods = false): DrainRuleSettings => ({
  drainRules: rules,
  evictDaemonSetPods,
});

describe('a pod’s drain rule', () => {
  it('keeps the two tiers and the batch wait as the default rules', () => {
    expect(rule({ name: 'web' })).toMatchObject({ behavior: 'Drain', order: 0, source: 'default' });
    expect(rule({ name: 'coredns', priorityClassName: 'system-cluster-critical' })).toMatchObject({
      behavior: 'Drain',
      order: 2000,
    });
    expect(rule({ name: 'job', controllerKind: 'Job' })).toMatchObject({
      behavior: 'WaitCompleted',
      bound: 'batch-wait',
    });
    expect(rule({ name: 'agent', controllerKind: 'DaemonSet' })).toMatchObject({ behavior: 'Skip', builtIn: true });
    expect(rule({ name: 'done', phase: 'Succeeded' })).toMatchObject({ behavior: 'Skip', source: 'finished' });
  });

  it('reads Cluster API’s label as Cluster API does (case-insensitive; wait-completed or waitcompleted; anything else drains)', () => {
    expect(rule({ name: 'a', labels: { 'cluster.x-k8s.io/drain': 'skip' } })).toMatchObject({
      behavior: 'Skip',
      source: 'label cluster.x-k8s.io/drain=skip',
    });
    expect(rule({ name: 'b', labels: { 'cluster.x-k8s.io/drain': 'Wait-Completed' } })).toMatchObject({
      behavior: 'WaitCompleted',
      bound: 'deadline',
    });
    expect(rule({ name: 'c', labels: { 'cluster.x-k8s.io/drain': 'waitcompleted' } })).toMatchObject({
      behavior: 'WaitCompleted',
    });
    expect(rule({ name: 'd', labels: { 'cluster.x-k8s.io/drain': 'later' } })).toMatchObject({
      behavior: 'Drain',
      order: 0,
    });
    // The label wins over the deployment's rules and over the defaults (a Job labelled skip is left).
    const drainAll = settings([{ name: 'all', behavior: 'Drain', order: 5 }]);
    expect(
      rule({ name: 'e', controllerKind: 'Job', labels: { 'cluster.x-k8s.io/drain': 'skip' } }, drainAll),
    ).toMatchObject({ behavior: 'Skip' });
  });

  it('takes our own mark, label or annotation, with an order', () => {
    expect(rule({ name: 'a', annotations: { 'graceful-node-termination/drain': 'skip' } })).toMatchObject({
      behavior: 'Skip',
    });
    expect(rule({ name: 'b', labels: { 'graceful-node-termination/drain-order': '-10' } })).toMatchObject({
      behavior: 'Drain',
      order: -10,
    });
    expect(rule({ name: 'c', annotations: { 'graceful-node-termination/drain-order': 'soon' } })).toMatchObject({
      behavior: 'Drain',
      order: 0,
      source: 'default',
    });
  });

  it('reads karpenter.sh/do-not-disrupt as Karpenter 1.12 does: true, or a duration from the pod’s binding, else ignored', () => {
    const dnd = (value: string, boundMinutesAgo = 10) =>
      rule({
        name: 'x',
        annotations: { 'karpenter.sh/do-not-disrupt': value },
        startedAt: new Date(now - boundMinutesAgo * 60_000),
      });
    expect(dnd('true')).toMatchObject({ behavior: 'WaitCompleted', bound: 'batch-wait' });
    expect((dnd('true') as WaitRule).untilMs).toBeUndefined();
    expect(dnd('1h')).toMatchObject({ behavior: 'WaitCompleted', untilMs: now + 50 * 60_000 });
    expect(dnd('5m')).toMatchObject({ behavior: 'Drain', source: 'default' }); // elapsed
    expect(dnd('True')).toMatchObject({ behavior: 'Drain' }); // Karpenter compares with "true" exactly
    expect(dnd('forever')).toMatchObject({ behavior: 'Drain' });
    expect(parseGoDurationMs('1h30m45s')).toBe(5_445_000);
    expect(parseGoDurationMs('1.5h')).toBe(5_400_000);
    expect(parseGoDurationMs('300ms')).toBe(300);
    expect(parseGoDurationMs('10')).toBeUndefined();
    expect(parseGoDurationMs('1d')).toBeUndefined();
  });

  it('applies the first deployment-wide rule that selects the pod, by labels and namespace name', () => {
    const s = settings([
      {
        name: 'keep-logging',
        behavior: 'Skip',
        pods: [
          {
            selector: { matchLabels: { app: 'fluentd' } },
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'logging' } },
          },
        ],
      },
      {
        name: 'db-last',
        behavior: 'Drain',
        order: 100,
        pods: [{ selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['db'] }] } }],
      },
      {
        name: 'batch-ns',
        behavior: 'WaitCompleted',
        pods: [
          {
            namespaceSelector: {
              matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['etl'] }],
            },
          },
        ],
      },
    ]);
    expect(rule({ name: 'f', namespace: 'logging', labels: { app: 'fluentd' } }, s)).toMatchObject({
      behavior: 'Skip',
      source: 'rule keep-logging',
    });
    expect(rule({ name: 'g', namespace: 'default', labels: { app: 'fluentd' } }, s)).toMatchObject({
      behavior: 'Drain',
      order: 0,
    });
    expect(rule({ name: 'h', labels: { tier: 'db' } }, s)).toMatchObject({
      behavior: 'Drain',
      order: 100,
      source: 'rule db-last',
    });
    expect(rule({ name: 'i', namespace: 'etl' }, s)).toMatchObject({
      behavior: 'WaitCompleted',
      bound: 'deadline',
    });
  });

  it('evicts DaemonSet pods last only when asked, critical ones after everything', () => {
    const on = settings([], true);
    expect(rule({ name: 'agent', controllerKind: 'DaemonSet' }, on)).toMatchObject({ behavior: 'Drain', order: 1000 });
    expect(
      rule({ name: 'cni', controllerKind: 'DaemonSet', priorityClassName: 'system-node-critical' }, on),
    ).toMatchObject({ behavior: 'Drain', order: 3000 });
    expect(rule({ name: 'static', annotations: { 'kubernetes.io/config.mirror': 'x' } }, on)).toMatchObject({
      behavior: 'Skip',
    });
  });
});

describe('DRAIN_RULES', () => {
  it('names every problem, where it is', () => {
    expect(
      drainRuleProblems([
        { name: 'a', behavior: 'Skip', order: 3 },
        { name: 'a', behavior: 'Evict' },
        { behavior: 'Drain', pods: [{ namespaceSelector: { matchLabels: { team: 'x' } } }] },
      ]),
    ).toEqual([
      'rule 0.order must be an int32, and only with behavior Drain',
      'rule 1 needs a unique non-empty name',
      'rule 1.behavior must be one of Drain, Skip, WaitCompleted',
      'rule 2 needs a unique non-empty name',
      'rule 2.pods[0].namespaceSelector may only use kubernetes.io/metadata.name (the drainer reads no Namespaces)',
    ]);
    expect(
      drainRuleProblems([
        { name: 'b', behavior: 'Drain', pods: [{ selector: { matchExpressions: [{ key: 'k', operator: 'In' }] } }] },
      ]),
    ).toEqual(['rule 0.pods[0].selector.matchExpressions[0].values must be a non-empty list of strings']);
  });

  it('is refused at cold start with what is wrong, and read when right', () => {
    const base = { CLUSTER_NAME: 'c', AUTO_SCALING_GROUP_NAMES: 'g', LIFECYCLE_HOOK_NAMES: 'h' };
    expect(() => parseConfig({ ...base, DRAIN_RULES: '[{"name":"x","behavior":"skip"}]' })).toThrow(
      /DRAIN_RULES: rule 0.behavior must be one of Drain, Skip, WaitCompleted/,
    );
    expect(() => parseConfig({ ...base, DRAIN_RULES: '{' })).toThrow(/DRAIN_RULES is not JSON/);
    const config = parseConfig({
      ...base,
      DRAIN_RULES: '[{"name":"x","behavior":"Skip"}]',
      EVICT_DAEMONSET_PODS: 'true',
    });
    expect(config.drainRules).toEqual([{ name: 'x', behavior: 'Skip' }]);
    expect(config.evictDaemonSetPods).toBe(true);
    expect(parseConfig(base).drainRules).toEqual([]);
  });

  it('is refused by the construct at synth (the environment it writes), naming the rule', () => {
    const input = { clusterName: 'c', autoScalingGroupNames: ['g'], lifecycleHookNames: ['h'] };
    expect(() => toEnvironment({ ...input, drainRules: [{ name: 'x', behavior: 'Drain', order: 1.5 }] })).toThrow(
      /drainRules: rule 0.order must be an int32/,
    );
    expect(
      toEnvironment({ ...input, drainRules: [{ name: 'x', behavior: 'Skip' }], evictDaemonSetPods: true }),
    ).toMatchObject({
      DRAIN_RULES: '[{"name":"x","behavior":"Skip"}]',
      EVICT_DAEMONSET_PODS: 'true',
    });
  });
});

// From a review of the drain rules (a94a789; was test/unit/cluster/drain-rules-review.test.ts).
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
    const { toPodInfo } = await import('../../../../lambda/adapters/kubernetes/object-codecs.js');
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

// Found by the mutation score: an order is an int32, as Cluster API's; one outside it is ignored, not clamped.
describe('a drain order label', () => {
  const order = (value: string) => rule({ name: 'web', labels: { 'graceful-node-termination/drain-order': value } });
  it('is read at both ends of int32', () => {
    expect(order('2147483647')).toMatchObject({ behavior: 'Drain', order: 2_147_483_647 });
    expect(order('-2147483648')).toMatchObject({ behavior: 'Drain', order: -2_147_483_648 });
  });
  it('is ignored just past them', () => {
    expect(order('2147483648')).toMatchObject({ order: 0, source: 'default' });
    expect(order('-2147483649')).toMatchObject({ order: 0, source: 'default' });
  });
});

// Found by the mutation score: the source each rule gives a pod is what the Events and the log say it waits by.
describe('the source a rule names', () => {
  it('names each built-in rule', () => {
    const sources = [
      [{ name: 's', annotations: { 'kubernetes.io/config.mirror': 'x' } }, 'static pod (the kubelet owns it)', true],
      [{ name: 'ds', controllerKind: 'DaemonSet' }, 'DaemonSet pod (EVICT_DAEMONSET_PODS off)', true],
      [{ name: 'job', controllerKind: 'Job' }, 'Job pod', true],
      [{ name: 'dns', priorityClassName: 'system-cluster-critical' }, 'critical (system-cluster-critical)', true],
    ] as const;
    for (const [p, source, builtIn] of sources) expect(rule(p)).toMatchObject({ source, builtIn });
    const daemons = settings([], true);
    expect(rule({ name: 'ds', controllerKind: 'DaemonSet' }, daemons)).toMatchObject({ source: 'DaemonSet pod' });
    expect(
      rule({ name: 'ds', controllerKind: 'DaemonSet', priorityClassName: 'system-node-critical' }, daemons),
    ).toMatchObject({ source: 'critical DaemonSet pod' });
  });

  it("names the pod's own label or annotation, with its value", () => {
    expect(rule({ name: 'a', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } })).toEqual({
      behavior: 'WaitCompleted',
      source: 'label cluster.x-k8s.io/drain=wait-completed',
      bound: 'deadline',
    });
    expect(rule({ name: 'b', labels: { 'graceful-node-termination/drain-order': '5' } })).toEqual({
      behavior: 'Drain',
      order: 5,
      source: 'graceful-node-termination/drain-order=5',
    });
    expect(rule({ name: 'c', annotations: { 'graceful-node-termination/wait-for-completion': 'true' } })).toEqual({
      behavior: 'WaitCompleted',
      source: 'graceful-node-termination/wait-for-completion=true',
      bound: 'batch-wait',
    });
    expect(rule({ name: 'd', annotations: { 'graceful-node-termination/wait-for-completion': 'yes' } })).toMatchObject({
      behavior: 'Drain',
      source: 'default',
    });
    expect(rule({ name: 'e', annotations: { 'karpenter.sh/do-not-disrupt': '5m' } })).toMatchObject({
      behavior: 'WaitCompleted',
      source: 'karpenter.sh/do-not-disrupt=5m',
    });
  });

  it('lets a do-not-disrupt duration go at the moment it elapses', () => {
    const started = {
      name: 'e',
      startedAt: new Date(now - 300_000),
      annotations: { 'karpenter.sh/do-not-disrupt': '5m' },
    };
    expect(rule(started)).toMatchObject({ behavior: 'Drain', source: 'default' });
    expect(podRule(pod(started), defaultDrainRuleSettings, now - 1)).toMatchObject({ behavior: 'WaitCompleted' });
  });

  it('gives a pod our skip label a Skip rule and nothing more', () => {
    expect(rule({ name: 'f', labels: { 'graceful-node-termination/drain': 'skip' } })).toEqual({
      behavior: 'Skip',
      source: 'graceful-node-termination/drain=skip',
    });
  });

  it('reads an order annotation around its blanks (an annotation, unlike a label, may hold them)', () => {
    expect(rule({ name: 'g', annotations: { 'graceful-node-termination/drain-order': ' 12 ' } })).toMatchObject({
      behavior: 'Drain',
      order: 12,
    });
  });

  it('names the order beside our behavior label', () => {
    const labels = { 'graceful-node-termination/drain': 'drain', 'graceful-node-termination/drain-order': '5' };
    expect(rule({ name: 'h', labels })).toEqual({
      behavior: 'Drain',
      order: 5,
      source: 'graceful-node-termination/drain=drain, graceful-node-termination/drain-order=5',
    });
  });

  it('applies a rule to a pod any one of its pod selectors selects', () => {
    const either = settings([
      {
        name: 'web-or-api',
        behavior: 'Skip',
        pods: [{ selector: { matchLabels: { app: 'web' } } }, { selector: { matchLabels: { app: 'api' } } }],
      },
    ]);
    expect(rule({ name: 'w', labels: { app: 'web' } }, either)).toMatchObject({ source: 'rule web-or-api' });
    expect(rule({ name: 'o', labels: { app: 'other' } }, either)).toMatchObject({ source: 'default' });
  });

  it('applies a rule without pods, or with an empty list (which the configuration refuses), to every pod', () => {
    expect(rule({ name: 'web' }, settings([{ name: 'all', behavior: 'Skip', pods: [] }]))).toMatchObject({
      source: 'rule all',
    });
    expect(rule({ name: 'web' }, settings([{ name: 'all', behavior: 'Skip' }]))).toEqual({
      behavior: 'Skip',
      source: 'rule all',
    });
  });
});
