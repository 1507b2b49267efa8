// MODE=observe (issue 28): verified as usual, what would be done told as Events and a log line,
// nothing else written, the lifecycle action completed CONTINUE at once.
import { describe, expect, it } from 'vitest';
import { handlerWorld, pod } from '../../fakes/fake-world.js';
import { instanceId, lifecycleMessage } from '../../fixtures/notifications.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate,workers-launch',
  MODE: 'observe',
};

describe('observe mode', () => {
  it('a terminate notification: says which pods it would evict in which order and what would block them, writes nothing else, completes CONTINUE once', async () => {
    const world = handlerWorld(env);
    const { cluster } = world;
    cluster.addNode('node-a', instanceId);
    cluster.addNode('node-b', 'i-0bbbbbbbbbbbbbbbb');
    world.groups.set(instanceId, 'workers');
    world.groups.set('i-0bbbbbbbbbbbbbbbb', 'workers');
    world.terminating.add(instanceId);
    world.terminating.add('i-0bbbbbbbbbbbbbbbb');
    cluster.addPod(pod({ name: 'web-1', nodeName: 'node-a' }));
    cluster.addPod(pod({ name: 'db-0', nodeName: 'node-a' }));
    cluster.addPod(pod({ name: 'report', nodeName: 'node-a', controllerKind: 'Job' }));
    cluster.findings = [
      {
        node: 'node-a',
        pod: 'default/db-0',
        kind: 'budget-allows-none',
        severity: 'blocker',
        budget: 'db',
        why: 'budget db allows no disruption (1 healthy, 1 required)',
      },
    ];

    const result = await world.invoke(world.handler(), lifecycleMessage());

    expect(result.records[0]!.status).toBe('observed');
    expect(world.lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
    const writes = cluster.calls.filter((c) =>
      ['mark', 'unmark', 'evict', 'delete', 'claim-hand-off', 'mark-outdated'].includes(c.op),
    );
    expect(writes).toEqual([]);
    expect(cluster.nodes.get('node-b')).toMatchObject({ unschedulable: false });
    const node = cluster.events.find((e) => e.reason === 'TerminationObserved')!;
    expect(node.regarding).toMatchObject({ kind: 'Node', name: 'node-a' });
    expect(node.message).toContain('evict, in this order: default/web-1, default/db-0');
    expect(node.message).toContain('wait up to 3600 s for default/report to finish');
    expect(node.message).toContain('default/db-0 by PodDisruptionBudget db');
    expect(node.message).toContain('other leaving instance(s) (i-0bbbbbbbbbbbbbbbb)');
    const blocked = cluster.events.find((e) => e.reason === 'EvictionWouldBeBlocked')!;
    expect(blocked).toMatchObject({ type: 'Warning', regarding: { kind: 'Pod', name: 'db-0' } });
    expect(world.metrics.map((m) => m.dimensions)).toContainEqual({ Transition: 'terminating', Outcome: 'observed' });
  });

  it('says what the drain rules would do: the order, what it would wait for and what it would leave running', async () => {
    const world = handlerWorld({
      ...env,
      DRAIN_RULES: JSON.stringify([
        { name: 'db-last', behavior: 'Drain', order: 100, pods: [{ selector: { matchLabels: { tier: 'db' } } }] },
      ]),
    });
    const { cluster } = world;
    cluster.addNode('node-a', instanceId);
    world.groups.set(instanceId, 'workers');
    world.terminating.add(instanceId);
    cluster.addPod(pod({ name: 'db-0', labels: { tier: 'db' } }));
    cluster.addPod(pod({ name: 'web-1' }));
    cluster.addPod(pod({ name: 'cache', labels: { 'cluster.x-k8s.io/drain': 'skip' } }));
    cluster.addPod(pod({ name: 'export', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } }));

    await world.invoke(world.handler(), lifecycleMessage());

    const message = cluster.events.find((e) => e.reason === 'TerminationObserved')!.message;
    expect(message).toContain('evict, in this order: default/web-1, default/db-0');
    expect(message).toContain(
      'never evict default/export (WaitCompleted): wait for them to finish until the drain deadline',
    );
    expect(message).toContain('leave default/cache running (drain rule Skip)');
  });

  it('a notification Auto Scaling does not know is refused as in enforce mode: no Event, no completion', async () => {
    const world = handlerWorld(env);
    world.cluster.addNode('node-a', instanceId);
    world.lifecycle.expire('5b1d0f3e-aaaa-4aaa-8aaa-aaaaaaaaaaaa');
    const result = await world.invoke(
      world.handler(),
      lifecycleMessage({ LifecycleActionToken: '5b1d0f3e-aaaa-4aaa-8aaa-aaaaaaaaaaaa' }),
    );
    expect(result.records[0]!.status).toBe('no-active-action');
    expect(world.cluster.events).toEqual([]);
  });

  it('a launch completes CONTINUE at once, without waiting for the node', async () => {
    const world = handlerWorld(env);
    const result = await world.invoke(
      world.handler(),
      lifecycleMessage({
        LifecycleTransition: 'autoscaling:EC2_INSTANCE_LAUNCHING',
        LifecycleHookName: 'workers-launch',
      }),
    );
    expect(result.records[0]!.status).toBe('observed');
    expect(world.lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
  });

  it('a scheduled reconcile pass changes nothing', async () => {
    const world = handlerWorld(env);
    const result = await world.invoke(world.handler(), {
      version: '0',
      id: 'x',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '1',
      time: '2026-11-22T10:00:00Z',
      region: 'eu-west-1',
      resources: ['arn:rule'],
      detail: {},
    });
    expect(result.records[0]!.status).toBe('observed');
    expect(world.cluster.calls.filter((c) => c.op !== 'list-marked')).toEqual([]);
  });
});

// From a review of observe mode under drain rules (9b5059b; was test/unit/termination/observe-rules-review.test.ts).
describe('observe mode under drain rules', () => {
  const env = {
    CLUSTER_NAME: 'prod',
    AUTO_SCALING_GROUP_NAMES: 'workers',
    LIFECYCLE_HOOK_NAMES: 'workers-terminate',
    MODE: 'observe',
    BATCH_WAIT_SECONDS: '600',
  };

  it('does not say a Cluster API wait-completed pod is waited for only BATCH_WAIT_SECONDS', async () => {
    const world = handlerWorld(env);
    world.cluster.addNode('node-a', instanceId);
    world.groups.set(instanceId, 'workers');
    world.cluster.addPod(
      pod({ name: 'etl', controllerKind: 'StatefulSet', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } }),
    );
    world.cluster.addPod(pod({ name: 'report', controllerKind: 'Job' }));

    await world.invoke(world.handler(), lifecycleMessage());

    const told = world.cluster.events.find((e) => e.reason === 'TerminationObserved')!.message;
    expect(told).toContain('wait up to 600 s for default/report to finish');
    expect(told).not.toMatch(/wait up to 600 s for [^;]*default\/etl/);
    expect(told).toMatch(/default\/etl[^;]*deadline/);
  });

  it('does not report a budget of a pod the rules leave running as holding the drain up', async () => {
    const world = handlerWorld(env);
    world.cluster.addNode('node-a', instanceId);
    world.groups.set(instanceId, 'workers');
    world.cluster.addPod(pod({ name: 'cache', labels: { 'cluster.x-k8s.io/drain': 'skip' } }));
    world.cluster.addPod(pod({ name: 'web' }));
    world.cluster.findings = [
      {
        node: 'node-a',
        pod: 'default/cache',
        kind: 'budget-allows-none',
        severity: 'blocker',
        budget: 'cache',
        why: 'budget cache allows no disruption (1 healthy, 1 required)',
      },
    ];

    await world.invoke(world.handler(), lifecycleMessage());

    const told = world.cluster.events.find((e) => e.reason === 'TerminationObserved')!.message;
    expect(told).toContain('leave default/cache running');
    expect(told).not.toContain('held up now');
    const line = world.log.lines.find((l) => l.message === 'observe mode: what the termination would do')!;
    expect(line.fields).toMatchObject({ blockedPods: 0, blocked: [] });
  });
});
