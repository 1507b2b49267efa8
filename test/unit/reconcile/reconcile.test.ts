// The reconciler: every mark of ours converges to what its owner says, whatever event was
// lost. Owners are asked at Auto Scaling's edge (the fake), marks are read from the nodes.
import { beforeEach, describe, expect, it } from 'vitest';
import { excludeFromLoadBalancersLabel, ownerLabel } from '../../../lambda/cluster/marks/mark-keys.js';
import { type DrainRecord } from '../../../lambda/cluster/model.js';
import { boundStrategyTag } from '../../../lambda/refresh/strategy-tag.js';
import { refreshStrategyTag } from '../../../lambda/shared/group-tags.js';
import { handlerWorld } from '../../fakes/fake-world.js';
import { scheduledEvent } from '../../fixtures/deliveries.js';
import { gntAOwner, handOffDeploymentEnv, instanceId, lifecycleMessage } from '../../fixtures/notifications.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

const env = handOffDeploymentEnv;
const owner = gntAOwner;

describe('reconciler', () => {
  let world: ReturnType<typeof handlerWorld>;
  let t0: number;
  const record = (o: Partial<DrainRecord> = {}): DrainRecord => ({
    source: lifecycleAction('sha256:ab', 'workers-terminate'),
    notifiedAtMs: t0,
    startedAtMs: t0,
    updatedAtMs: t0,
    set: ['exclude-from-load-balancers', 'cordon'],
    ...o,
  });
  const pass = () => world.invokeRaw(world.handler(), scheduledEvent());

  beforeEach(() => {
    world = handlerWorld(env);
    t0 = world.clock.now();
    world.groups.set(instanceId, 'workers');
    world.clock.advanceTo(t0 + 10 * 60_000);
  });

  it('costs one list and one describe when nothing is marked, and touches nothing', async () => {
    world.cluster.addNode('node-a', instanceId);
    const result = await pass();
    expect(result.records).toEqual([{ status: 'reconciled' }]);
    expect(world.cluster.calls.map((c) => c.op)).toEqual(['list-marked']);
    expect(world.autoScaling.calls).toEqual(['DescribeAutoScalingGroups']);
  });

  it("takes back the marks of a drain whose action is over (a return admitted unchecked, a lost event), restoring a label's earlier value", async () => {
    world.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: { ...owner, [excludeFromLoadBalancersLabel]: 'true' },
      drain: record({ priorLabel: 'false' }),
    });
    await pass();
    const node = world.cluster.nodes.get('node-a')!;
    expect(node).toMatchObject({
      unschedulable: false,
      drain: undefined,
      labels: { [excludeFromLoadBalancersLabel]: 'false' },
    });
    expect(node.labels['graceful-node-termination/owner']).toBeUndefined();
    expect(world.cluster.events.find((e) => e.reason === 'DrainMarksRemoved')?.message).toMatch(
      /reconciler found no owner .*InService/,
    );
    expect(world.metrics.at(-1)).toMatchObject({
      dimensions: { Transition: 'reconcile' },
      values: { StaleMarksRemoved: { value: 1 } },
    });
  });

  it("leaves the marks an owner still holds: an action waiting, a retained instance, an instance in the warm pool, another deployment's", async () => {
    for (const [i, state] of ['Terminating:Wait', 'Terminating:Retained', 'Warmed:Stopped'].entries()) {
      const id = `i-0${String(i).repeat(16)}`;
      world.groups.set(id, 'workers');
      world.autoScaling.states.set(id, state);
      world.cluster.addNode(`node-${i}`, id, {
        unschedulable: true,
        labels: owner,
        drain: record({ updatedAtMs: world.clock.now() }),
      });
    }
    world.cluster.addNode('theirs', instanceId, {
      unschedulable: true,
      labels: { 'graceful-node-termination/owner': 'gnt-b' },
      drain: record(),
    });
    await pass();
    for (const name of ['node-0', 'node-1', 'node-2', 'theirs'])
      expect(world.cluster.nodes.get(name)!.unschedulable).toBe(true);
    expect(world.cluster.calls.filter((c) => c.op === 'unmark')).toEqual([]);
  });

  it('leaves a record younger than two minutes alone (Auto Scaling may not show its action yet)', async () => {
    world.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: owner,
      drain: record({ updatedAtMs: world.clock.now() - 30_000 }),
    });
    await pass();
    expect(world.cluster.nodes.get('node-a')!.unschedulable).toBe(true);
  });

  it('hands on again a drain whose chain was lost while its action still waits, once', async () => {
    world.terminating.add(instanceId);
    // Nothing written for longer than one invocation's stretch (880 s) and a minute.
    world.clock.advanceTo(t0 + 16 * 60_000);
    world.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: owner,
      drain: record(),
      handOffClaim: 'sha256:ab/2/request-7',
    });
    await pass();
    expect(world.handOffs.sent).toEqual([
      expect.objectContaining({
        EC2InstanceId: instanceId,
        LifecycleHookName: 'workers-terminate',
        AutoScalingGroupName: 'workers',
        GracefulNodeTerminationHandOff: { count: 2, claim: 'sha256:ab/2/request-7', resumedBy: 'reconciler' },
      }),
    ]);
    expect(world.handOffs.sent[0]!['LifecycleActionToken']).toBeUndefined();
    expect(world.cluster.reasons()).toContain('Node/DrainResumed');
    // The record is touched: the next pass does not resume it a second time.
    await pass();
    expect(world.handOffs.sent).toHaveLength(1);
  });

  it('leaves a drain alone that wrote within a hand-off interval', async () => {
    world.terminating.add(instanceId);
    world.cluster.addNode('node-a', instanceId, { unschedulable: true, labels: owner, drain: record() });
    world.clock.advanceTo(t0 + 15 * 60_000);
    await pass();
    expect(world.handOffs.sent).toEqual([]);
  });

  it('the resumed hand-off carries the drain to its end, addressing the action by instance', async () => {
    world.terminating.add(instanceId);
    world.clock.advanceTo(t0 + 16 * 60_000);
    world.cluster.addNode('node-a', instanceId, { unschedulable: true, labels: owner, drain: record() });
    await pass();
    expect(world.handOffs.sent).toHaveLength(1);
    const statuses = await world.runChain({}, world.handOffs.sent[0]!);
    expect(statuses).toEqual(['drained']);
    expect(world.lifecycle.completions).toEqual([
      expect.objectContaining({
        action: expect.objectContaining({ instanceId, lifecycleActionToken: undefined }),
        result: 'CONTINUE',
      }),
    ]);
  });

  /** node-a tainted by refresh `id`, whose group's strategy tag names it, in `status`. */
  const markedByRefresh = (id: string, status: string) => {
    world.cluster.addNode('node-a', instanceId, {
      labels: { ...owner, 'graceful-node-termination/refresh': id },
      refreshGroup: 'workers',
      taints: [{ key: 'graceful-node-termination/outdated', value: id, effect: 'PreferNoSchedule' }],
    });
    world.autoScaling.refreshStatus.set(id, status);
    world.autoScaling.tags.set('workers', new Map([[refreshStrategyTag, boundStrategyTag(id)]]));
  };

  it('takes back refresh marks whose refresh is over, and strategy tags that name no active refresh', async () => {
    markedByRefresh('r-old', 'Successful');
    await pass();
    expect(world.cluster.nodes.get('node-a')!.taints).toEqual([]);
    expect(world.autoScaling.tags.get('workers')!.has(refreshStrategyTag)).toBe(false);
  });

  it("keeps a refresh's marks and tag while it runs", async () => {
    markedByRefresh('r-now', 'InProgress');
    await pass();
    expect(world.cluster.nodes.get('node-a')!.taints).toHaveLength(1);
    expect(world.autoScaling.tags.get('workers')!.has(refreshStrategyTag)).toBe(true);
  });

  it('takes nothing back on a guess: a group whose refreshes Auto Scaling would not describe keeps its marks and its tag', async () => {
    markedByRefresh('r-old', 'Successful');
    world.autoScaling.refreshStatuses = async () => Promise.reject(new Error('Rate exceeded'));
    await pass();
    expect(world.cluster.nodes.get('node-a')!.taints).toHaveLength(1);
    expect(world.autoScaling.tags.get('workers')!.has(refreshStrategyTag)).toBe(true);
    expect(world.log.lines.find((l) => l.level === 'warn')?.message).toMatch(
      /could not ask Auto Scaling about the refreshes/,
    );
  });

  it("takes back a migration's marks once its command stopped renewing the lease, and not before; its cordon only when the record says it set it", async () => {
    const migration = {
      id: 'm-1-abcd',
      from: 'workers',
      to: 'workers-new',
      renewedAtMs: world.clock.now() - 60_000,
      leaseSeconds: 300,
      cordoned: true,
    };
    const node = world.cluster.addNode('node-a', instanceId);
    expect(
      await world.cluster.markMigrating(node, {
        record: migration,
        owner: owner['graceful-node-termination/owner'],
        taint: false,
        cordon: true,
      }),
    ).toBe('patched');
    await pass();
    expect(world.cluster.nodes.get('node-a')).toMatchObject({ unschedulable: true, migration });

    world.clock.advanceTo(world.clock.now() + 241_000);
    await pass();
    const after = world.cluster.nodes.get('node-a')!;
    expect(after).toMatchObject({ unschedulable: false, migration: undefined });
    expect(after.labels).not.toHaveProperty('graceful-node-termination/migration');
    expect(after.labels).not.toHaveProperty('graceful-node-termination/owner');
    expect(world.cluster.events.map((e) => e.reason)).toContain('MigrationMarksRemoved');
  });

  it("leaves somebody else's cordon under a migration's marks", async () => {
    const node = world.cluster.addNode('node-a', instanceId, { unschedulable: true });
    const migration = {
      id: 'm-2-abcd',
      from: 'workers',
      to: 'workers-new',
      renewedAtMs: world.clock.now() - 3_600_000,
      leaseSeconds: 300,
      cordoned: false,
    };
    await world.cluster.markMigrating(node, {
      record: migration,
      owner: owner['graceful-node-termination/owner'],
      taint: true,
      cordon: false,
    });
    await pass();
    expect(world.cluster.nodes.get('node-a')).toMatchObject({ unschedulable: true, migration: undefined, taints: [] });
  });

  it('removes a strategy tag left by a command killed before it started its refresh', async () => {
    world.autoScaling.tags.set(
      'workers',
      new Map([[refreshStrategyTag, `minimal@${Math.floor(world.clock.now() / 1000) - 3600}`]]),
    );
    await pass();
    expect(world.autoScaling.tags.get('workers')!.has(refreshStrategyTag)).toBe(false);
  });

  it('is switched off by RECONCILE_MARKS=false, and refuses a scheduled event from another source', async () => {
    expect((await world.invokeRaw(world.handler({ RECONCILE_MARKS: 'false' }), scheduledEvent())).records).toEqual([
      { status: 'reconcile-off' },
    ]);
    expect((await world.invokeRaw(world.handler(), { ...scheduledEvent(), source: 'my.app' })).records).toEqual([
      { status: 'malformed' },
    ]);
    expect(world.cluster.calls).toEqual([]);
  });

  it('converges a warm-pool return admitted unchecked (cluster unreachable) on the next pass', async () => {
    world.cluster.addNode('node-a', instanceId);
    await world.runChain({ LOAD_BALANCER_DELAY_SECONDS: '0' }, lifecycleMessage({ Destination: 'WarmPool' }));
    const launch = lifecycleMessage({
      LifecycleTransition: 'autoscaling:EC2_INSTANCE_LAUNCHING',
      LifecycleHookName: 'workers-launch',
      Origin: 'WarmPool',
      Destination: 'AutoScalingGroup',
      LifecycleActionToken: 'launch-token',
    });
    const unreachable = world.handler({}, async () => Promise.reject(new Error('connect ETIMEDOUT')));
    expect((await world.invoke(unreachable, launch)).records[0]!.status).toBe('launch-admitted-unchecked');
    expect(world.cluster.nodes.get('node-a')!.unschedulable).toBe(true);
    world.clock.advanceTo(world.clock.now() + 5 * 60_000);
    await pass();
    expect(world.cluster.nodes.get('node-a')).toMatchObject({ unschedulable: false, drain: undefined });
  });
});

