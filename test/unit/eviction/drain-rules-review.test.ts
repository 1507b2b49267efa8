// Review of drain rules: cases the first tests left out (a hand-off after the DaemonSet tier,
// a negative order ahead of the default one under the force policy).
import { beforeEach, describe, expect, it } from 'vitest';
import { handlerWorld, pdbBlocks, FakeClock, FakeCluster, pod } from '../../fakes/fake-world.js';
import { instanceId } from '../../fixtures/notifications.js';
import { spotInterruptionWarning } from '../../fixtures/deliveries.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  LOAD_BALANCER_DELAY_SECONDS: '0',
  HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:gnt-topic',
};

describe('drain rules under review', () => {
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
