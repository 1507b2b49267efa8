// Instance refresh marks (lambda/refresh/) through the router, with the EventBridge
// event shapes of the Auto Scaling docs:
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/instance-refresh-eventbridge-events.html
import { beforeEach, describe, expect, it } from 'vitest';
import { createNodeApi } from '../../../lambda/adapters/kubernetes/node-api.js';
import { createNodeLookup } from '../../../lambda/adapters/kubernetes/node-lookup.js';
import { markOutdatedNodes } from '../../../lambda/refresh/outdated-marks.js';
import { boundStrategyTag } from '../../../lambda/refresh/strategy-tag.js';
import { FakeClock, handlerWorld, MemoryLog, type FakeCluster } from '../../fakes/fake-world.js';
import { fakeKube, wire } from '../../fakes/node-kube.js';
import { refreshEvent } from '../../fixtures/deliveries.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  LOAD_BALANCER_DELAY_SECONDS: '0',
};
const refreshId = 'c613620e-07e2-4ed2-a9e2-ef8258911ade';
const outdated = 'graceful-node-termination/outdated';

describe('instance refresh marks', () => {
  let world: ReturnType<typeof handlerWorld>;
  let cluster: FakeCluster;
  beforeEach(() => {
    world = handlerWorld(env);
    cluster = world.cluster;
    cluster.addNode('old-1', 'i-0aaaaaaaaaaaaaaa1');
    cluster.addNode('old-2', 'i-0aaaaaaaaaaaaaaa2', { unschedulable: true }); // somebody cordoned it
    cluster.addNode('new-1', 'i-0bbbbbbbbbbbbbbb1');
    world.refreshes.set(refreshId, {
      strategyTag: undefined,
      outdated: ['i-0aaaaaaaaaaaaaaa1', 'i-0aaaaaaaaaaaaaaa2'],
      desired: 'lt-0abc version 7',
    });
  });

  it('taints the outdated nodes PreferNoSchedule when the refresh starts, and only those', async () => {
    const result = await world.invokeRaw(world.handler(), refreshEvent('Started'));
    expect(result.records).toEqual([{ status: 'refresh-marked' }]);
    expect(cluster.nodes.get('old-1')!.taints).toEqual([
      { key: outdated, value: refreshId, effect: 'PreferNoSchedule' },
    ]);
    expect(cluster.nodes.get('old-2')!.taints).toEqual([
      { key: outdated, value: refreshId, effect: 'PreferNoSchedule' },
    ]);
    expect(cluster.nodes.get('old-1')!.labels).toMatchObject({
      'graceful-node-termination/refresh': refreshId,
      'graceful-node-termination/owner': 'graceful-node-termination',
    });
    expect(cluster.nodes.get('old-1')!.refreshGroup).toBe('workers');
    expect(cluster.nodes.get('new-1')!.taints).toEqual([]);
    expect(cluster.nodes.get('old-1')!.unschedulable).toBe(false);
    expect(cluster.events.filter((e) => e.reason === 'MarkedOutdated').map((e) => e.regarding.name)).toEqual([
      'old-1',
      'old-2',
    ]);
    expect(cluster.events[0]!.message).toMatch(/replaces instance i-0aaaaaaaaaaaaaaa1 \(desired: lt-0abc version 7\)/);
  });

  it('cordons them instead when the strategy tag names this refresh, and at the end takes back only what it set', async () => {
    world.refreshes.set(refreshId, { ...world.refreshes.get(refreshId)!, strategyTag: boundStrategyTag(refreshId) });
    await world.invokeRaw(world.handler(), refreshEvent('Started'));
    expect(cluster.nodes.get('old-1')!.unschedulable).toBe(true);
    // already cordoned by somebody else: not ours
    expect(cluster.nodes.get('old-2')!.labels['graceful-node-termination/refresh-cordoned']).toBeUndefined();

    world.autoScaling.refreshStatus.set(refreshId, 'Cancelled');
    const ended = await world.invokeRaw(world.handler(), refreshEvent('Cancelled'));
    expect(ended.records).toEqual([{ status: 'refresh-unmarked' }]);
    expect(cluster.nodes.get('old-1')!.unschedulable).toBe(false);
    expect(cluster.nodes.get('old-2')!.unschedulable).toBe(true);
    expect(cluster.events.filter((e) => e.reason === 'OutdatedMarksRemoved').map((e) => e.message)).toEqual([
      `Instance refresh ${refreshId} of group workers cancelled: removed what it set (cordon).`,
      `Instance refresh ${refreshId} of group workers cancelled: removed what it set (only its label).`,
    ]);
  });

  it('never cordons for a tag that names another refresh, or one left pending for long', async () => {
    world.refreshes.set(refreshId, {
      ...world.refreshes.get(refreshId)!,
      strategyTag: boundStrategyTag('an-older-refresh'),
    });
    await world.invokeRaw(world.handler(), refreshEvent('Started'));
    expect(cluster.nodes.get('old-1')!.unschedulable).toBe(false);
    world.refreshes.set(refreshId, {
      ...world.refreshes.get(refreshId)!,
      strategyTag: `minimal@${Math.floor(world.clock.now() / 1000) - 3600}`,
    });
    world.autoScaling.refreshStatus.set(refreshId, 'Cancelled');
    await world.invokeRaw(world.handler(), refreshEvent('Cancelled'));
    world.autoScaling.refreshStatus.delete(refreshId);
    await world.invokeRaw(world.handler(), refreshEvent('Started'));
    expect(cluster.nodes.get('old-1')!.unschedulable).toBe(false);
  });

  it('keeps the marks on an ending event while Auto Scaling says the refresh is still in progress (forged or early)', async () => {
    await world.invokeRaw(world.handler(), refreshEvent('Started'));
    const result = await world.invokeRaw(world.handler(), refreshEvent('Succeeded'));
    expect(result.records).toEqual([{ status: 'refresh-still-active' }]);
    expect(cluster.nodes.get('old-1')!.taints).toHaveLength(1);
  });

  it("takes back only its own group's marks", async () => {
    await world.invokeRaw(world.handler(), refreshEvent('Started'));
    cluster.updateNode('old-2', { refreshGroup: 'another-group' });
    world.autoScaling.refreshStatus.set(refreshId, 'Successful');
    await world.invokeRaw(world.handler(), refreshEvent('Succeeded'));
    expect(cluster.nodes.get('old-1')!.taints).toEqual([]);
    expect(cluster.nodes.get('old-2')!.taints).toHaveLength(1);
  });

  it("takes the older refresh's marks back when a newer one of the group starts (overlapping refreshes)", async () => {
    await world.invokeRaw(world.handler(), refreshEvent('Started'));
    const newer = '0d3b7a55-1111-2222-3333-444455556666';
    world.refreshes.set(newer, {
      strategyTag: undefined,
      outdated: ['i-0aaaaaaaaaaaaaaa1'],
      desired: 'lt-0abc version 8',
    });
    world.autoScaling.refreshStatus.set(refreshId, 'Cancelled');
    await world.invokeRaw(world.handler(), refreshEvent('Started', 'workers', newer));
    expect(cluster.nodes.get('old-1')!.taints).toEqual([{ key: outdated, value: newer, effect: 'PreferNoSchedule' }]);
    expect(cluster.nodes.get('old-2')!.taints).toEqual([]);
    expect(cluster.nodes.get('old-2')!.labels['graceful-node-termination/refresh']).toBeUndefined();
  });

  it('takes its own marks back when the refresh ended while its Started event was being handled', async () => {
    // Auto Scaling answers InProgress to the confirm, then Cancelled once the nodes are marked.
    const statuses = ['InProgress', 'Cancelled'];
    world.autoScaling.refreshStatuses = async (_g, ids) =>
      new Map(ids.map((id) => [id, statuses.shift() ?? 'Cancelled']));
    await world.invokeRaw(world.handler(), refreshEvent('Started'));
    expect(cluster.nodes.get('old-1')!.taints).toEqual([]);
    expect(cluster.nodes.get('old-1')!.labels['graceful-node-termination/refresh']).toBeUndefined();
  });

  it("removes the taints when the refresh succeeds, and leaves a draining node's cordon to its drain", async () => {
    await world.invokeRaw(world.handler(), refreshEvent('Started'));
    cluster.updateNode('old-1', {
      unschedulable: true,
      drain: {
        source: lifecycleAction('sha256:x', 'h'),
        notifiedAtMs: 0,
        startedAtMs: 0,
        updatedAtMs: 0,
        set: ['cordon'],
      },
    });
    world.autoScaling.refreshStatus.set(refreshId, 'Successful');
    await world.invokeRaw(world.handler(), refreshEvent('Succeeded'));
    expect(cluster.nodes.get('old-1')).toMatchObject({ taints: [], unschedulable: true });
    expect(cluster.nodes.get('old-2')!.taints).toEqual([]);
  });

  it('marks nothing for a refresh that is already over, refuses other groups, logs checkpoints, and can be switched off', async () => {
    world.refreshes.clear();
    expect((await world.invokeRaw(world.handler(), refreshEvent('Started'))).records).toEqual([
      { status: 'refresh-over' },
    ]);
    expect((await world.invokeRaw(world.handler(), refreshEvent('Started', 'someone-elses'))).records).toEqual([
      { status: 'refused' },
    ]);
    expect((await world.invokeRaw(world.handler(), refreshEvent('Checkpoint Reached'))).records).toEqual([
      { status: 'refresh-progress' },
    ]);
    world.refreshes.set(refreshId, { strategyTag: undefined, outdated: ['i-0aaaaaaaaaaaaaaa1'], desired: 'x' });
    expect(
      (await world.invokeRaw(world.handler({ MARK_OUTDATED_ON_REFRESH: 'false' }), refreshEvent('Started'))).records,
    ).toEqual([{ status: 'refresh-marks-off' }]);
    expect(cluster.nodes.get('old-1')!.taints).toEqual([]);
  });

  it('names the field of a malformed refresh event', async () => {
    const event = refreshEvent('Started');
    const result = await world.invokeRaw(world.handler(), { ...event, detail: { AutoScalingGroupName: 'workers' } });
    expect(result.records).toEqual([{ status: 'malformed' }]);
    expect(world.log.lines.find((l) => l.level === 'error')?.fields['field']).toBe('detail.InstanceRefreshId');
  });
});

