// Node auto repair where AWS refuses, a schedule is delivered twice, or a drain outlives the reconciler's patience
// (issue 38): each decision is made from what Auto Scaling and the cluster say now. AWS behaviour is stubbed as
// documented: a suspended ReplaceUnhealthy or Terminate leaves an instance marked Unhealthy in service (and replaces
// it when the process resumes), a suspended Launch terminates it without a replacement
// (https://docs.aws.amazon.com/autoscaling/ec2/userguide/understand-how-suspending-processes-affects-other-processes.html);
// SetInstanceHealth Healthy takes a mark back
// (https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_SetInstanceHealth.html); EventBridge delivers a
// scheduled event at least once (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html).
import { beforeEach, describe, expect, it } from 'vitest';
import type { NodeCondition } from '../../../lambda/cluster/model.js';
import { repairSuspendedMessage } from '../../../lambda/cluster/events/log-messages.js';
import { handlerWorld, pdbBlocks, pod } from '../../fakes/fake-world.js';
import { scheduledEvent } from '../../fixtures/deliveries.js';
import { handOffDeploymentEnv } from '../../fixtures/notifications.js';

const min = 60_000;
const id = (n: number) => `i-0${String(n).padStart(16, '0')}`;
const rebootRule = JSON.stringify({
  nodeRepairConfigOverrides: [
    {
      nodeMonitoringCondition: 'NetworkingReady',
      nodeUnhealthyReason: 'IPAMDNotReady',
      minRepairWaitTimeMins: 5,
      repairAction: 'Reboot',
    },
  ],
});

