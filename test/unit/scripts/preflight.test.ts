// The drainability preflight's analysis (scripts/preflight.ts): which pods on the nodes to be
// replaced cannot leave now, and why, from pods and budgets shaped as the API returns them.
import type { V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { analyseDrainability, hasBlocker, renderFindings, selects } from '../../../scripts/preflight.js';

const pod = (
  name: string,
  node: string,
  o: {
    app?: string;
    ready?: boolean;
    owner?: string;
    tolerations?: V1Pod['spec'] extends infer S ? (S extends { tolerations?: infer T } ? T : never) : never;
    annotations?: Record<string, string>;
  } = {},
): V1Pod => ({
  metadata: {
    name,
    namespace: 'shop',
    labels: o.app ? { app: o.app } : {},
    annotations: o.annotations ?? {},
    ownerReferences:
      o.owner === 'none'
        ? []
        : [{ apiVersion: 'apps/v1', kind: o.owner ?? 'ReplicaSet', name: 'rs', uid: 'u', controller: true }],
  },
  spec: { nodeName: node, containers: [], tolerations: o.tolerations },
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }] },
});
const budget = (
  name: string,
  app: string,
  disruptionsAllowed: number,
  extra: Partial<V1PodDisruptionBudget['spec']> = {},
): V1PodDisruptionBudget => ({
  metadata: { name, namespace: 'shop' },
  spec: { minAvailable: 2, selector: { matchLabels: { app } }, ...extra },
  status: { disruptionsAllowed, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2 },
});

describe('the drainability preflight', () => {
  it('names a budget that allows no disruption while all its healthy pods sit on nodes to be replaced: a certain blocker', () => {
    const findings = analyseDrainability({
      nodes: ['old-1', 'old-2'],
      pods: [pod('web-1', 'old-1', { app: 'web' }), pod('web-2', 'old-2', { app: 'web' })],
      budgets: [budget('web', 'web', 0)],
    });
    expect(findings.map((f) => [f.pod, f.kind, f.severity, f.budget])).toEqual([
      ['shop/web-1', 'budget-allows-none', 'blocker', 'web'],
      ['shop/web-2', 'budget-allows-none', 'blocker', 'web'],
    ]);
    expect(findings[0]!.why).toMatch(/every healthy pod it counts is on a node to be replaced/);
    expect(hasBlocker(findings)).toBe(true);
  });

  it('only warns when the budget is at zero but healthy pods elsewhere will let it move again', () => {
    const findings = analyseDrainability({
      nodes: ['old-1'],
      pods: [pod('web-1', 'old-1', { app: 'web' }), pod('web-2', 'new-1', { app: 'web' })],
      budgets: [budget('web', 'web', 0)],
    });
    expect(findings.map((f) => [f.kind, f.severity])).toEqual([['budget-allows-none', 'warning']]);
    expect(hasBlocker(findings)).toBe(false);
  });

  it('suggests unhealthyPodEvictionPolicy: AlwaysAllow when unready pods pin the budget, and not when it is set', () => {
    const pods = [pod('web-1', 'old-1', { app: 'web' }), pod('web-2', 'old-1', { app: 'web', ready: false })];
    const pinned = analyseDrainability({ nodes: ['old-1'], pods, budgets: [budget('web', 'web', 0)] });
    expect(pinned[0]).toMatchObject({
      kind: 'budget-pinned-by-unhealthy-pods',
      severity: 'blocker',
      fix: expect.stringMatching(/unhealthyPodEvictionPolicy: AlwaysAllow/),
    });
    const allowed = analyseDrainability({
      nodes: ['old-1'],
      pods,
      budgets: [budget('web', 'web', 0, { unhealthyPodEvictionPolicy: 'AlwaysAllow' })],
    });
    expect(allowed.map((f) => f.kind)).toEqual(['budget-allows-none', 'budget-allows-none']);
  });

  it('names a pod under two budgets, pods that tolerate the cordon, batch pods and pods with no controller', () => {
    const findings = analyseDrainability({
      nodes: ['old-1'],
      pods: [
        pod('both', 'old-1', { app: 'api' }),
        pod('anywhere', 'old-1', { tolerations: [{ operator: 'Exists' }] }),
        pod('job', 'old-1', { owner: 'Job' }),
        pod('report', 'old-1', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } }),
        pod('bare', 'old-1', { owner: 'none' }),
        pod('agent', 'old-1', { owner: 'DaemonSet', tolerations: [{ operator: 'Exists' }] }),
        pod('elsewhere', 'new-1', { owner: 'none' }),
      ],
      budgets: [
        budget('api-a', 'api', 1),
        {
          ...budget('api-b', 'api', 1),
          spec: { minAvailable: 1, selector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['api'] }] } },
        },
      ],
    });
    expect(findings.map((f) => `${f.pod} ${f.kind} ${f.severity}`)).toEqual([
      'shop/both multiple-budgets blocker',
      'shop/anywhere tolerates-cordon warning',
      'shop/job waits-for-completion info',
      'shop/report waits-for-completion info',
      'shop/bare no-controller warning',
    ]);
  });

  it('with the minimal strategy, names a node running more pods of a budget than it lets go at once: a deadlock, not a wait', () => {
    const pods = [
      pod('web-1', 'old-1', { app: 'web' }),
      pod('web-2', 'old-1', { app: 'web' }),
      pod('web-3', 'old-2', { app: 'web' }),
    ];
    const budgets = [
      {
        ...budget('web', 'web', 1),
        status: { disruptionsAllowed: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3 },
      },
    ];
    expect(analyseDrainability({ nodes: ['old-1', 'old-2'], pods, budgets })).toEqual([]);
    const findings = analyseDrainability({ nodes: ['old-1', 'old-2'], pods, budgets, terminateFirst: true });
    expect(findings).toEqual([
      expect.objectContaining({
        node: 'old-1',
        pod: 'shop/web-1, shop/web-2',
        kind: 'budget-deadlock-terminate-first',
        severity: 'blocker',
        budget: 'web',
        fix: expect.stringMatching(/--strategy default/),
      }),
    ]);
    expect(findings[0]!.why).toMatch(/runs 2 pods of budget web, which allows 1 at a time/);
  });

  it('reads selectors as policy/v1 does: null selects nothing, empty selects the namespace', () => {
    expect(selects(undefined, { app: 'x' })).toBe(false);
    expect(selects({}, { app: 'x' })).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, { app: 'x' })).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['x'] }] }, { app: 'x' })).toBe(false);
  });

  it('prints blockers first, one line each, with the fix', () => {
    const findings = analyseDrainability({
      nodes: ['old-1'],
      pods: [pod('bare', 'old-1', { owner: 'none' }), pod('web-1', 'old-1', { app: 'web' })],
      budgets: [budget('web', 'web', 0)],
    });
    const text = renderFindings(['old-1'], findings).split('\n');
    expect(text[0]).toMatch(/^SEVERITY\s+NODE\s+POD\s+WHY$/);
    expect(text[1]).toMatch(
      /^BLOCKER\s+old-1\s+shop\/web-1\s+budget web allows no disruption .* fix: add a replica \(or lower minAvailable\) on web/,
    );
    expect(text[2]).toMatch(/^WARNING\s+old-1\s+shop\/bare/);
    expect(text.at(-1)).toBe('1 node(s) checked: 1 blocker(s), 1 other finding(s).');
    expect(renderFindings(['a', 'b'], [])).toBe('2 node(s) checked: every pod can leave now.');
  });
});

