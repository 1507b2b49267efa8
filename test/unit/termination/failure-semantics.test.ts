// The termination's failure semantics, one case per answer the real world gives: an action
// Auto Scaling does not know, an admission denial of one pod, a notification that waited in
// a queue, a node whose kubelet is gone, a retry that came due during a slow pass, a crash
// between claiming and publishing a hand-off, metrics once per action. Fake world, fake time.
import { beforeEach, describe, expect, it } from 'vitest';
import {
  handlerWorld,
  pdbBlocks,
  pod,
  type FakeClock,
  type FakeCluster,
  type FakeLifecycleActions,
  type MemoryLog,
} from '../../fakes/fake-world.js';
import { actionIdOfToken } from '../../../lambda/cluster/marks/action-id.js';
import { instanceId, lifecycleMessage } from '../../fixtures/notifications.js';

const token = '71cd9f4c-aaaa-bbbb-cccc-ddddeeeeffff';
const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate,workers-launch',
  HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:lifecycle',
};
const admissionDenied = {
  kind: 'blocked' as const,
  reason: 'admission-denied' as const,
  message: 'admission webhook "protect.example.com" denied the request: payments pods are protected',
  retryAfterSeconds: undefined,
  budgetName: undefined,
};

describe('failure semantics of a termination', () => {
  let world: ReturnType<typeof handlerWorld>;
  let clock: FakeClock;
  let cluster: FakeCluster;
  let lifecycle: FakeLifecycleActions;
  let log: MemoryLog;
  let t0: number;

  beforeEach(() => {
    world = handlerWorld(env);
    ({ clock, cluster, lifecycle, log } = world);
    t0 = clock.now();
    cluster.addNode('node-a', instanceId);
  });

  it('verifies before the first write: a made-up token touches nothing and completes nothing', async () => {
    cluster.addPod(pod({ name: 'web' }));
    // The fake knows every token until completed; make this one unknown as Auto Scaling would.
    lifecycle.expire('made-up');
    const completionsBefore = lifecycle.completions.length;

    const statuses = await world.runChain({}, lifecycleMessage({ LifecycleActionToken: 'made-up' }));

    expect(statuses).toEqual(['no-active-action']);
    expect(cluster.calls).toEqual([]);
    expect(cluster.events).toEqual([]);
    expect(cluster.nodes.get('node-a')).toMatchObject({ unschedulable: false, labels: {} });
    expect(lifecycle.completions).toHaveLength(completionsBefore);
    // The token never reaches the log: the action is named by its hash.
    expect(log.lines.find((l) => l.level === 'warn')?.fields).toMatchObject({
      instanceId,
      lifecycleAction: actionIdOfToken('made-up'),
    });
    expect(JSON.stringify(log.lines)).not.toContain('made-up');
    expect(world.metrics).toEqual([]);
  });

  it('an admission denial blocks only its pod: the rest drains, the load-balancer wait happens, the policy applies to it', async () => {
    const payments = cluster.addPod(pod({ name: 'payments' }));
    cluster.addPod(pod({ name: 'web-1' }));
    cluster.addPod(pod({ name: 'web-2' }));
    cluster.evictionRules.push((p) => (p.uid === payments.uid ? admissionDenied : 'accept'));

    const statuses = await world.runChain({ DRAIN_TIMEOUT_SECONDS: '300', DEADLINE_POLICY: 'leave' });

    expect(statuses).toEqual(['timed-out']);
    expect(cluster.podsOn('node-a').map((p) => p.name)).toEqual(['payments']);
    // Retried with backoff until the deadline, not given up on the first answer.
    expect(cluster.calls.filter((c) => c.op === 'evict' && c.target === 'default/payments').length).toBeGreaterThan(10);
    const denied = cluster.events.filter((e) => e.reason === 'EvictionBlocked');
    expect(denied.map((e) => e.regarding.kind)).toEqual(['Pod', 'Node']);
    expect(denied[1]!.message).toContain('payments pods are protected');
    // The deadline (300 s), then the load-balancer wait (60 s): completed CONTINUE once.
    expect(lifecycle.completions.map((c) => [(c.atMs - t0) / 1000, c.result])).toEqual([[360, 'CONTINUE']]);
    expect(log.messages('error')).not.toContain(
      'the cluster refused the drainer; check its access entry and ClusterRole',
    );
  });

  it('gives a notification that waited 16 minutes in the queue a fair drain: evictions first, force only after the window', async () => {
    const blocked = cluster.addPod(pod({ name: 'guarded' }));
    cluster.addPod(pod({ name: 'web' }));
    cluster.evictionRules.push(pdbBlocks('guarded-pdb', (p) => p.uid === blocked.uid));
    // Auto Scaling sent it 16 minutes ago; DRAIN_TIMEOUT_SECONDS (900) has already passed.
    const sent = new Date(t0 - 16 * 60_000).toISOString();

    const statuses = await world.runChain({ DEADLINE_POLICY: 'force' }, lifecycleMessage({ Time: sent }));

    expect(statuses).toEqual(['timed-out']);
    const evictions = cluster.calls.filter((c) => c.op === 'evict');
    expect(evictions[0]).toMatchObject({ atMs: t0 });
    expect(cluster.calls.find((c) => c.target === 'default/web' && c.op === 'evict')).toBeDefined();
    // Only the pod its budget kept there is deleted, and only when the 60 s window has run
    // (its 30 s grace then ends by the deadline, window end + 30 s).
    expect(cluster.deletions).toEqual([{ pod: 'default/guarded', gracePeriodSeconds: 30, atMs: t0 + 60_000 }]);
    expect(cluster.nodes.get('node-a')?.drain).toMatchObject({
      source: { kind: 'lifecycle-action', actionId: actionIdOfToken(token) },
      notifiedAtMs: t0 - 16 * 60_000,
      startedAtMs: t0,
      set: ['exclude-from-load-balancers', 'cordon'],
    });
  });

  it('keeps the window from when the drain first saw the node across hand-offs', async () => {
    const blocked = cluster.addPod(pod({ name: 'guarded' }));
    cluster.evictionRules.push(pdbBlocks('guarded-pdb', (p) => p.uid === blocked.uid));
    const sent = new Date(t0 - 16 * 60_000).toISOString();
    const first = world.handler({ DEADLINE_POLICY: 'force', MIN_EVICTION_WINDOW_SECONDS: '600' });

    // Each invocation may work 200 s: the window (600 s) spans several of them.
    const statuses = [(await world.invoke(first, lifecycleMessage({ Time: sent }), 220_000)).records[0]!.status];
    while (statuses.at(-1) === 'handed-off')
      statuses.push((await world.invoke(first, world.handOffs.sent.at(-1)!, 220_000)).records[0]!.status);

    expect(statuses.slice(0, -1).every((s) => s === 'handed-off')).toBe(true);
    expect(cluster.deletions.map((d) => (d.atMs - t0) / 1000)).toEqual([600]);
  });

  it('does not hold the instance for pods no kubelet will stop: a NotReady node is evicted (budgets hold) but not waited for', async () => {
    cluster.updateNode('node-a', {
      ready: false,
      taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' }],
    });
    cluster.addPod(pod({ name: 'web-1', terminationMs: 3_600_000 }));
    cluster.addPod(pod({ name: 'web-2', terminationMs: 3_600_000 }));

    const statuses = await world.runChain({ DRAIN_TIMEOUT_SECONDS: '900' });

    expect(statuses).toEqual(['drained']);
    expect(cluster.calls.filter((c) => c.op === 'evict')).toHaveLength(2);
    // Evicted at once, not waited for, then only the load-balancer wait.
    expect(lifecycle.completions.map((c) => (c.atMs - t0) / 1000)).toEqual([60]);
    expect(cluster.events.find((e) => e.reason === 'PodsNotWaitedFor')?.message).toMatch(
      /default\/web-1, default\/web-2: the node is NotReady or unreachable/,
    );
  });

  it('never skips a retry that came due while the pass was busy (slow answers)', async () => {
    const quick = cluster.addPod(pod({ name: 'quick' }));
    const slow = cluster.addPod(pod({ name: 'slow' }));
    let quickRefused = false;
    cluster.evictionRules.push((p) => {
      if (p.uid === quick.uid && !quickRefused) {
        quickRefused = true;
        return pdbBlocks('quick-pdb', () => true)(p);
      }
      // The other answer takes 2 s and asks us to come back in a minute.
      if (p.uid === slow.uid)
        return {
          kind: 'blocked',
          reason: 'throttled',
          message: 'slow down',
          retryAfterSeconds: 60,
          budgetName: undefined,
        };
      return 'accept';
    });
    const evict = cluster.evictPod.bind(cluster);
    cluster.evictPod = async (p) => {
      if (p.name === 'slow') {
        // Answered after quick's refusal was handled, 2 s later.
        await new Promise((resolve) => setImmediate(resolve));
        await clock.sleep(2_000);
      }
      return evict(p);
    };

    await world.runChain({ DEADLINE_POLICY: 'leave', DRAIN_TIMEOUT_SECONDS: '300' });

    // quick's retry was due at 0.5 s; the pass ended at 2 s: it is retried right then, not at
    // slow's 62 s or the 120 s long-block report.
    const quickEvictions = cluster.calls.filter((c) => c.target === 'default/quick').map((c) => (c.atMs - t0) / 1000);
    expect(quickEvictions).toEqual([0, 2]);
  });

  it('a retry of an invocation that crashed between claiming and publishing recognises its claim and carries on', async () => {
    const web = cluster.addPod(pod({ name: 'web' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    const handle = world.handler({ DRAIN_TIMEOUT_SECONDS: '3600', DEADLINE_POLICY: 'leave' });
    // The first attempt (request-A) drained for 200 s, claimed hand-off 1 and died.
    let sends = 0;
    const send = world.handOffs.send.bind(world.handOffs);
    world.handOffs.send = async (m) => {
      if (sends++ === 0) throw new Error('Task timed out after 900.00 seconds');
      return send(m);
    };
    await expect(world.invoke(handle, lifecycleMessage(), 220_000, 'request-A')).rejects.toThrow(/timed out/);
    expect(cluster.nodes.get('node-a')?.handOffClaim).toBe(`${actionIdOfToken(token)}/1/request-A`);

    // Lambda retries it with the same request id.
    const retried = await world.invoke(handle, lifecycleMessage(), 220_000, 'request-A');

    expect(retried.records[0]!.status).toBe('handed-off');
    expect(world.handOffs.sent.map((m) => m['GracefulNodeTerminationHandOff'])).toEqual([
      { count: 1, claim: `${actionIdOfToken(token)}/1/request-A` },
    ]);
    // A different delivery of the original notification (another request id) stands down.
    const duplicate = await world.invoke(handle, lifecycleMessage(), 220_000, 'request-B');
    expect(duplicate.records[0]!.status).toBe('superseded');
    // And the published hand-off is carried on by its delivery.
    const resumed = await world.invoke(handle, world.handOffs.sent[0]!, 220_000, 'request-C');
    expect(resumed.records[0]!.status).toBe('handed-off');
  });

  it('emits the termination metrics once per lifecycle action, not once per invocation', async () => {
    const web = cluster.addPod(pod({ name: 'web' }));
    let open = false;
    cluster.evictionRules.push((p) => (p.uid === web.uid && !open ? pdbBlocks('web-pdb', () => true)(p) : 'accept'));
    clock.at(t0 + 40 * 60_000, () => (open = true));

    const statuses = await world.runChain({ DRAIN_TIMEOUT_SECONDS: '7200' });

    expect(statuses).toEqual(['handed-off', 'handed-off', 'drained']);
    const terminations = world.metrics.filter((m) => m.values['Terminations']);
    expect(terminations).toHaveLength(1);
    expect(terminations[0]).toMatchObject({
      dimensions: { Transition: 'terminating', Outcome: 'drained' },
      values: { PodsEvicted: { value: 1 } },
    });
  });
});
