// Review of observe mode under drain rules: it must say what the drain would do with each pod,
// as the drain does it (a WaitCompleted pod is never evicted; a skipped pod's budget holds nothing).
import { describe, expect, it } from 'vitest';
import { handlerWorld, pod } from '../../fakes/fake-world.js';
import { instanceId, lifecycleMessage } from '../../fixtures/notifications.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  MODE: 'observe',
  BATCH_WAIT_SECONDS: '600',
};

describe('observe mode under drain rules', () => {
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
