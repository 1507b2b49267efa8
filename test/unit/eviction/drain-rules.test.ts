// Drain rules through whole drains: Skip pods stay and hold nothing, Cluster API's
// WaitCompleted pods are never evicted and waited for, orders leave one after the other, and
// DaemonSet pods go last when asked (the one their controller puts back is not chased).
import { beforeEach, describe, expect, it } from 'vitest';
import { handlerWorld, FakeClock, FakeCluster, FakeLifecycleActions, pdbBlocks, pod } from '../../fakes/fake-world.js';
import { instanceId } from '../../fixtures/notifications.js';
import { spotInterruptionWarning } from '../../fixtures/deliveries.js';

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

// From a review of the drain rules (8b82c33; was test/unit/eviction/drain-rules-review.test.ts).
describe('a drain under drain rules: hand-offs, orders under force, DaemonSet pods and Spot', () => {
  let world: ReturnType<typeof handlerWorld>;
  let clock: FakeClock;
  let cluster: FakeCluster;
  let t0: number;

  beforeEach(() => {
    world = handlerWorld(env);
    ({ clock, cluster } = world);
    t0 = clock.now();
    cluster.addNode('node-a', instanceId);
  });

  const evictions = () =>
    cluster.calls.filter((c) => c.op === 'evict').map((c) => ({ pod: c.target, s: (c.atMs - t0) / 1000 }));

  it('does not chase the DaemonSet pod its controller put back after a hand-off either', async () => {
    cluster.addPod(pod({ name: 'web', terminationMs: 10_000 }));
    const agent = cluster.addPod(pod({ name: 'agent-1', controllerKind: 'DaemonSet', terminationMs: 1_000 }));
    // A Cluster API wait-completed pod keeps the drain going across hand-offs.
    const etl = cluster.addPod(
      pod({ name: 'etl', controllerKind: 'StatefulSet', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } }),
    );
    clock.at(t0 + 40 * 60_000, () => cluster.finishPod(etl.uid));
    cluster.onEvicted = (p) => {
      if (p.uid !== agent.uid) return;
      // The DaemonSet controller binds a new pod to the cordoned node at once (it tolerates the cordon).
      clock.after(2_000, () =>
        cluster.addPod(pod({ name: 'agent-2', controllerKind: 'DaemonSet', startedAt: new Date(clock.now()) })),
      );
    };

    const statuses = await world.runChain({
      EVICT_DAEMONSET_PODS: 'true',
      BATCH_WAIT_SECONDS: '600',
      DRAIN_TIMEOUT_SECONDS: '3600',
    });

    expect(statuses.length).toBeGreaterThan(1); // the drain was handed on at least once
    expect(statuses.at(-1)).toBe('drained');
    expect(evictions().map((e) => e.pod)).toEqual(['default/web', 'default/agent-1']);
  });

  // Under the force policy a later order gets its own fair window from when it is reached; the
  // default order (0) is a later one once a rule puts pods before it (order -5), as order 1 is.
  it.each([
    ['0 (default)', undefined],
    ['1', '1'],
  ])('gives order %s its own window when a negative order went first (force policy)', async (_, order) => {
    cluster.addPod(
      pod({
        name: 'frontdoor',
        annotations: { 'graceful-node-termination/drain-order': '-5' },
        terminationGracePeriodSeconds: 250,
        terminationMs: 250_000,
      }),
    );
    const web = cluster.addPod(
      pod({ name: 'web', annotations: order === undefined ? {} : { 'graceful-node-termination/drain-order': order } }),
    );
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));

    await world.runChain({ DEADLINE_POLICY: 'force', DRAIN_TIMEOUT_SECONDS: '300', MIN_EVICTION_WINDOW_SECONDS: '60' });

    const firstAsked = evictions().find((e) => e.pod === 'default/web')!.s;
    expect(firstAsked).toBe(250);
    const forced = cluster.deletions.find((d) => d.pod === 'default/web');
    expect(forced).toBeDefined();
    expect((forced!.atMs - t0) / 1000).toBeGreaterThanOrEqual(firstAsked + 60);
  });

  it('does not hold the instance for an evicted DaemonSet pod no kubelet will stop (EVICT_DAEMONSET_PODS, NotReady node)', async () => {
    cluster.updateNode('node-a', {
      ready: false,
      taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' }],
    });
    cluster.addPod(pod({ name: 'web', terminationMs: 3_600_000 }));
    cluster.addPod(pod({ name: 'agent', controllerKind: 'DaemonSet', terminationMs: 3_600_000 }));

    const statuses = await world.runChain({ EVICT_DAEMONSET_PODS: 'true', DRAIN_TIMEOUT_SECONDS: '900' });

    expect(statuses).toEqual(['drained']);
    expect(evictions().map((e) => e.pod)).toEqual(['default/web', 'default/agent']);
    // As a Deployment pod on the same node: evicted, not waited for (no load-balancer delay here).
    expect(world.lifecycle.completions.map((c) => (c.atMs - t0) / 1000)).toEqual([0]);
  });

  it('does not wait for an evicted DaemonSet pod stuck terminating past its grace period', async () => {
    cluster.addPod(
      pod({ name: 'agent', controllerKind: 'DaemonSet', terminationGracePeriodSeconds: 10, terminationMs: 3_600_000 }),
    );

    const statuses = await world.runChain({
      EVICT_DAEMONSET_PODS: 'true',
      DRAIN_TIMEOUT_SECONDS: '900',
      DEADLINE_POLICY: 'leave',
    });

    expect(statuses).toEqual(['drained']);
    expect(cluster.events.find((e) => e.reason === 'PodsNotWaitedFor')?.message).toMatch(/default\/agent/);
  });

  it.each(['force', 'leave'])(
    'ends the drain at its deadline when only a wait-completed pod is left (%s policy)',
    async (policy) => {
      cluster.addPod(
        pod({ name: 'etl', controllerKind: 'StatefulSet', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } }),
      );

      await world.runChain({
        DEADLINE_POLICY: policy,
        DRAIN_TIMEOUT_SECONDS: '300',
        BATCH_WAIT_SECONDS: '0',
        MIN_EVICTION_WINDOW_SECONDS: '60',
      });

      expect(cluster.events.filter((e) => e.reason === 'DrainTimedOut').map((e) => e.message)).toHaveLength(1);
      expect(world.lifecycle.completions.map((c) => (c.atMs - t0) / 1000)).toEqual([300]);
    },
  );

  it('ends the drain at its deadline under force when a hand-off leaves only a wait-completed pod', async () => {
    cluster.addPod(pod({ name: 'web' }));
    cluster.addPod(
      pod({ name: 'etl', controllerKind: 'StatefulSet', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } }),
    );

    const statuses = await world.runChain({
      DEADLINE_POLICY: 'force',
      DRAIN_TIMEOUT_SECONDS: '3600',
      BATCH_WAIT_SECONDS: '0',
    });

    expect(statuses.length).toBeGreaterThan(1);
    expect(world.lifecycle.completions.map((c) => (c.atMs - t0) / 1000)).toEqual([3600]);
  });

  it('under retain, a Skip pod does not retain the instance and a Skip pod with a refusing budget holds nothing', async () => {
    cluster.addPod(pod({ name: 'web' }));
    const cache = cluster.addPod(pod({ name: 'cache', labels: { 'cluster.x-k8s.io/drain': 'skip' } }));
    cluster.evictionRules.push(pdbBlocks('cache-pdb', (p) => p.uid === cache.uid));

    const statuses = await world.runChain({ DEADLINE_POLICY: 'retain', LOAD_BALANCER_DELAY_SECONDS: '30' });

    expect(statuses).toEqual(['drained']);
    expect(world.lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
    expect(evictions().map((e) => e.pod)).toEqual(['default/web']);
  });

  it('a Spot interruption leaves Skip pods running and never force-deletes them', async () => {
    world.groups.set(instanceId, 'workers');
    world.ec2.spot.set(instanceId, 'marked-for-termination');
    cluster.addPod(pod({ name: 'web' }));
    const cache = cluster.addPod(pod({ name: 'cache', labels: { 'cluster.x-k8s.io/drain': 'skip' } }));
    cluster.evictionRules.push(pdbBlocks('cache-pdb', (p) => p.uid === cache.uid));

    const result = await world.invokeRaw(
      world.handler({ DEADLINE_POLICY: 'force' }),
      spotInterruptionWarning(instanceId, new Date(clock.now()).toISOString()),
    );

    expect(result.records[0]!.status).toBe('drained');
    expect(evictions().map((e) => e.pod)).toEqual(['default/web']);
    expect(cluster.deletions).toEqual([]);
  });
});
