// Drain rules on the real plane: a pod Cluster API's label says to skip stays running and the
// drain ends without it; a Job pod labelled wait-completed is never evicted, even past the batch
// wait, and the action completes only once it has finished; orders leave one after the other
// (a pod's own order, the default, a deployment-wide rule), read from the audit log.
import { describe, expect, it } from 'vitest';
import {
  byDrainer,
  createDeployment,
  createKwokNode,
  eventsFor,
  newInstanceId,
  podsOn,
  readAudit,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, blockDrainer, plane } from './head.js';

const ns = 'drain-rules';
const onNode = { nodeSelector: { scenario: 'drain-rules' } };

describe('drain rules', () => {
  const rules = [
    { name: 'db-last', behavior: 'Drain', order: 100, pods: [{ selector: { matchLabels: { tier: 'db' } } }] },
  ];
  const drainer = blockDrainer(
    {
      handOff: true,
      drainTimeoutSeconds: 120,
      loadBalancerDelaySeconds: 1,
      env: { DRAIN_RULES: JSON.stringify(rules), BATCH_WAIT_SECONDS: '2' },
    },
    { namespace: ns },
  );

  it('skips, waits for completion and keeps the order, as Cluster API documents them', async () => {
    const instanceId = newInstanceId();
    await createKwokNode(a, 'rules-1', instanceId, { scenario: 'drain-rules' });
    await waitNodeReady(a, 'rules-1');
    await createDeployment(a, ns, 'frontdoor', 1, {
      ...onNode,
      deleteDelay: '3s',
      annotations: { 'graceful-node-termination/drain-order': '-5' },
    });
    await createDeployment(a, ns, 'web', 1, { ...onNode, deleteDelay: '3s' });
    await createDeployment(a, ns, 'db', 1, { ...onNode, labels: { tier: 'db' } });
    await createDeployment(a, ns, 'cache', 1, { ...onNode, labels: { 'cluster.x-k8s.io/drain': 'skip' } });
    for (const name of ['frontdoor', 'web', 'db', 'cache']) await waitDeploymentReady(a, ns, name, 1);
    await a.batch.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: 'export' },
        spec: {
          backoffLimit: 0,
          template: {
            // kwok completes it 15 s after it is Ready: well past the 2 s batch wait.
            metadata: {
              labels: { 'cluster.x-k8s.io/drain': 'wait-completed' },
              annotations: {
                'pod-complete.stage.kwok.x-k8s.io/delay': '15s',
                'pod-complete.stage.kwok.x-k8s.io/jitter-delay': '15s',
              },
            },
            spec: {
              restartPolicy: 'Never',
              ...onNode,
              containers: [{ name: 'job', image: 'registry.k8s.io/pause:3.10' }],
              automountServiceAccountToken: false,
            },
          },
        },
      },
    });
    await until('Job pod Running', 30_000, async () =>
      (await podsOn(a, 'rules-1')).some(
        (p) => p.metadata?.labels?.['job-name'] === 'export' && p.status?.phase === 'Running',
      ),
    );
    const cache = (await podsOn(a, 'rules-1')).find((p) => p.metadata?.labels?.['app'] === 'cache')!;
    const since = Date.now();

    const statuses: unknown[] = [await drainer.terminate(instanceId, { remainingMs: 60_000 })];
    while (drainer.handOffs.length >= statuses.length)
      statuses.push(await drainer.deliver(drainer.handOffs[statuses.length - 1]!, { remainingMs: 60_000 }));

    expect((statuses.at(-1) as { records: { status: string }[] }).records[0]!.status).toBe('drained');
    const evictions = readAudit(
      plane,
      (e) =>
        byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.namespace === ns && e.verb === 'create',
    );
    const first = (app: string) => evictions.find((e) => e.name?.startsWith(`${app}-`));
    // Each order is evicted only once the pods of the lower ones are gone (3 s shutdowns).
    expect(evictions.map((e) => e.name!.split('-')[0])).toEqual(['frontdoor', 'web', 'db']);
    expect(first('web')!.atMs - first('frontdoor')!.atMs).toBeGreaterThanOrEqual(2_500);
    expect(first('db')!.atMs - first('web')!.atMs).toBeGreaterThanOrEqual(2_500);
    // Skip: still running on the node, never asked to leave.
    const still = await a.core.readNamespacedPod({ namespace: ns, name: cache.metadata!.name! });
    expect(still.metadata?.deletionTimestamp).toBeUndefined();
    expect(still.spec?.nodeName).toBe('rules-1');
    // WaitCompleted: never evicted, though the batch wait (2 s) ended long before it finished.
    const job = await a.batch.readNamespacedJob({ namespace: ns, name: 'export' });
    expect(job.status?.succeeded).toBe(1);
    const jobDoneMs = Date.parse(String(job.status?.completionTime ?? ''));
    const completion = drainer.completions.find((c) => c.instanceId === instanceId)!;
    expect(completion).toMatchObject({ result: 'CONTINUE', outcome: 'completed' });
    expect(completion.atMs).toBeGreaterThanOrEqual(jobDoneMs);
    const events = await eventsFor(a, 'Node', 'rules-1');
    expect(events.map((e) => e.reason)).toEqual(
      expect.arrayContaining(['PodsSkippedByDrainRule', 'WaitingForBatchPods', 'Drained']),
    );
    expect(events.find((e) => e.reason === 'PodsSkippedByDrainRule')!.message).toMatch(
      /drain-rules\/cache-\S+ \(label cluster.x-k8s.io\/drain=skip\)/,
    );
    expect(events.find((e) => e.reason === 'WaitingForBatchPods')!.message).toMatch(
      /drain-rules\/export-\S+ \(label cluster.x-k8s.io\/drain=wait-completed\) until they finish or the drain deadline/,
    );
  });
});

// From a review of the drain rules (05eb718; was test/cluster/drain-rules-review.test.ts).
describe('drain rules under the force policy: a wait-completed pod that never finishes', () => {
  const ns = 'drain-rules-review';
  const onNode = { nodeSelector: { scenario: 'drain-rules-review' } };
  const drainer = blockDrainer(
    {
      handOff: true,
      drainTimeoutSeconds: 20,
      minEvictionWindowSeconds: 5,
      deadlinePolicy: 'force',
      loadBalancerDelaySeconds: 1,
      env: { BATCH_WAIT_SECONDS: '0' },
    },
    { namespace: ns },
  );

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