describe('node auto repair on its failure paths', () => {
  let world: ReturnType<typeof handlerWorld>;
  let extra: Record<string, string>;
  const pass = () => world.invokeRaw(world.handler(extra), scheduledEvent());
  const conditions = (badFor: number | undefined): NodeCondition[] => [
    { type: 'Ready', status: 'True', reason: 'KubeletReady', sinceMs: world.clock.now() - 600 * min },
    badFor === undefined
      ? { type: 'NetworkingReady', status: 'True', reason: '', sinceMs: world.clock.now() - 600 * min }
      : {
          type: 'NetworkingReady',
          status: 'False',
          reason: 'IPAMDNotReady',
          sinceMs: world.clock.now() - badFor * min,
        },
  ];
  const addNodes = (count: number, bad: Record<number, number>) => {
    for (let n = 1; n <= count; n++) {
      world.groups.set(id(n), 'workers');
      world.cluster.addNode(`node-${n}`, id(n), { conditions: conditions(bad[n]) });
    }
  };
  const events = (node: string) => world.cluster.events.filter((e) => e.regarding.name === node);
  const later = (minutes: number) => world.clock.advanceTo(world.clock.now() + minutes * min);

  beforeEach(() => {
    world = handlerWorld(handOffDeploymentEnv);
    extra = { REPAIR: 'on' };
  });

  it('decides no replacement while ReplaceUnhealthy is suspended on the group, says why, and repairs once it resumes', async () => {
    world.autoScaling.suspended.set('workers', ['ReplaceUnhealthy']);
    addNodes(3, { 1: 35 });
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([]);
    expect(world.cluster.nodes.get('node-1')?.repair).toBeUndefined();
    expect(events('node-1').map((e) => e.reason)).toEqual(['RepairHeld']);
    expect(events('node-1')[0]!.message).toMatch(/ReplaceUnhealthy process is suspended on the group/);
    expect(world.log.lines.some((l) => l.message === repairSuspendedMessage)).toBe(true);

    world.autoScaling.suspended.delete('workers');
    later(5);
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([id(1)]);
  });

  it('decides no replacement while Launch is suspended: the instance would go with nothing in its place', async () => {
    world.autoScaling.suspended.set('workers', ['Launch']);
    addNodes(3, { 1: 35 });
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([]);
    expect(events('node-1')[0]?.message).toMatch(/terminate the instance and launch none in its place/);
  });

  it('sets our Unhealthy mark back when it takes back a replacement that never began, so no later resume acts on it', async () => {
    addNodes(3, { 1: 40 });
    await pass();
    expect(world.autoScaling.unhealthy).toEqual([id(1)]);
    // Suspended after our mark: the instance stays InService and Unhealthy.
    world.autoScaling.suspended.set('workers', ['ReplaceUnhealthy']);
    world.cluster.updateNode('node-1', { conditions: conditions(undefined) });
    later(16);
    await pass();
    expect(world.cluster.nodes.get('node-1')?.repair).toBeUndefined();
    expect(world.autoScaling.health.get(id(1))).toBe('Healthy');
    // Another node goes bad: it is held for the true reason, not "Auto Scaling is already replacing".
    world.cluster.updateNode('node-2', { conditions: conditions(35) });
    later(5);
    await pass();
    const held = events('node-2').find((e) => e.reason === 'RepairHeld');
    expect(held?.message).toMatch(/ReplaceUnhealthy process is suspended/);
    expect(held?.message).not.toMatch(/already replacing/);
  });

  it('starts one repair from a schedule delivered twice at once, where the parallel limit is 1', async () => {
    addNodes(4, { 1: 35, 2: 34, 3: 33 });
    // Both deliveries list the nodes before either decides: the race the duplicate makes.
    const list = world.cluster.listNodeHealth.bind(world.cluster);
    let listed = 0;
    let release = () => {};
    const bothListed = new Promise<void>((resolve) => (release = resolve));
    world.cluster.listNodeHealth = async (selector, pick) => {
      const nodes = await list(selector, pick);
      if (++listed === 2) release();
      await bothListed;
      return nodes;
    };
    await Promise.all([pass(), pass()]);
    expect(world.autoScaling.unhealthy).toEqual([id(1)]);
    expect([...world.cluster.nodes.values()].filter((n) => n.repair !== undefined).map((n) => n.name)).toEqual([
      'node-1',
    ]);
  });

  it('reboots a node whose drain outlasts two hours (DRAIN_TIMEOUT_SECONDS=10800): its record is not taken back mid-drain', async () => {
    extra = { REPAIR: rebootRule, DRAIN_TIMEOUT_SECONDS: '10800' };
    addNodes(1, { 1: 6 });
    const stuck = world.cluster.addPod(pod({ name: 'stuck', nodeName: 'node-1' }));
    world.cluster.evictionRules.push(pdbBlocks('stuck-pdb', (p) => p.uid === stuck.uid));
    await pass();
    const decidedAtMs = world.cluster.nodes.get('node-1')?.repair?.decidedAtMs;
    expect(decidedAtMs).toBeDefined();
    for (let t = 0; t < 185; t += 5) {
      later(5);
      await pass();
    }
    expect(world.autoScaling.reboots).toEqual([id(1)]);
    // One decision, carried to its end: never taken back and decided again.
    expect(world.cluster.nodes.get('node-1')?.repair?.decidedAtMs).toBe(decidedAtMs);
    expect(events('node-1').filter((e) => e.reason === 'RepairRebooting')).toHaveLength(1);
    expect(events('node-1').some((e) => e.reason === 'RepairMarksRemoved')).toBe(false);
  });

  it('dates a replacement escalated from a failed reboot from the escalation, so the reconciler does not take it back', async () => {
    extra = { REPAIR: rebootRule };
    addNodes(1, { 1: 6 });
    await pass(); // decides the reboot
    later(5);
    await pass(); // empty node: rebooted
    expect(world.autoScaling.reboots).toEqual([id(1)]);
    later(31);
    await pass(); // still bad 31 min after the reboot: replaced
    expect(world.autoScaling.unhealthy).toEqual([id(1)]);
    const escalatedAtMs = world.clock.now();
    expect(world.cluster.nodes.get('node-1')?.repair).toMatchObject({ action: 'replace', decidedAtMs: escalatedAtMs });
    later(5);
    await pass();
    expect(world.cluster.nodes.get('node-1')?.repair).toMatchObject({ action: 'replace' });
    expect(events('node-1').some((e) => e.reason === 'RepairMarksRemoved')).toBe(false);
  });
});
