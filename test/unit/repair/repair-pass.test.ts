// Node auto repair in the fake world, through the real router on the scheduled event: exactly
// once across passes, the parallel limit, storm control, confirmation with Auto Scaling, a
// node that recovers, the reboot's steps, NoAction, and the reconciler taking a record back.
import { beforeEach, describe, expect, it } from 'vitest';
import type { NodeCondition } from '../../../lambda/cluster/model.js';
import { repairHeldMessage } from '../../../lambda/cluster/events/log-messages.js';
import { handlerWorld, pod } from '../../fakes/fake-world.js';
import { scheduledEvent } from '../../fixtures/deliveries.js';
import { handOffDeploymentEnv } from '../../fixtures/notifications.js';

const min = 60_000;
const id = (n: number) => `i-0${String(n).padStart(16, '0')}`;

describe('node auto repair pass', () => {
  let world: ReturnType<typeof handlerWorld>;
  let extra: Record<string, string>;
  const pass = () => world.invokeRaw(world.handler(extra), scheduledEvent());
  const conditions = (
    badFor: number | undefined,
    type = 'NetworkingReady',
    reason = 'IPAMDNotReady',
  ): NodeCondition[] => [
    { type: 'Ready', status: 'True', reason: 'KubeletReady', sinceMs: world.clock.now() - 600 * min },
    badFor === undefined
      ? { type, status: 'True', reason: '', sinceMs: world.clock.now() - 600 * min }
      : { type, status: 'False', reason, sinceMs: world.clock.now() - badFor * min },
  ];
  const addNodes = (count: number, bad: Record<number, number>) => {
    for (let n = 1; n <= count; n++) {
      world.groups.set(id(n), 'workers');
      world.cluster.addNode(`node-${n}`, id(n), { conditions: conditions(bad[n]) });
    }
  };
  const reasons = (node: string) => world.cluster.events.filter((e) => e.regarding.name === node).map((e) => e.reason);

  beforeEach(() => {
    world = handlerWorld(handOffDeploymentEnv);
    extra = { REPAIR: 'on' };
  });

  it('replaces the node bad longest past its rule exactly once, while the second waits for the parallel limit', async () => {
    addNodes(3, { 1: 35, 2: 31 });
    expect((await pass()).records).toEqual([{ status: 'reconciled' }]);
    expect(world.autoScaling.unhealthy).toEqual([id(1)]);
    expect(world.cluster.nodes.get('node-1')?.repair).toMatchObject({
      action: 'replace',
      condition: 'NetworkingReady',
      reason: 'IPAMDNotReady',
      instanceId: id(1),
    });
    expect(reasons('node-1')).toEqual(['RepairReplacing']);
    expect(world.cluster.events.find((e) => e.reason === 'RepairReplacing')?.message).toMatch(
      /NetworkingReady False \(IPAMDNotReady\) for 35 min \(rule: 30 min\)/,
    );
    expect(reasons('node-2')).toEqual(['RepairDeferred']);
    expect(world.metrics.at(-1)).toMatchObject({
      dimensions: { Transition: 'repair' },
      values: { RepairsStarted: { value: 1 }, RepairsDeferred: { value: 1 }, NodesUnhealthy: { value: 2 } },
    });

    world.autoScaling.terminating.add(id(1));
    world.clock.advanceTo(world.clock.now() + 5 * min);
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([id(1)]);
    expect(reasons('node-2')).toEqual(['RepairDeferred', 'RepairDeferred']);

    // The instance is gone: the second gets its turn.
    world.groups.delete(id(1));
    world.cluster.nodes.delete('node-1');
    world.autoScaling.terminating.delete(id(1));
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([id(1), id(2)]);
  });

  it('holds everything in a storm (more than 5 nodes, more than 20 % unhealthy): a Warning, the alarmed line, the storm metric', async () => {
    addNodes(6, { 1: 40, 2: 40 });
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([]);
    expect(world.autoScaling.calls).not.toContain('SetInstanceHealth');
    expect(reasons('node-1')).toEqual(['RepairHeld']);
    expect(world.cluster.events.find((e) => e.reason === 'RepairHeld')?.message).toMatch(
      /storm control: 2 of its 6 nodes are unhealthy/,
    );
    expect(world.log.messages('warn')).toContain(repairHeldMessage);
    expect(world.metrics.at(-1)).toMatchObject({
      dimensions: { Transition: 'repair', Outcome: 'judged' },
      values: { RepairStorms: { value: 1 }, RepairsStarted: { value: 0 } },
    });
  });

  it('writes RepairHeld on at most 10 nodes of a storm; the log line names every due node', async () => {
    addNodes(12, Object.fromEntries(Array.from({ length: 12 }, (_, i) => [i + 1, 40 + i])));
    await pass();
    expect(world.cluster.events.filter((e) => e.reason === 'RepairHeld')).toHaveLength(10);
    expect(world.cluster.events.find((e) => e.reason === 'RepairHeld')?.regarding.name).toBe('node-12');
    expect(world.log.lines.find((l) => l.message === repairHeldMessage)?.fields).toMatchObject({
      due: expect.arrayContaining(['node-1', 'node-12']),
    });
  });

  it('holds while Auto Scaling is already replacing an instance of the group it was not asked to', async () => {
    addNodes(3, { 1: 40 });
    world.autoScaling.states.set(id(3), 'Terminating:Wait');
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([]);
    expect(world.cluster.events.find((e) => e.reason === 'RepairHeld')?.message).toMatch(
      /already replacing or terminating 1 instance/,
    );
  });

  it('leaves alone a node that recovered before its rule fired, and one still inside its wait', async () => {
    addNodes(2, { 2: 29 });
    world.cluster.updateNode('node-1', { conditions: conditions(undefined) });
    await pass();
    world.clock.advanceTo(world.clock.now() + 0.5 * min);
    world.cluster.updateNode('node-2', { conditions: conditions(undefined) });
    world.clock.advanceTo(world.clock.now() + 5 * min);
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([]);
    expect(world.cluster.events).toEqual([]);
    expect(world.metrics.at(-1)?.values['NodesUnhealthy']?.value).toBe(0);
  });

  it('acts only on instances Auto Scaling has in service in a served group', async () => {
    addNodes(2, { 1: 40, 2: 40 });
    world.groups.set(id(2), 'someone-elses');
    world.autoScaling.states.set(id(1), 'Standby');
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([]);
    expect(world.cluster.nodes.get('node-1')?.repair).toBeUndefined();
    expect(reasons('node-2')).toEqual([]);
  });

  it('keeps of the node list only the nodes it may act on: the bad ones and those carrying its record', async () => {
    addNodes(10, { 2: 40, 5: 10 });
    const list = world.cluster.listNodeHealth.bind(world.cluster);
    const kept: string[][] = [];
    world.cluster.listNodeHealth = async (selector, pick) => {
      const answer = await list(selector, pick);
      kept.push(answer.picked.map((j) => (j as { node: { name: string } }).node.name));
      return answer;
    };
    await pass();
    // node-2 is due (replaced), node-5 bad inside its wait; the eight healthy ones are judged and let go.
    expect(kept).toEqual([['node-2', 'node-5']]);
    expect(world.autoScaling.unhealthy).toEqual([id(2)]);
    world.clock.advanceTo(world.clock.now() + 20 * min);
    world.cluster.updateNode('node-5', { conditions: conditions(undefined) });
    await pass();
    // node-2 carries the record now (kept to be followed up); node-5 recovered: let go.
    expect(kept[1]).toEqual(['node-2']);
  });

  it('takes its record back when Auto Scaling refuses SetInstanceHealth, so a later pass decides again', async () => {
    addNodes(1, { 1: 40 });
    world.autoScaling.setUnhealthy = async () => {
      throw new Error('ValidationError');
    };
    await pass();
    expect(world.cluster.nodes.get('node-1')?.repair).toBeUndefined();
    expect(world.cluster.nodes.get('node-1')?.labels['graceful-node-termination/owner']).toBeUndefined();
  });

  it('NoAction only says so', async () => {
    extra = {
      REPAIR: JSON.stringify({
        nodeRepairConfigOverrides: [
          {
            nodeMonitoringCondition: 'NetworkingReady',
            nodeUnhealthyReason: 'IPAMDNotReady',
            minRepairWaitTimeMins: 5,
            repairAction: 'NoAction',
          },
        ],
      }),
    };
    addNodes(1, { 1: 6 });
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([]);
    expect(reasons('node-1')).toEqual(['RepairNoAction']);
  });

  it('reboots: cordons and evicts, reboots once the pods are gone, uncordons once healthy', async () => {
    extra = {
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
    addNodes(1, { 1: 6 });
    // Slow to stop: still terminating when the pass's short drain ends.
    world.cluster.addPod(pod({ name: 'web', nodeName: 'node-1', terminationMs: 10 * min }));
    await pass();
    expect(world.cluster.nodes.get('node-1')).toMatchObject({
      unschedulable: true,
      repair: { action: 'reboot', cordoned: true },
    });
    expect(reasons('node-1')).toEqual(['RepairRebooting']);
    world.clock.advanceTo(world.clock.now() + 5 * min);
    await pass();
    expect(world.cluster.calls.filter((c) => c.op === 'evict').map((c) => c.target)).toContain('default/web');
    expect(world.autoScaling.reboots).toEqual([]);
    [...world.cluster.pods.values()].forEach((p) => world.cluster.removePod(p.uid));
    world.clock.advanceTo(world.clock.now() + 5 * min);
    await pass();
    expect(world.autoScaling.reboots).toEqual([id(1)]);
    world.cluster.updateNode('node-1', { conditions: conditions(undefined) });
    world.clock.advanceTo(world.clock.now() + 5 * min);
    await pass();
    expect(world.autoScaling.reboots).toEqual([id(1)]);
    expect(world.cluster.nodes.get('node-1')).toMatchObject({ unschedulable: false, repair: undefined });
    expect(reasons('node-1')).toEqual(['RepairRebooting', 'RepairRebooted', 'RepairRecovered']);
    expect(world.autoScaling.unhealthy).toEqual([]);
  });

  it('the reconciler takes back the record of a replacement Auto Scaling never began; the next pass decides again', async () => {
    addNodes(1, { 1: 40 });
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([id(1)]);
    // Inside the group's health check grace period Auto Scaling ignored it: still Healthy, InService.
    world.autoScaling.health.set(id(1), 'Healthy');
    world.clock.advanceTo(world.clock.now() + 16 * min);
    await pass();
    expect(reasons('node-1')).toEqual(['RepairReplacing', 'RepairMarksRemoved', 'RepairReplacing']);
    expect(world.autoScaling.unhealthy).toEqual([id(1), id(1)]);
  });

  it('the reconciler takes back a reboot that never finished, with its cordon, even with REPAIR turned off', async () => {
    addNodes(1, { 1: 200 });
    const decidedAtMs = world.clock.now() - 3 * 60 * min;
    world.cluster.updateNode('node-1', {
      unschedulable: true,
      labels: { 'graceful-node-termination/owner': 'gnt-a' },
      repair: {
        action: 'reboot',
        instanceId: id(1),
        condition: 'NetworkingReady',
        reason: 'IPAMDNotReady',
        decidedAtMs,
        cordoned: true,
      },
    });
    extra = {};
    await pass();
    expect(world.cluster.nodes.get('node-1')).toMatchObject({ unschedulable: false, repair: undefined });
    expect(world.cluster.nodes.get('node-1')?.labels['graceful-node-termination/owner']).toBeUndefined();
    expect(world.cluster.events.find((e) => e.reason === 'RepairMarksRemoved')?.message).toMatch(
      /and its cordon: the reboot was decided 180 min ago/,
    );
    expect(world.autoScaling.unhealthy).toEqual([]);
  });

  it('costs one node list and one DescribeAutoScalingGroups when every node is healthy', async () => {
    addNodes(4, {});
    world.cluster.calls.length = 0;
    world.autoScaling.calls.length = 0;
    await pass();
    expect(world.cluster.calls.map((c) => c.op)).toEqual(['list-marked', 'list-node-health']);
    expect(world.autoScaling.calls).toEqual(['DescribeAutoScalingGroups', 'DescribeAutoScalingGroups']);
  });
});

// From a review of the reboot under drain rules (330fdfd; was test/unit/repair/reboot-rules-review.test.ts).
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
