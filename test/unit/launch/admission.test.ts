// The launch hook: admit only a node that joined healthy; abandon one that never does;
// never block scale-out when the cluster cannot be asked.
import { beforeEach, describe, expect, it } from 'vitest';
import { TransientError } from '../../../lambda/shared/errors.js';
import type { ClusterGateway } from '../../../lambda/cluster/ports/cluster-gateway.js';
import { launchAbandonedMessage, launchUncheckedMessage } from '../../../lambda/cluster/events/log-messages.js';
import {
  handlerWorld,
  type FakeClock,
  type FakeCluster,
  type FakeLifecycleActions,
  type MemoryLog,
} from '../../fakes/fake-world.js';
import { instanceId, lifecycleMessage, snsEvent } from '../../fixtures/notifications.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate,workers-launch',
  LAUNCH_TIMEOUT_SECONDS: '300',
};
const launch = () =>
  snsEvent(
    lifecycleMessage({
      LifecycleTransition: 'autoscaling:EC2_INSTANCE_LAUNCHING',
      LifecycleHookName: 'workers-launch',
    }),
  );
const context = (remainingMs = 900_000) => ({ getRemainingTimeInMillis: () => remainingMs });

describe('launch admission', () => {
  let clock: FakeClock;
  let cluster: FakeCluster;
  let lifecycle: FakeLifecycleActions;
  let log: MemoryLog;
  let world: ReturnType<typeof handlerWorld>;
  let connect: (() => Promise<ClusterGateway>) | undefined;

  beforeEach(() => {
    world = handlerWorld(env);
    ({ clock, cluster, lifecycle, log } = world);
    connect = undefined;
  });
  const handler = () => world.handler({}, connect);
  const startMs = () => Date.parse('2026-11-22T10:00:00.000Z');

  it('admits at once a node that is already Ready', async () => {
    cluster.addNode('new-node', instanceId);
    const result = await handler()(launch(), context());
    expect(result.records).toEqual([{ status: 'launch-admitted', instanceId }]);
    expect(lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
    expect(cluster.reasons()).toEqual(['Node/LaunchAdmitted']);
  });

  it('waits for the node to register, become Ready and lose its startup taints', async () => {
    clock.after(20_000, () =>
      cluster.addNode('new-node', instanceId, {
        ready: false,
        taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }],
      }),
    );
    clock.after(45_000, () => cluster.updateNode('new-node', { ready: true }));
    clock.after(70_000, () =>
      cluster.updateNode('new-node', {
        taints: [{ key: 'node.cloudprovider.kubernetes.io/uninitialized', effect: 'NoSchedule' }],
      }),
    );
    clock.after(90_000, () => cluster.updateNode('new-node', { taints: [{ key: 'dedicated', effect: 'NoSchedule' }] }));

    const result = await handler()(launch(), context());

    expect(result.records).toEqual([{ status: 'launch-admitted', instanceId }]);
    // Admitted only once every startup taint was gone (an ordinary taint does not matter).
    expect(lifecycle.completions[0]!.atMs - startMs()).toBeGreaterThanOrEqual(90_000);
    expect(lifecycle.completions[0]!.atMs - startMs()).toBeLessThanOrEqual(95_000);
  });

  it('at the deadline looks once more beyond the EC2 name: a Ready node named otherwise is admitted (soak seed 1)', async () => {
    // The node is there and Ready, but the watch (under the EC2 name) never shows it; only a last look finds it.
    cluster.addNode('soak-b-node-9', instanceId);
    let lastLooks = 0;
    const watchNodeOf = async (id: string) => {
      const inner = await cluster.watchNodeOf(id);
      let found = false;
      return {
        current: () => (found ? inner.current() : undefined),
        changed: (ms: number) => inner.changed(ms),
        lastLook: async () => {
          lastLooks++;
          found = true;
        },
        close: () => inner.close(),
      };
    };
    connect = async () =>
      new Proxy(cluster, { get: (t, p, r) => (p === 'watchNodeOf' ? watchNodeOf : Reflect.get(t, p, r)) });
    const result = await handler()(launch(), context());
    expect(result.records).toEqual([{ status: 'launch-admitted', instanceId }]);
    expect(lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
    expect(lastLooks).toBe(1);
    expect(lifecycle.completions[0]!.atMs - startMs()).toBeGreaterThanOrEqual(300_000);
  });

  it('abandons a node that never becomes Ready, with a Warning Event and an error log', async () => {
    cluster.addNode('new-node', instanceId, { ready: false });
    const result = await handler()(launch(), context());
    expect(result.records).toEqual([{ status: 'launch-abandoned', instanceId }]);
    expect(lifecycle.completions.map((c) => [c.result, c.atMs - startMs()])).toEqual([['ABANDON', 300_000]]);
    expect(cluster.events.find((e) => e.reason === 'LaunchAbandoned')?.message).toMatch(/node new-node is not Ready/);
    expect(log.lines.find((l) => l.level === 'error')?.fields['reason']).toBe('node new-node is not Ready');
  });

  it('abandons when no node ever registers', async () => {
    const result = await handler()(launch(), context());
    expect(result.records).toEqual([{ status: 'launch-abandoned', instanceId }]);
    expect(log.lines.find((l) => l.level === 'error')?.fields['reason']).toMatch(/no node with this instance/);
  });

  it('admits unchecked, with the alarm log line, when the cluster cannot be reached at all', async () => {
    connect = async () => {
      throw new TransientError('eks:DescribeCluster prod failed: connect ETIMEDOUT');
    };
    const result = await handler()(launch(), context());
    expect(result.records).toEqual([{ status: 'launch-admitted-unchecked', instanceId }]);
    expect(lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
    expect(log.lines.some((l) => l.level === 'error' && l.message === launchUncheckedMessage)).toBe(true);
  });

  it('admits unchecked when every request fails until the deadline, never ABANDON on our own failure', async () => {
    cluster.findNodeByInstanceId = async () => {
      throw new TransientError('list nodes: socket hang up');
    };
    const result = await handler()(launch(), context());
    expect(result.records).toEqual([{ status: 'launch-admitted-unchecked', instanceId }]);
    expect(lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
  });

  it('admits unchecked when our requests start failing after a first answer (APF 429): no ABANDON without evidence', async () => {
    const find = cluster.findNodeByInstanceId.bind(cluster);
    let asked = 0;
    cluster.findNodeByInstanceId = async (id) => {
      if (asked++ === 0) return find(id); // not registered yet: a real answer
      throw new TransientError('list nodes failed: HTTP 429: Too many requests, please try again later.');
    };
    const result = await handler()(launch(), context());
    expect(result.records).toEqual([{ status: 'launch-admitted-unchecked', instanceId }]);
    expect(lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
    expect(log.lines.some((l) => l.level === 'error' && l.message === launchUncheckedMessage)).toBe(true);
    expect(log.messages('error')).not.toContain(launchAbandonedMessage);
  });

  it('still abandons when requests failed for a while but the API answered again before the timeout', async () => {
    const find = cluster.findNodeByInstanceId.bind(cluster);
    cluster.findNodeByInstanceId = async (id) => {
      if (clock.now() - startMs() < 120_000) throw new TransientError('list nodes failed: HTTP 503');
      return find(id);
    };
    const result = await handler()(launch(), context());
    expect(result.records).toEqual([{ status: 'launch-abandoned', instanceId }]);
  });

  it('raises LaunchesAbandoned only when the ABANDON took effect (the action may be over already)', async () => {
    cluster.addNode('new-node', instanceId, { ready: false });
    // The hook timed out (or somebody completed it) just before our timeout.
    const complete = lifecycle.complete.bind(lifecycle);
    lifecycle.complete = async (action, result) =>
      result === 'ABANDON' ? 'already-completed' : complete(action, result);
    const result = await handler()(launch(), context());
    expect(result.records).toEqual([{ status: 'launch-already-over', instanceId }]);
    expect(log.messages('error')).not.toContain(launchAbandonedMessage);
    expect(cluster.events.filter((e) => e.reason === 'LaunchAbandoned')).toEqual([]);
    expect(world.metrics.map((m) => m.dimensions['Outcome'])).toEqual(['already-over']);
  });

  it('never holds the launch past its invocation', async () => {
    cluster.addNode('new-node', instanceId, { ready: false });
    const result = await handler()(launch(), context(120_000));
    expect(result.records).toEqual([{ status: 'launch-admitted-unchecked', instanceId }]);
    expect(lifecycle.completions[0]!.atMs - startMs()).toBeLessThanOrEqual(120_000);
  });
});