// From the review of the wave change (these held; was test/unit/review/wave-review.test.ts).
describe('instance refresh marks after a conflict', () => {
  it('an outdated node whose first read was stale is marked after the conflict (fresh re-read)', async () => {
    const etcd = [wire('ip-10-0-0-1.ec2.internal', 'i-01', '9', 'ip-10-0-0-1.ec2.internal')];
    const cache = [wire('ip-10-0-0-1.ec2.internal', 'i-01', '5', 'ip-10-0-0-1.ec2.internal')];
    const { kube, requests } = fakeKube(etcd, cache);
    const log = new MemoryLog();
    const lookup = createNodeLookup(
      createNodeApi(kube as never, log),
      { privateDnsNames: async () => new Map([['i-01', 'ip-10-0-0-1.ec2.internal']]) },
      new FakeClock(),
      log,
    );
    // The server's conditional patch: refused (409 -> 'changed') unless made on the current version.
    const nodes = {
      ...lookup,
      markOutdated: async (node: { resourceVersion?: string }) =>
        node.resourceVersion === '9' ? 'patched' : 'changed',
    } as never;
    const view = { outdated: ['i-01'], desired: 'lt-1:2', strategyTag: undefined };
    const result = await markOutdatedNodes('workers', 'r-1', {
      nodes,
      instances: { refresh: async () => view },
      events: { record: async () => {} },
      clock: new FakeClock(),
      log,
      owner: 'drainer',
    } as never);
    expect({ marked: result.marked, reads: requests.length }).toEqual({
      marked: ['ip-10-0-0-1.ec2.internal'],
      reads: expect.any(Number),
    });
  });
});