// From the adversarial review of issue 19 (it held; was test/unit/review/attacks.test.ts).
describe('the reconciler and marks that are not its to take back', () => {
  it("the reconciler leaves a retained instance's cordon and a warm-pool instance's marks, and never touches another deployment's", async () => {
    const world = handlerWorld(env);
    const t = world.clock.now();
    const record: DrainRecord = {
      source: lifecycleAction('sha256:x', 'workers-terminate'),
      notifiedAtMs: t,
      startedAtMs: t,
      updatedAtMs: t,
      set: ['cordon'],
    };
    for (const [i, state] of [
      'Terminating:Retained',
      'Warmed:Stopped',
      'Warmed:Pending:Wait',
      'Warmed:Hibernated',
    ].entries()) {
      const id = `i-0${String(i).repeat(16)}`;
      world.groups.set(id, 'workers');
      world.autoScaling.states.set(id, state);
      world.cluster.addNode(`n-${i}`, id, { unschedulable: true, labels: owner, drain: record });
    }
    world.cluster.addNode('theirs', instanceId, {
      unschedulable: true,
      labels: { [ownerLabel]: 'gnt-b' },
      drain: record,
    });
    world.clock.advanceTo(t + 5 * 60_000);
    await world.invokeRaw(world.handler(), scheduledEvent());
    expect([...world.cluster.nodes.values()].every((n) => n.unschedulable)).toBe(true);
  });
});
