// Review: the reboot repair's drain keeps the drain rules (a Skip pod is left running and does
// not hold the reboot; a Cluster API wait-completed pod is never evicted).
import { describe, expect, it } from 'vitest';
import type { NodeCondition } from '../../../lambda/cluster/model.js';
import { handlerWorld, pod } from '../../fakes/fake-world.js';
import { scheduledEvent } from '../../fixtures/deliveries.js';
import { handOffDeploymentEnv } from '../../fixtures/notifications.js';

const min = 60_000;
const instance = 'i-00000000000000001';

describe('the reboot repair under drain rules', () => {
  it('leaves a Skip pod running and does not wait for it; never evicts a wait-completed pod', async () => {
    const world = handlerWorld(handOffDeploymentEnv);
    const extra = {
      REPAIR: JSON.stringify({
        nodeRepairConfigOverrides: [
          {
            nodeMonitoringCondition: 'NetworkingReady',
            nodeUnhealthyReason: 'IPAMDNotReady',
            minRepairWaitTimeMins: 5,
            repairAction: 'Reboot',
          },
        ],
      }),
    };
    const pass = () => world.invokeRaw(world.handler(extra), scheduledEvent());
    const bad: NodeCondition[] = [
      { type: 'Ready', status: 'True', reason: 'KubeletReady', sinceMs: world.clock.now() - 600 * min },
      { type: 'NetworkingReady', status: 'False', reason: 'IPAMDNotReady', sinceMs: world.clock.now() - 6 * min },
    ];
    world.groups.set(instance, 'workers');
    world.cluster.addNode('node-1', instance, { conditions: bad });
    world.cluster.addPod(pod({ name: 'web', nodeName: 'node-1' }));
    world.cluster.addPod(pod({ name: 'cache', nodeName: 'node-1', labels: { 'cluster.x-k8s.io/drain': 'skip' } }));
    const etl = world.cluster.addPod(
      pod({
        name: 'etl',
        nodeName: 'node-1',
        controllerKind: 'StatefulSet',
        labels: { 'cluster.x-k8s.io/drain': 'wait-completed' },
      }),
    );

    await pass(); // decides and cordons
    world.clock.advanceTo(world.clock.now() + 5 * min);
    await pass(); // evicts
    world.clock.advanceTo(world.clock.now() + 5 * min);
    world.cluster.finishPod(etl.uid);
    await pass(); // web is gone, etl finished: reboots

    expect(world.cluster.calls.filter((c) => c.op === 'evict').map((c) => c.target)).toEqual(['default/web']);
    expect(world.autoScaling.reboots).toEqual([instance]);
  });

  it('drains through the one drain: a critical pod is evicted only once the others are gone, then the node reboots', async () => {
    const world = handlerWorld(handOffDeploymentEnv);
    const extra = {
      REPAIR: JSON.stringify({
        nodeRepairConfigOverrides: [
          {
            nodeMonitoringCondition: 'NetworkingReady',
            nodeUnhealthyReason: 'IPAMDNotReady',
            minRepairWaitTimeMins: 5,
            repairAction: 'Reboot',
          },
        ],
      }),
    };
    const pass = () => world.invokeRaw(world.handler(extra), scheduledEvent());
    world.groups.set(instance, 'workers');
    world.cluster.addNode('node-1', instance, {
      conditions: [
        { type: 'Ready', status: 'True', reason: 'KubeletReady', sinceMs: world.clock.now() - 600 * min },
        { type: 'NetworkingReady', status: 'False', reason: 'IPAMDNotReady', sinceMs: world.clock.now() - 6 * min },
      ],
    });
    // The web pod takes a minute to stop; coredns must wait for it, as in any drain of ours.
    world.cluster.addPod(pod({ name: 'web', nodeName: 'node-1', terminationMs: min }));
    world.cluster.addPod(
      pod({
        name: 'coredns',
        namespace: 'kube-system',
        nodeName: 'node-1',
        priorityClassName: 'system-cluster-critical',
      }),
    );

    await pass(); // decides and cordons
    world.clock.advanceTo(world.clock.now() + 5 * min);
    await pass(); // evicts web only: coredns's tier comes after
    expect(world.cluster.calls.filter((c) => c.op === 'evict').map((c) => c.target)).toEqual(['default/web']);
    expect(world.autoScaling.reboots).toEqual([]);
    world.clock.advanceTo(world.clock.now() + 5 * min);
    await pass(); // web is gone: coredns is evicted, the node is empty, EC2 reboots it
    expect(world.cluster.calls.filter((c) => c.op === 'evict').map((c) => c.target)).toEqual([
      'default/web',
      'kube-system/coredns',
    ]);
    expect(world.autoScaling.reboots).toEqual([instance]);
  });
});
