import { describe, expect, it } from 'vitest';
import {
  budgetAllowsNoneNow,
  budgetLeavesNone,
  holdsOnlyReadyReplica,
  nodeCost,
  pinnedToGroup,
  podPoints,
  runsBatchWork,
} from '../../../lambda/termination-policy/cost-rules.js';
import { costPod } from '../../fixtures/choice.js';
import type { PodInfo } from '../../../lambda/cluster/model.js';
import { podRule } from '../../../lambda/cluster/rules/drain-rules.js';

describe('the cost rules', () => {
  it('runs-batch-work: a Job pod or a do-not-disrupt pod, never a ReplicaSet pod', () => {
    expect(runsBatchWork(costPod('job', { kind: 'Job' }))?.rule).toBe('runs-batch-work');
    expect(runsBatchWork(costPod('dnd', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } }))?.why).toContain(
      'asks not to be disrupted',
    );
    expect(runsBatchWork(costPod('web'))).toBeUndefined();
  });

  it('follows the deployment’s drain rules: a pod it would wait for blocks, a pod it would leave costs nothing', () => {
    const rules = {
      drainRules: [
        { name: 'keep-cache', behavior: 'Skip' as const, pods: [{ selector: { matchLabels: { app: 'cache' } } }] },
      ],
      evictDaemonSetPods: false,
    };
    const ruleOf = (pod: PodInfo) => podRule(pod, rules, Date.now());
    expect(
      runsBatchWork(costPod('export', { labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } }), ruleOf)?.rule,
    ).toBe('runs-batch-work');
    // A do-not-disrupt duration long elapsed protects nothing, as for the drain.
    const old = costPod('old', { annotations: { 'karpenter.sh/do-not-disrupt': '1s' } });
    expect(
      runsBatchWork({ ...old, info: { ...old.info, startedAt: new Date(Date.now() - 60_000) } }, ruleOf),
    ).toBeUndefined();
    const cost = nodeCost(
      [costPod('cache', { labels: { app: 'cache' }, kind: 'Job' }), costPod('web')],
      'workers',
      {},
      ruleOf,
    );
    expect(cost).toMatchObject({ evicted: 1, blockers: [] });
  });

  it('budget-leaves-none: a budget allowing nothing whose healthy pods are all on the node', () => {
    const budgets = [{ name: 'db', disruptionsAllowed: 0, currentHealthy: 1 }];
    const pod = costPod('db-0', { budgets });
    expect(budgetLeavesNone(pod, [pod])?.rule).toBe('budget-leaves-none');
    // A healthy copy elsewhere will free it: not a blocker (a weight: budgetAllowsNoneNow).
    expect(
      budgetLeavesNone(costPod('db-0', { budgets: [{ ...budgets[0]!, currentHealthy: 2 }] }), [pod]),
    ).toBeUndefined();
    expect(
      budgetLeavesNone(costPod('db-0', { budgets: [{ ...budgets[0]!, disruptionsAllowed: 1 }] }), [pod]),
    ).toBeUndefined();
  });

  it('only-ready-replica: every ready replica of the workload is on the node', () => {
    const one = costPod('api', { owner: { kind: 'ReplicaSet', name: 'api-7f', readyReplicas: 1 } });
    expect(holdsOnlyReadyReplica(one, [one])?.why).toContain('no ready replica elsewhere');
    const spread = costPod('api', { owner: { kind: 'ReplicaSet', name: 'api-7f', readyReplicas: 2 } });
    expect(holdsOnlyReadyReplica(spread, [spread])).toBeUndefined();
    // Unknown (the workload could not be read) or a pod not ready: no guess.
    expect(
      holdsOnlyReadyReplica(costPod('api', { owner: { kind: 'ReplicaSet', name: 'x', readyReplicas: undefined } }), []),
    ).toBeUndefined();
    expect(
      holdsOnlyReadyReplica(
        costPod('api', { ready: false, owner: { kind: 'ReplicaSet', name: 'x', readyReplicas: 0 } }),
        [],
      ),
    ).toBeUndefined();
  });

  it('pinned-to-group: required placement on a group label the node carries, or on the group name', () => {
    const labels = { 'eks.amazonaws.com/nodegroup': 'workers', zone: 'a' };
    expect(
      pinnedToGroup(
        costPod('p', { requiredNodeLabels: { 'eks.amazonaws.com/nodegroup': ['workers'] } }),
        'workers',
        labels,
      ),
    ).toBe(true);
    expect(pinnedToGroup(costPod('p', { requiredNodeLabels: { zone: ['a'] } }), 'workers', labels)).toBe(false);
    expect(
      pinnedToGroup(costPod('p', { requiredNodeLabels: { pool: ['workers'] } }), 'workers', { pool: 'workers' }),
    ).toBe(true);
    expect(pinnedToGroup(costPod('p'), 'workers', labels)).toBe(false);
  });

  it('weights: deletion cost, priority, local storage, a budget that makes the drain wait, pinned', () => {
    expect(podPoints(costPod('p'), false).points).toBe(1);
    expect(podPoints(costPod('p', { deletionCost: 500 }), false).points).toBe(6);
    expect(podPoints(costPod('p', { deletionCost: -1000 }), false).points).toBe(0.5);
    expect(podPoints(costPod('p', { priority: 2_000_000_000 }), false).points).toBe(11);
    expect(podPoints(costPod('p', { localStorage: true }), false).points).toBe(3);
    expect(
      budgetAllowsNoneNow(costPod('p', { budgets: [{ name: 'b', disruptionsAllowed: 0, currentHealthy: 5 }] })),
    ).toBe(true);
    expect(
      podPoints(costPod('p', { budgets: [{ name: 'b', disruptionsAllowed: 0, currentHealthy: 5 }] }), false).points,
    ).toBe(6);
    expect(podPoints(costPod('p'), true).points).toBe(2);
  });

  it('a node: DaemonSet and finished pods cost nothing; blockers and reasons are named', () => {
    const cost = nodeCost(
      [costPod('ds', { kind: 'DaemonSet' }), costPod('job', { kind: 'Job' }), costPod('web', { localStorage: true })],
      'workers',
      {},
    );
    expect(cost.evicted).toBe(2);
    expect(cost.points).toBe(4);
    expect(cost.blockers.map((b) => b.rule)).toEqual(['runs-batch-work']);
    expect(cost.reasons).toEqual(['2 pods to evict', '1 with local storage']);
    expect(nodeCost([], 'workers', {})).toMatchObject({ points: 0, evicted: 0, blockers: [] });
    // Two pods of one workload make one blocker; two Job pods two.
    const owner = { kind: 'ReplicaSet', name: 'web-1', readyReplicas: 2 };
    expect(nodeCost([costPod('a', { owner }), costPod('b', { owner })], 'workers', {}).blockers).toHaveLength(1);
    expect(
      nodeCost([costPod('j1', { kind: 'Job' }), costPod('j2', { kind: 'Job' })], 'workers', {}).blockers,
    ).toHaveLength(2);
  });
});
