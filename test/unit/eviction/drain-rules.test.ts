// Drain rules through whole drains: Skip pods stay and hold nothing, Cluster API's
// WaitCompleted pods are never evicted and waited for, orders leave one after the other, and
// DaemonSet pods go last when asked (the one their controller puts back is not chased).
import { beforeEach, describe, expect, it } from 'vitest';
import { handlerWorld, FakeClock, FakeCluster, FakeLifecycleActions, pod } from '../../fakes/fake-world.js';
import { instanceId } from '../../fixtures/notifications.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  LOAD_BALANCER_DELAY_SECONDS: '0',
  HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:gnt-topic',
};

describe('a drain under drain rules', () => {
  let world: ReturnType<typeof handlerWorld>;
  let clock: FakeClock;
  let cluster: FakeCluster;
  let lifecycle: FakeLifecycleActions;
  let t0: number;

  beforeEach(() => {
    world = handlerWorld(env);
    ({ clock, cluster, lifecycle } = world);
    t0 = clock.now();
    cluster.addNode('node-a', instanceId);
  });

  const evictions = () =>
    cluster.calls.filter((c) => c.op === 'evict').map((c) => ({ pod: c.target, s: (c.atMs - t0) / 1000 }));

  it('leaves Skip pods running, tells them once, and the drain ends drained', async () => {
    cluster.addPod(pod({ name: 'web' }));
    const kept = cluster.addPod(pod({ name: 'cache', labels: { 'cluster.x-k8s.io/drain': 'skip' } }));
    cluster.addPod(pod({ name: 'shipper', namespace: 'logging', labels: { app: 'fluentd' } }));

    const statuses = await world.runChain({
      DRAIN_RULES: JSON.stringify([
        { name: 'keep-logs', behavior: 'Skip', pods: [{ selector: { matchLabels: { app: 'fluentd' } } }] },
      ]),
    });

    expect(statuses).toEqual(['drained']);
    expect(evictions().map((e) => e.pod)).toEqual(['default/web']);
    expect(cluster.pods.get(kept.uid)?.deletionTimestamp).toBeUndefined();
    const told = cluster.events.filter((e) => e.reason === 'PodsSkippedByDrainRule');
    expect(told).toHaveLength(1);
    expect(told[0]!.message).toBe(
      'Leaving default/cache (label cluster.x-k8s.io/drain=skip), logging/shipper (rule keep-logs) running: their drain rule is Skip, so the node goes without them leaving first.',
    );
  });

  it('never evicts a wait-completed pod, waits for it to finish past the batch wait, and completes once it did', async () => {
    const etl = cluster.addPod(
      pod({ name: 'etl', controllerKind: 'StatefulSet', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } }),
    );
    cluster.addPod(pod({ name: 'web' }));
    clock.at(t0 + 40 * 60_000, () => cluster.finishPod(etl.uid));

    const statuses = await world.runChain({ BATCH_WAIT_SECONDS: '600', DRAIN_TIMEOUT_SECONDS: '3600' });

    expect(statuses.at(-1)).toBe('drained');
    expect(evictions().map((e) => e.pod)).toEqual(['default/web']);
    expect(lifecycle.completions).toHaveLength(1);
    expect((lifecycle.completions[0]!.atMs - t0) / 1000).toBe(40 * 60);
    expect(cluster.events.find((e) => e.reason === 'WaitingForBatchPods')?.message).toMatch(
      /default\/etl \(label cluster.x-k8s.io\/drain=wait-completed\) until they finish or the drain deadline .*never evicted/,
    );
  });

  it('evicts by order: the next order only once the pods of the lower ones are gone', async () => {
    cluster.addPod(pod({ name: 'db', labels: { tier: 'db' }, terminationMs: 20_000 }));
    cluster.addPod(pod({ name: 'web', terminationMs: 10_000 }));
    cluster.addPod(
      pod({ name: 'frontdoor', annotations: { 'graceful-node-termination/drain-order': '-5' }, terminationMs: 5_000 }),
    );
    cluster.addPod(pod({ name: 'coredns', namespace: 'kube-system', priorityClassName: 'system-cluster-critical' }));

    const statuses = await world.runChain({
      DRAIN_RULES: JSON.stringify([
        { name: 'db-last', behavior: 'Drain', order: 100, pods: [{ selector: { matchLabels: { tier: 'db' } } }] },
      ]),
    });

    expect(statuses).toEqual(['drained']);
    expect(evictions()).toEqual([
      { pod: 'default/frontdoor', s: 0 },
      { pod: 'default/web', s: 5 },
      { pod: 'default/db', s: 15 },
      { pod: 'kube-system/coredns', s: 35 },
    ]);
  });

  it('evicts DaemonSet pods last when asked, and does not chase the one its controller puts back', async () => {
    cluster.addPod(pod({ name: 'web', terminationMs: 10_000 }));
    const agent = cluster.addPod(pod({ name: 'agent-1', controllerKind: 'DaemonSet', terminationMs: 1_000 }));
    cluster.onEvicted = (p) => {
      if (p.uid === agent.uid)
        clock.after(2_000, () => cluster.addPod(pod({ name: 'agent-2', controllerKind: 'DaemonSet' })));
    };

    const statuses = await world.runChain({ EVICT_DAEMONSET_PODS: 'true' });

    expect(statuses).toEqual(['drained']);
    expect(evictions()).toEqual([
      { pod: 'default/web', s: 0 },
      { pod: 'default/agent-1', s: 10 },
    ]);
  });

  it('leaves DaemonSet pods alone by default', async () => {
    cluster.addPod(pod({ name: 'agent', controllerKind: 'DaemonSet' }));
    cluster.addPod(pod({ name: 'web' }));
    expect(await world.runChain()).toEqual(['drained']);
    expect(evictions().map((e) => e.pod)).toEqual(['default/web']);
  });
});
