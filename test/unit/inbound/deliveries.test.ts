// One handler for every shape a lifecycle notification or a Spot warning arrives in.
import { beforeEach, describe, expect, it } from 'vitest';
import { UnsupportedEventError } from '../../../lambda/inbound/deliveries.js';
import {
  eventBridgeLifecycle,
  rebalanceRecommendation,
  spotInterruptionWarning,
  sqsEvent,
} from '../../fixtures/deliveries.js';
import { instanceId, lifecycleMessage, snsEvent, testMessage } from '../../fixtures/notifications.js';
import { TransientError } from '../../../lambda/shared/errors.js';
import {
  handlerWorld,
  pdbBlocks,
  pod,
  type FakeCluster,
  type FakeLifecycleActions,
  type MemoryLog,
} from '../../fakes/fake-world.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate,workers-launch',
  LOAD_BALANCER_DELAY_SECONDS: '60',
};

describe('delivery shapes', () => {
  let world: ReturnType<typeof handlerWorld>;
  let cluster: FakeCluster;
  let lifecycle: FakeLifecycleActions;
  let log: MemoryLog;
  let t0: number;

  beforeEach(() => {
    world = handlerWorld(env);
    ({ cluster, lifecycle, log } = world);
    t0 = world.clock.now();
    cluster.addNode('node-a', instanceId);
    cluster.addPod(pod({ name: 'web' }));
  });

  it('drains a terminate delivered as an EventBridge event invoked directly, its Time from the event', async () => {
    const result = await world.invokeRaw(world.handler(), eventBridgeLifecycle());
    expect(result.records).toEqual([{ status: 'drained', instanceId }]);
    expect(lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
  });

  it('drains a terminate delivered through an SQS hook target, and one whose body is an EventBridge event', async () => {
    const result = await world.invokeRaw(world.handler(), sqsEvent(lifecycleMessage()));
    expect(result.records).toEqual([{ status: 'drained', instanceId }]);
    const second = handlerWorld(env);
    second.cluster.addNode('node-a', instanceId);
    const viaRule = await second.invokeRaw(second.handler(), sqsEvent(eventBridgeLifecycle()));
    expect(viaRule.records).toEqual([{ status: 'drained', instanceId }]);
  });

  it('logs the test notification and a malformed SQS body with its field, and goes on with the others', async () => {
    const result = await world.invokeRaw(world.handler(), sqsEvent(testMessage, '{"Origin": ', lifecycleMessage()));
    expect(result.records.map((r) => r.status)).toEqual(['test-notification', 'malformed', 'drained']);
    expect(log.lines.find((l) => l.message === 'malformed record')?.fields).toMatchObject({
      field: 'body',
      recordIndex: 1,
    });
    // Only the malformed one is reported back, so SQS keeps it (and, at last, its dead-letter queue).
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: '059f36b4-87a3-44ab-83d2-661970000001' }]);
  });

  it('fails only the record of a kind it does not serve inside an SQS batch: the others run', async () => {
    const unknown = {
      'detail-type': 'EC2 AMI State Change',
      source: 'aws.ec2',
      detail: { ImageId: 'ami-0123456789abcdef0' },
    };
    const result = await world.invokeRaw(world.handler(), sqsEvent(unknown, lifecycleMessage()));
    expect(result.records.map((r) => r.status)).toEqual(['unsupported', 'drained']);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: '059f36b4-87a3-44ab-83d2-661970000000' }]);
    expect(lifecycle.completions).toHaveLength(1);
  });

  it('fails the invocation when an SQS record fails transiently (the batch is retried: nothing is lost, with or without partial batch responses), after running the others', async () => {
    let calls = 0;
    lifecycle.heartbeat = async () => (calls++ === 0 ? Promise.reject(new Error('Rate exceeded')) : 'recorded');
    await expect(
      world.invokeRaw(
        world.handler(),
        sqsEvent(lifecycleMessage(), lifecycleMessage({ LifecycleActionToken: 'another-token' })),
      ),
    ).rejects.toThrow(/1 of 2 records failed/);
    expect(lifecycle.completions).toHaveLength(1);
  });

  it('fails the invocation, with one error line naming the shape, on anything else (never an empty success)', async () => {
    const handle = world.handler();
    await expect(world.invokeRaw(handle, { detail: {} })).rejects.toBeInstanceOf(UnsupportedEventError);
    await expect(
      world.invokeRaw(handle, { 'detail-type': 'EC2 AMI State Change', source: 'aws.ec2', detail: {} }),
    ).rejects.toThrow(/EC2 AMI State Change/);
    await expect(world.invokeRaw(handle, [1, 2])).rejects.toThrow(/JSON array/);
    const errors = log.lines.filter((l) => l.level === 'error' && l.message.startsWith('unsupported event shape'));
    expect(errors).toHaveLength(3);
    expect(errors[0]!.fields['shape']).toBe('an object with keys detail');
    expect(cluster.calls).toEqual([]);
  });

  it('drains at once on a Spot interruption warning, ending before the two minutes, with nothing to complete', async () => {
    world.groups.set(instanceId, 'workers');
    world.ec2.spot.set(instanceId, 'marked-for-termination');
    const guarded = cluster.addPod(pod({ name: 'guarded', terminationGracePeriodSeconds: 300 }));
    cluster.evictionRules.push(pdbBlocks('guarded-pdb', (p) => p.uid === guarded.uid));

    const result = await world.invokeRaw(world.handler(), spotInterruptionWarning());

    expect(result.records).toEqual([{ status: 'timed-out', instanceId }]);
    // Evicted first; the budget-held pod deleted with its grace clamped so it is gone by 105 s.
    expect(cluster.calls.filter((c) => c.op === 'evict').map((c) => c.target)).toContain('default/web');
    expect(cluster.deletions).toHaveLength(1);
    expect(cluster.deletions[0]!.atMs - t0 + cluster.deletions[0]!.gracePeriodSeconds * 1000).toBeLessThanOrEqual(
      105_000,
    );
    expect(cluster.podsOn('node-a')).toEqual([]);
    // No heartbeat, no completion: there is no lifecycle action.
    expect(lifecycle.heartbeats).toEqual([]);
    expect(lifecycle.completions).toEqual([]);
    expect(world.clock.now() - t0).toBeLessThan(120_000);
    expect(cluster.reasons()).toContain('Node/SpotInterruptionDrained');
    expect(cluster.nodes.get('node-a')).toMatchObject({ unschedulable: true });
  });

  it('honours the deadline policy on a Spot warning: under leave nothing is deleted', async () => {
    world.groups.set(instanceId, 'workers');
    world.ec2.spot.set(instanceId, 'marked-for-termination');
    const guarded = cluster.addPod(pod({ name: 'guarded', terminationGracePeriodSeconds: 300 }));
    cluster.evictionRules.push(pdbBlocks('guarded-pdb', (p) => p.uid === guarded.uid));
    const result = await world.invokeRaw(world.handler({ DEADLINE_POLICY: 'leave' }), spotInterruptionWarning());
    expect(result.records).toEqual([{ status: 'timed-out', instanceId }]);
    expect(cluster.deletions).toEqual([]);
    expect(cluster.calls.filter((c) => c.op === 'delete')).toEqual([]);
  });

  it("never believes a Spot warning's time past what EC2 promises: a time in the future still ends by now + 2 min", async () => {
    world.groups.set(instanceId, 'workers');
    world.ec2.spot.set(instanceId, 'marked-for-termination');
    const guarded = cluster.addPod(pod({ name: 'guarded', terminationGracePeriodSeconds: 30 }));
    cluster.evictionRules.push(pdbBlocks('guarded-pdb', (p) => p.uid === guarded.uid));
    await world.invokeRaw(world.handler(), spotInterruptionWarning(instanceId, new Date(t0 + 3_600_000).toISOString()));
    expect(world.clock.now() - t0).toBeLessThan(120_000);
  });

  it('evicts every pod once even when the warning leaves less time than a drain needs (graceful shutdown still counts)', async () => {
    world.groups.set(instanceId, 'workers');
    world.ec2.spot.set(instanceId, 'marked-for-termination');
    cluster.addPod(pod({ name: 'coredns', namespace: 'kube-system', priorityClassName: 'system-cluster-critical' }));
    // Handled 110 s after the warning: the drain's own deadline (105 s) has passed.
    await world.invokeRaw(
      world.handler({ DEADLINE_POLICY: 'leave' }),
      spotInterruptionWarning(instanceId, new Date(t0 - 110_000).toISOString()),
    );
    expect(
      cluster.calls
        .filter((c) => c.op === 'evict')
        .map((c) => c.target)
        .sort(),
    ).toEqual(['default/web', 'kube-system/coredns']);
  });

  it.each([
    ['an unknown instance-action', { 'instance-action': 'reboot' }, 'detail.instance-action'],
    ['another source', { source: 'my.app' }, 'source'],
  ])('names the field of a Spot warning with %s, touching nothing', async (_what, change, field) => {
    world.groups.set(instanceId, 'workers');
    const event = spotInterruptionWarning() as { detail: Record<string, unknown> } & Record<string, unknown>;
    const changed = 'source' in change ? { ...event, ...change } : { ...event, detail: { ...event.detail, ...change } };
    const result = await world.invokeRaw(world.handler(), changed);
    expect(result.records).toEqual([{ status: 'malformed' }]);
    expect(log.lines.find((l) => l.level === 'error')?.fields['field']).toBe(field);
    expect(cluster.calls).toEqual([]);
  });

  it('refuses a Spot warning for an instance of a group it does not serve (or of none), touching nothing', async () => {
    world.groups.set(instanceId, 'someone-elses-group');
    const result = await world.invokeRaw(world.handler(), spotInterruptionWarning());
    expect(result.records).toEqual([{ status: 'refused', instanceId }]);
    world.groups.clear();
    const none = await world.invokeRaw(world.handler(), spotInterruptionWarning());
    expect(none.records).toEqual([{ status: 'refused', instanceId }]);
    expect(cluster.calls).toEqual([]);
  });

  it('believes a Spot warning whose request EC2 marks a moment after the event', async () => {
    world.groups.set(instanceId, 'workers');
    world.ec2.spot.set(instanceId, 'fulfilled');
    world.clock.after(1_000, () => world.ec2.spot.set(instanceId, 'marked-for-termination'));
    expect(
      (await world.invokeRaw(world.handler({ DEADLINE_POLICY: 'leave' }), spotInterruptionWarning())).records[0]!
        .status,
    ).not.toBe('refused');
    // The instance read once; only its request's status again.
    expect(world.ec2.calls).toEqual([
      'DescribeInstances',
      'DescribeSpotInstanceRequests',
      'DescribeSpotInstanceRequests',
    ]);
    expect(cluster.nodes.get('node-a')).toMatchObject({ unschedulable: true });
  });

  it('believes a Spot warning whose request EC2 set straight to instance-terminated-no-capacity', async () => {
    world.groups.set(instanceId, 'workers');
    world.ec2.spot.set(instanceId, 'instance-terminated-no-capacity');
    expect(
      (await world.invokeRaw(world.handler({ DEADLINE_POLICY: 'leave' }), spotInterruptionWarning())).records[0]!
        .status,
    ).not.toBe('refused');
  });

  it("drains on Auto Scaling's word when EC2 cannot be asked (EC2's answer may only refuse; no forger can make EC2 fail)", async () => {
    world.groups.set(instanceId, 'workers');
    world.ec2.failure = new TransientError(
      'ec2:DescribeInstances failed after 4 attempts: getaddrinfo ENOTFOUND ec2.eu-west-1.amazonaws.com',
    );
    expect(
      (await world.invokeRaw(world.handler({ DEADLINE_POLICY: 'leave' }), spotInterruptionWarning())).records[0]!
        .status,
    ).not.toBe('refused');
    expect(log.lines.find((l) => l.level === 'warn')?.message).toMatch(/could not ask EC2/);
    expect(cluster.nodes.get('node-a')).toMatchObject({ unschedulable: true });
  });

  it('refuses a Spot warning for an instance EC2 runs On-Demand (EC2 interrupts only Spot), touching nothing', async () => {
    world.groups.set(instanceId, 'workers');
    const result = await world.invokeRaw(world.handler(), spotInterruptionWarning());
    expect(result.records).toEqual([{ status: 'refused', instanceId }]);
    expect(world.ec2.calls).toEqual(['DescribeInstances']);
    expect(log.lines.find((l) => l.level === 'warn')?.message).toMatch(/does not run this instance as Spot/);
    expect(cluster.calls).toEqual([]);
  });

  it('does nothing for a Spot warning that arrives after the two minutes, not even ask Auto Scaling', async () => {
    world.groups.set(instanceId, 'workers');
    const result = await world.invokeRaw(
      world.handler(),
      spotInterruptionWarning(instanceId, new Date(t0 - 130_000).toISOString()),
    );
    expect(result.records).toEqual([{ status: 'spot-warning-expired', instanceId }]);
    expect(world.autoScaling.calls).toEqual([]);
    expect(cluster.calls).toEqual([]);
  });

  it('logs and counts a rebalance recommendation (the terminate hook drains once the replacement is up)', async () => {
    world.groups.set(instanceId, 'workers');
    const result = await world.invokeRaw(world.handler(), rebalanceRecommendation());
    expect(result.records).toEqual([{ status: 'rebalance-recommendation', instanceId }]);
    expect(world.metrics.map((m) => Object.keys(m.values))).toEqual([['RebalanceRecommendations']]);
    expect(cluster.calls).toEqual([]);
  });

  it('still takes SNS, as before', async () => {
    const result = await world.invokeRaw(world.handler(), snsEvent(lifecycleMessage()));
    expect(result.records).toEqual([{ status: 'drained', instanceId }]);
  });
});
