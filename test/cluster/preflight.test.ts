// The drainability preflight (npm run check) against the real plane: budgets as the
// disruption controller computes them, pods as the scheduler placed them.
import { CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { checkNodes } from '../../scripts/check.js';
import { hasBlocker, renderFindings } from '../../scripts/preflight.js';
import {
  createDeployment,
  createKwokNode,
  createPdb,
  ensureNamespace,
  newInstanceId,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a } from './head.js';

describe('the drainability preflight on a real API server', () => {
  it('names the budget whose healthy pods all sit on the nodes to be replaced, and lets the others pass', async () => {
    await ensureNamespace(a, 'preflight');
    for (const name of ['preflight-old-1', 'preflight-old-2', 'preflight-new']) {
      await createKwokNode(a, name, newInstanceId(), {
        scenario: 'preflight',
        generation: name.includes('old') ? 'old' : 'new',
      });
    }
    for (const name of ['preflight-old-1', 'preflight-old-2', 'preflight-new']) await waitNodeReady(a, name);
    a.kubectl('cordon', 'preflight-new');
    // "payments": 2 replicas, minAvailable 2, both on old nodes: nothing will ever free one.
    await createDeployment(a, 'preflight', 'payments', 2, { nodeSelector: { generation: 'old' } });
    await createPdb(a, 'preflight', 'payments', 'payments', 2);
    // "web": 3 replicas, minAvailable 2: one may go at a time.
    await createDeployment(a, 'preflight', 'web', 3, { nodeSelector: { generation: 'old' } });
    await createPdb(a, 'preflight', 'web', 'web', 2);
    await waitDeploymentReady(a, 'preflight', 'payments', 2);
    await waitDeploymentReady(a, 'preflight', 'web', 3);
    await until('both budgets computed', 30_000, async () => {
      const budgets = (await a.policy.listNamespacedPodDisruptionBudget({ namespace: 'preflight' })).items;
      return (
        budgets.length === 2 &&
        budgets.every(
          (b) => b.status?.observedGeneration === b.metadata?.generation && (b.status?.currentHealthy ?? 0) > 0,
        )
      );
    });
    a.kubectl('uncordon', 'preflight-new');

    const result = await checkNodes(a.kc.makeApiClient(CoreV1Api), a.kc.makeApiClient(PolicyV1Api), [
      'preflight-old-1',
      'preflight-old-2',
    ]);

    const payments = result.findings.filter((f) => f.budget === 'payments');
    expect(payments).toHaveLength(2);
    expect(payments.every((f) => f.kind === 'budget-allows-none' && f.severity === 'blocker')).toBe(true);
    expect(payments[0]!.why).toMatch(/budget payments allows no disruption \(2 healthy, 2 required\)/);
    expect(result.findings.filter((f) => f.budget === 'web')).toEqual([]);
    expect(hasBlocker(result.findings)).toBe(true);
    expect(renderFindings(result.nodes, result.findings)).toMatch(
      /2 node\(s\) checked: 2 blocker\(s\), 0 other finding\(s\)\./,
    );
  });
});
