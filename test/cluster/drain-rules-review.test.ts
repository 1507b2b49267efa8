// Review of drain rules on the real plane: under the force policy (the default) a pod Cluster
// API's label says to wait for, and that never finishes, holds the drain until its deadline,
// across hand-offs, not until the lifecycle action's cap; and it is never evicted nor deleted.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startDrainer, type Drainer } from './drainer.js';
import {
  admin,
  byDrainer,
  createDeployment,
  createKwokNode,
  ensureNamespace,
  newInstanceId,
  podsOn,
  readAudit,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';

const plane = inject('plane');
const a = admin(plane);
const ns = 'drain-rules-review';
const onNode = { nodeSelector: { scenario: 'drain-rules-review' } };

describe('drain rules (review)', () => {
  let drainer: Drainer;
  beforeAll(async () => {
    await ensureNamespace(a, ns);
    drainer = startDrainer(plane, {
      handOff: true,
      drainTimeoutSeconds: 20,
      minEvictionWindowSeconds: 5,
      deadlinePolicy: 'force',
      loadBalancerDelaySeconds: 1,
      env: { BATCH_WAIT_SECONDS: '0' },
    });
  });
  afterAll(() => drainer?.restore());

  it('ends a force drain at its deadline when a wait-completed pod never finishes, across hand-offs, without touching it', async () => {
    const instanceId = newInstanceId();
    await createKwokNode(a, 'rules-review-1', instanceId, { scenario: 'drain-rules-review' });
    await waitNodeReady(a, 'rules-review-1');
    await createDeployment(a, ns, 'web', 1, onNode);
    await createDeployment(a, ns, 'etl', 1, { ...onNode, labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } });
    for (const name of ['web', 'etl']) await waitDeploymentReady(a, ns, name, 1);
    const since = Date.now();

    // Invocations of 15 s: the drain is handed on several times within its 20 s deadline and after.
    const statuses: unknown[] = [await drainer.terminate(instanceId, { remainingMs: 15_000 })];
    while (drainer.handOffs.length >= statuses.length && Date.now() - since < 90_000) {
      statuses.push(await drainer.deliver(drainer.handOffs[statuses.length - 1]!, { remainingMs: 15_000 }));
    }

    const completion = drainer.completions.find((c) => c.instanceId === instanceId);
    expect(completion).toMatchObject({ result: 'CONTINUE' });
    // The deadline is 20 s after the drain began (no batch wait to extend it); a few seconds for the passes and the settle phase.
    expect(completion!.atMs - since).toBeLessThan(35_000);
    const touched = readAudit(
      plane,
      (e) =>
        byDrainer(e) &&
        e.atMs >= since &&
        e.namespace === ns &&
        e.name?.startsWith('etl-') === true &&
        ['create', 'delete'].includes(e.verb),
    );
    expect(touched).toEqual([]);
    expect(
      (await podsOn(a, 'rules-review-1')).some(
        (p) => p.metadata?.labels?.['app'] === 'etl' && !p.metadata?.deletionTimestamp,
      ),
    ).toBe(true);
  });
});