// From a review of the drain rules' check (51d1ae0; was test/unit/scripts/drain-rules-option-review.test.ts).
describe('check --evict-daemonset-pods', () => {
  it('does not warn that a DaemonSet pod tolerates the cordon (its controller adds that toleration; the one put back is not chased)', async () => {
    const { analyseDrainability } = await import('../../../scripts/preflight.js');
    const agent = {
      metadata: {
        name: 'agent-1',
        namespace: 'logging',
        uid: 'a1',
        ownerReferences: [{ kind: 'DaemonSet', name: 'agent', uid: 'ds', apiVersion: 'apps/v1', controller: true }],
      },
      spec: {
        nodeName: 'node-a',
        containers: [],
        tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }],
      },
      status: { phase: 'Running' },
    };
    const findings = analyseDrainability({
      nodes: ['node-a'],
      pods: [agent],
      budgets: [],
      rules: { drainRules: [], evictDaemonSetPods: true },
    });
    expect(findings.filter((f) => f.kind === 'tolerates-cordon')).toEqual([]);
  });
});

// From a review of the drain rules' check (51d1ae0; was test/unit/scripts/drain-rules-option-review.test.ts).
describe('check --strategy minimal under drain rules', () => {
  it('does not count pods the rules leave running in a budget deadlock (they never need to leave)', async () => {
    const { analyseDrainability } = await import('../../../scripts/preflight.js');
    const cache = (n: number) => ({
      metadata: {
        name: `cache-${n}`,
        namespace: 'shop',
        uid: `c${n}`,
        labels: { app: 'cache', 'cluster.x-k8s.io/drain': 'skip' },
        ownerReferences: [{ kind: 'ReplicaSet', name: 'cache', uid: 'rs', apiVersion: 'apps/v1', controller: true }],
      },
      spec: { nodeName: 'node-a', containers: [] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    const budget = {
      metadata: { name: 'cache', namespace: 'shop' },
      spec: { selector: { matchLabels: { app: 'cache' } }, minAvailable: 1 },
      status: { disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1 },
    };
    const findings = analyseDrainability({
      nodes: ['node-a'],
      pods: [cache(1), cache(2)],
      budgets: [budget],
      terminateFirst: true,
    });
    expect(findings.filter((f) => f.kind === 'budget-deadlock-terminate-first')).toEqual([]);
  });
});

// From a review of the drain rules' check (51d1ae0; was test/unit/scripts/drain-rules-option-review.test.ts).
describe('check: budgets of pods the drain never evicts', () => {
  it('does not report a blocker for the budget of a Cluster API wait-completed pod (it is waited for, never evicted)', async () => {
    const { analyseDrainability, hasBlocker } = await import('../../../scripts/preflight.js');
    const etl = {
      metadata: {
        name: 'etl-0',
        namespace: 'shop',
        uid: 'e0',
        labels: { app: 'etl', 'cluster.x-k8s.io/drain': 'wait-completed' },
        ownerReferences: [{ kind: 'StatefulSet', name: 'etl', uid: 'ss', apiVersion: 'apps/v1', controller: true }],
      },
      spec: { nodeName: 'node-a', containers: [] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    };
    const budget = {
      metadata: { name: 'etl', namespace: 'shop' },
      spec: { selector: { matchLabels: { app: 'etl' } }, minAvailable: 1 },
      status: { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1 },
    };
    const findings = analyseDrainability({ nodes: ['node-a'], pods: [etl], budgets: [budget] });
    expect(hasBlocker(findings)).toBe(false);
    expect(findings.map((f) => f.kind)).toEqual(['waits-for-completion']);
  });
});
