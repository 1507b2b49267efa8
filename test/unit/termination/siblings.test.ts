// Cordoning every doomed node first (lambda/termination/siblings.ts): when a group
// terminates several instances at once, the first drain marks the others' nodes before it
// evicts anything, so no evicted pod lands on a node that is about to be drained too.
import { beforeEach, describe, expect, it } from 'vitest';
import { AwsCallCount, patient } from '../../../lambda/adapters/aws/aws-patience.js';
import { handlerWorld, pod, type FakeCluster } from '../../fakes/fake-world.js';
import { instanceId, lifecycleMessage } from '../../fixtures/notifications.js';
import { actionIdOfToken } from '../../../lambda/cluster/marks/action-id.js';
import { siblingLimit, siblingsFirst, surveyTakesMs } from '../../../lambda/termination/siblings.js';
import { lifecycleAction, markedAhead } from '../../fixtures/drain-sources.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  LOAD_BALANCER_DELAY_SECONDS: '0',
};
const tokenB = '5b1d0f3e-bbbb-4bbb-8bbb-bbbbbbbbbbbb';
const lbLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';

describe('cordon every doomed node first', () => {
  let world: ReturnType<typeof handlerWorld>;
  let cluster: FakeCluster;

  beforeEach(() => {
    world = handlerWorld(env);
    cluster = world.cluster;
    cluster.addNode('node-a', instanceId);
    cluster.addNode('node-b', 'i-0bbbbbbbbbbbbbbbb');
    cluster.addNode('node-c', 'i-0cccccccccccccccc');
    cluster.addNode('node-keep', 'i-0dddddddddddddddd');
    cluster.addPod(pod({ name: 'web-1', nodeName: 'node-a' }));
    for (const id of [instanceId, 'i-0bbbbbbbbbbbbbbbb', 'i-0cccccccccccccccc', 'i-0dddddddddddddddd'])
      world.groups.set(id, 'workers');
    for (const id of [instanceId, 'i-0bbbbbbbbbbbbbbbb', 'i-0cccccccccccccccc']) world.terminating.add(id);
  });

  it("marks the terminating siblings' nodes before the first eviction, and only those, recording that a drain of ours set the marks", async () => {
    expect(await world.runChain()).toEqual(['drained']);
    const ops = cluster.calls.map((c) => `${c.op} ${c.target}`);
    const firstEviction = ops.findIndex((o) => o.startsWith('evict'));
    expect(ops.slice(0, firstEviction).filter((o) => o.startsWith('mark'))).toEqual([
      'mark node-a label cordon',
      expect.stringMatching(/^mark node-[bc] label cordon$/),
      expect.stringMatching(/^mark node-[bc] label cordon$/),
    ]);
    for (const name of ['node-b', 'node-c']) {
      expect(cluster.nodes.get(name)).toMatchObject({
        unschedulable: true,
        labels: { [lbLabel]: 'true' },
        drain: {
          source: { kind: 'marked-ahead' },
          set: ['exclude-from-load-balancers', 'cordon'],
          aheadOf: instanceId,
        },
      });
    }
    expect(cluster.nodes.get('node-keep')).toMatchObject({ unschedulable: false, labels: {} });
    expect(
      cluster.events
        .filter((e) => e.reason === 'CordonedAhead')
        .map((e) => e.regarding.name)
        .sort(),
    ).toEqual(['node-b', 'node-c']);
    expect(cluster.events.find((e) => e.reason === 'CordonedAhead')?.message).toMatch(
      /is leaving group workers together with i-0123456789abcdef0 \(node node-a\)/,
    );
  });

  it('marks an instance returning to the warm pool too (Warmed:Pending:Wait is on its way out)', async () => {
    world.terminating.delete('i-0cccccccccccccccc');
    world.autoScaling.states.set('i-0cccccccccccccccc', 'Warmed:Pending:Wait');
    await world.runChain();
    expect(cluster.nodes.get('node-c')).toMatchObject({
      unschedulable: true,
      drain: { source: { kind: 'marked-ahead' }, aheadOf: instanceId },
    });
  });

  it('keeps a load-balancer label an operator set to "false" as it was: restored, not removed', async () => {
    cluster.updateNode('node-b', { labels: { [lbLabel]: 'false' } });
    await world.runChain();
    expect(cluster.nodes.get('node-b')!.drain).toMatchObject({ priorLabel: 'false' });
  });

  it("a sibling's own drain adopts the marks (no second patch of them) and they stay ours to take back", async () => {
    await world.runChain();
    cluster.calls.length = 0;
    expect(
      await world.runChain(
        {},
        lifecycleMessage({ EC2InstanceId: 'i-0bbbbbbbbbbbbbbbb', LifecycleActionToken: tokenB }),
      ),
    ).toEqual(['drained']);
    const node = cluster.nodes.get('node-b')!;
    // Only the drain record changes hands: the label and cordon were already there.
    expect(cluster.calls.filter((c) => c.op === 'mark').map((c) => c.target)).toEqual(['node-b']);
    expect(node.drain).toMatchObject({
      source: { kind: 'lifecycle-action', actionId: actionIdOfToken(tokenB) },
      set: ['exclude-from-load-balancers', 'cordon'],
    });
    expect(
      cluster.events.filter((e) => e.regarding.name === 'node-b' && e.reason === 'Cordoned').map((e) => e.message),
    ).toEqual([
      `Node excluded from external load balancers and marked unschedulable (already cordoned ahead by the drain of ${instanceId}).`,
    ]);
  });

  it('leaves a sibling that somebody else cordoned and labelled alone, and one already marked by a drain of ours', async () => {
    cluster.updateNode('node-b', { unschedulable: true, labels: { [lbLabel]: 'true' } });
    cluster.updateNode('node-c', {
      unschedulable: true,
      drain: {
        source: lifecycleAction('sha256:c', 'workers-terminate'),
        notifiedAtMs: 0,
        startedAtMs: 0,
        updatedAtMs: 0,
        set: ['cordon'],
      },
    });
    await world.runChain();
    expect(cluster.calls.filter((c) => c.op === 'mark').map((c) => c.target)).toEqual(['node-a label cordon']);
    expect(cluster.nodes.get('node-b')!.drain).toBeUndefined();
    expect(cluster.nodes.get('node-c')!.drain?.source).toEqual(lifecycleAction('sha256:c'));
  });

  it('marks only what is missing on a half-marked sibling (cordoned by someone else: only the label is ours)', async () => {
    cluster.updateNode('node-b', { unschedulable: true });
    await world.runChain();
    expect(cluster.nodes.get('node-b')!.drain?.set).toEqual(['exclude-from-load-balancers']);
  });

  it('is switched off by CORDON_DOOMED_SIBLINGS=false', async () => {
    expect(await world.runChain({ CORDON_DOOMED_SIBLINGS: 'false' })).toEqual(['drained']);
    expect(cluster.calls.filter((c) => c.op === 'mark').map((c) => c.target)).toEqual(['node-a label cordon']);
    expect(cluster.calls.filter((c) => c.op === 'get-nodes')).toEqual([]);
  });

  it('drains its own node when Auto Scaling cannot be asked, with a warning', async () => {
    // A DescribeAutoScalingGroups that fails (throttled past its retries).
    world.autoScaling.leavingGroup = async () => Promise.reject(new Error('Rate exceeded'));
    const result = await world.invoke(world.handler(), lifecycleMessage());
    expect(result.records[0]!.status).toBe('drained');
    expect(
      (
        world.log.lines.find((l) => l.message.startsWith("could not look up the group's other leaving instances"))!
          .fields['error'] as Error
      ).message,
    ).toBe('Rate exceeded');
    expect(cluster.nodes.get('node-b')!.unschedulable).toBe(false);
  });

  it('does not mark again on a hand-off: the first invocation did', async () => {
    cluster.addPod(
      pod({ name: 'slow', nodeName: 'node-a', terminationMs: 200_000, terminationGracePeriodSeconds: 300 }),
    );
    // A short heartbeat timeout hands on every 96 s; one this short leaves the reconciler no
    // schedule to resume a lost chain in (docs/limits.md) and the launch wait no room.
    const shortHeartbeat = { HEARTBEAT_TIMEOUT_SECONDS: '120', RECONCILE_MARKS: 'false', LAUNCH_TIMEOUT_SECONDS: '60' };
    const statuses = await world.runChain({
      HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:lifecycle',
      ...shortHeartbeat,
    });
    expect(statuses.length).toBeGreaterThan(1);
    expect(cluster.events.filter((e) => e.reason === 'CordonedAhead')).toHaveLength(2);
  });

  it('in a wave, a drain a sibling marked ahead moments ago does not survey the wave again', async () => {
    // The drain of node-b marked node-a and node-c ahead of its own evictions.
    await world.invoke(
      world.handler(),
      lifecycleMessage({ EC2InstanceId: 'i-0bbbbbbbbbbbbbbbb', LifecycleActionToken: tokenB }),
    );
    const before = cluster.calls.length;
    await world.invoke(world.handler(), lifecycleMessage());
    const calls = cluster.calls.slice(before).map((c) => `${c.op} ${c.target}`);
    expect(calls.filter((c) => c.startsWith('list-marked') || c.startsWith('get-nodes'))).toEqual([]);
    expect(calls.filter((c) => c.startsWith('mark ')).map((c) => c.split(' ')[1])).toEqual(['node-a']);
  });

  it('marked ahead long ago, it surveys again, reading no sibling another drain already marked: one list of names says which', async () => {
    await world.invoke(
      world.handler(),
      lifecycleMessage({ EC2InstanceId: 'i-0bbbbbbbbbbbbbbbb', LifecycleActionToken: tokenB }),
    );
    world.clock.advanceTo(world.clock.now() + 120_000);
    const before = cluster.calls.length;
    await world.invoke(world.handler(), lifecycleMessage());
    const calls = cluster.calls.slice(before).map((c) => `${c.op} ${c.target}`);
    expect(calls.filter((c) => c.startsWith('list-marked'))).toHaveLength(1);
    // node-b (drained) and node-c (marked ahead) are not read or patched again.
    expect(calls.filter((c) => c.startsWith('get-nodes') && c !== 'get-nodes ')).toEqual([]);
    expect(calls.filter((c) => c.startsWith('mark ')).map((c) => c.split(' ')[1])).toEqual(['node-a']);
  });

  it('does not mark again when its own record was already there (a Lambda retry, a second delivery)', async () => {
    await world.invoke(world.handler(), lifecycleMessage());
    const before = cluster.calls.length;
    const leavingAsked = world.autoScaling.leavingGroup;
    let asked = 0;
    world.autoScaling.leavingGroup = async (group) => (asked++, leavingAsked.call(world.autoScaling, group));
    await world.invoke(world.handler(), lifecycleMessage(), undefined, 'request-1');
    expect(asked).toBe(0);
    expect(cluster.calls.slice(before).filter((c) => c.op === 'list-marked' || c.op === 'get-nodes')).toEqual([]);
  });

  it('in a wave larger than one drain marks, leaves out the marked ones, takes its own share first, then the rest before evicting', async () => {
    const ids = Array.from({ length: 120 }, (_, n) => `i-0${String(n).padStart(16, '0')}`);
    ids.forEach((id, n) => {
      cluster.addNode(`wave-${n}`, id);
      world.groups.set(id, 'workers');
      world.terminating.add(id);
    });
    // Half of the wave is marked already by other drains.
    for (let n = 0; n < 60; n++)
      cluster.updateNode(`wave-${n}`, {
        labels: { 'graceful-node-termination/owner': 'graceful-node-termination', [lbLabel]: 'true' },
        unschedulable: true,
        drain: { source: markedAhead('h'), notifiedAtMs: 0, startedAtMs: 0, updatedAtMs: 0, set: ['cordon'] },
      });
    await world.invoke(world.handler(), lifecycleMessage());
    const passes = cluster.calls
      .filter((c) => c.op === 'get-nodes')
      .map((c) => c.target.split(' ').filter((t) => t !== ''));
    // 62 unmarked (node-b, node-c and 60 of the wave): its share of 25, a pause, then the rest a share at a time.
    expect(passes.map((p) => p.length)).toEqual([siblingLimit, siblingLimit, 12]);
    expect(cluster.calls.filter((c) => c.op === 'list-marked')).toHaveLength(3);
    const read = passes.flat();
    expect(new Set(read).size).toBe(62);
    expect(read.every((id) => ids.indexOf(id) >= 60 || !ids.includes(id))).toBe(true);
    const ops = cluster.calls.map((c) => c.op);
    expect(ops.lastIndexOf('mark')).toBeLessThan(ops.indexOf('evict'));
    for (let n = 60; n < 120; n++)
      expect(cluster.nodes.get(`wave-${n}`)).toMatchObject({ unschedulable: true, drain: { aheadOf: instanceId } });
    // Another drain of the same wave starts from other siblings.
    expect(siblingsFirst('i-0other', ids.slice(60)).slice(0, siblingLimit)).not.toEqual(
      siblingsFirst(instanceId, ids.slice(60)).slice(0, siblingLimit),
    );
  });

  it('regression (issue 19, 27): a sibling whose Node is not named after its EC2 name is found by providerID and cordoned before the first eviction, in one scan', async () => {
    world.terminating.add('i-0eeeeeeeeeeeeeeee');
    world.groups.set('i-0eeeeeeeeeeeeeeee', 'workers');
    cluster.addNode('custom-name-e', 'i-0eeeeeeeeeeeeeeee');
    cluster.ec2Names.set('i-0eeeeeeeeeeeeeeee', 'ip-10-0-0-14.eu-west-1.compute.internal');
    expect(await world.runChain()).toEqual(['drained']);
    const ops = cluster.calls.map((c) => `${c.op} ${c.target}`);
    const firstEviction = ops.findIndex((o) => o.startsWith('evict'));
    expect(ops.slice(0, firstEviction)).toContain('mark custom-name-e label cordon');
    expect(cluster.nodes.get('custom-name-e')).toMatchObject({
      unschedulable: true,
      drain: { source: { kind: 'marked-ahead' }, aheadOf: instanceId },
    });
    expect(cluster.calls.filter((c) => c.op === 'list-nodes' && c.target !== instanceId)).toHaveLength(1);
  });

  it('named as EKS names nodes, a wave costs no scan', async () => {
    expect(await world.runChain()).toEqual(['drained']);
    expect(cluster.calls.filter((c) => c.op === 'list-nodes' && c.target !== instanceId)).toEqual([]);
  });

  it('a sibling whose node is nowhere is tried once, not in every pass', async () => {
    const ids = Array.from({ length: 40 }, (_, n) => `i-0${String(n).padStart(16, '0')}`);
    for (const id of ids) {
      world.groups.set(id, 'workers');
      world.terminating.add(id);
    }
    await world.invoke(world.handler(), lifecycleMessage());
    const read = cluster.calls
      .filter((c) => c.op === 'get-nodes')
      .flatMap((c) => c.target.split(' ').filter((t) => t !== ''));
    // 42 unmarked (the 40 and node-b, node-c): two passes, each instance asked for once.
    expect(read).toHaveLength(42);
    expect(new Set(read).size).toBe(42);
    expect(cluster.calls.filter((c) => c.op === 'list-marked')).toHaveLength(2);
  });

  it('a drain marked ahead moments ago gives that survey its time before evicting; one marked long ago does not wait', async () => {
    await world.runChain();
    const markedAt = cluster.nodes.get('node-b')!.drain!.startedAtMs;
    cluster.addPod(pod({ name: 'web-b', nodeName: 'node-b' }));
    cluster.calls.length = 0;
    await world.invoke(
      world.handler(),
      lifecycleMessage({ EC2InstanceId: 'i-0bbbbbbbbbbbbbbbb', LifecycleActionToken: tokenB }),
    );
    const eviction = cluster.calls.find((c) => c.op === 'evict')!;
    expect(eviction.atMs).toBeGreaterThanOrEqual(markedAt + surveyTakesMs);
    expect(eviction.atMs).toBeLessThan(markedAt + surveyTakesMs + 1_000);
    // node-c, marked ahead as long ago as the clock has moved since: no wait past the survey's time.
    await world.clock.sleep(60_000);
    cluster.addPod(pod({ name: 'web-c', nodeName: 'node-c' }));
    cluster.calls.length = 0;
    const before = world.clock.now();
    await world.invoke(
      world.handler(),
      lifecycleMessage({
        EC2InstanceId: 'i-0cccccccccccccccc',
        LifecycleActionToken: '5b1d0f3e-cccc-4ccc-8ccc-cccccccccccc',
      }),
    );
    expect(cluster.calls.find((c) => c.op === 'evict')!.atMs - before).toBeLessThan(1_000);
  });

  it('a share that covered every unmarked sibling needs no second pass', async () => {
    await world.invoke(world.handler(), lifecycleMessage());
    expect(cluster.calls.filter((c) => c.op === 'list-marked')).toHaveLength(1);
  });
});

// From the review of the wave change (dd06939; was test/unit/review/wave-review.test.ts).
const reset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

describe('cordon every doomed node first: an Auto Scaling endpoint that resets', () => {
  it('a failing Auto Scaling endpoint does not hold the first eviction for a minute in the best-effort sibling survey', async () => {
    const world = handlerWorld(env);
    const { cluster, clock } = world;
    cluster.addNode('node-a', instanceId);
    cluster.addNode('node-b', 'i-0bbbbbbbbbbbbbbbb');
    cluster.addPod(pod({ name: 'web-1', nodeName: 'node-a' }));
    for (const id of [instanceId, 'i-0bbbbbbbbbbbbbbbb']) {
      world.groups.set(id, 'workers');
      world.terminating.add(id);
    }
    // As runtime.ts wires it: the Auto Scaling port patient (60 s); DescribeAutoScalingGroups resets.
    const wrapped = patient(
      { leavingGroup: async (_g: string): Promise<readonly string[]> => Promise.reject(reset()) },
      'autoscaling',
      { clock, count: new AwsCallCount() },
    );
    world.autoScaling.leavingGroup = wrapped.leavingGroup;
    await world.invoke(world.handler(), lifecycleMessage());
    const markAt = cluster.calls.find((c) => c.op === 'mark')!.atMs;
    const evictAt = cluster.calls.find((c) => c.op === 'evict')!.atMs;
    // Before dd06939 a reset connection failed at once (after the SDK's own quick retries).
    expect(evictAt - markAt).toBeLessThan(5_000);
  });
});

// From the review of the wave change (these held; was test/unit/review/wave-review.test.ts).
describe('cordon every doomed node first: the marking passes of a wave', () => {
  function wave(n: number) {
    const world = handlerWorld(env);
    const { cluster } = world;
    cluster.addNode('node-a', instanceId);
    cluster.addPod(pod({ name: 'web-1', nodeName: 'node-a' }));
    world.groups.set(instanceId, 'workers');
    world.terminating.add(instanceId);
    const ids = Array.from({ length: n }, (_, k) => `i-0${String(k).padStart(16, '0')}`);
    ids.forEach((id, k) => {
      cluster.addNode(`wave-${k}`, id);
      world.groups.set(id, 'workers');
      world.terminating.add(id);
    });
    cluster.addNode('other-group', 'i-0eeeeeeeeeeeeeeee');
    world.groups.set('i-0eeeeeeeeeeeeeeee', 'other');
    world.terminating.add('i-0eeeeeeeeeeeeeeee');
    return { world, cluster, ids };
  }

  it('400 siblings: at most 12 passes (300), one pause, never another group, and the drain goes on', async () => {
    const { world, cluster } = wave(400);
    const status = (await world.invoke(world.handler(), lifecycleMessage())).records[0]!.status;
    expect(status).toBe('drained');
    expect(cluster.calls.filter((c) => c.op === 'list-marked')).toHaveLength(12);
    const marked = [...cluster.nodes.values()].filter((n) => n.drain?.aheadOf === instanceId);
    expect(marked).toHaveLength(300);
    expect(cluster.nodes.get('other-group')).toMatchObject({ unschedulable: false });
    const markAt = cluster.calls.find((c) => c.op === 'mark')!.atMs;
    const evictAt = cluster.calls.find((c) => c.op === 'evict')!.atMs;
    expect(evictAt - markAt).toBeLessThanOrEqual(1_500);
  });

  it('a lookup failing in the second pass stops the passes; the drain goes on', async () => {
    const { world, cluster } = wave(60);
    let n = 0;
    const real = cluster.findNodesOfInstances.bind(cluster);
    cluster.findNodesOfInstances = async (ids, o) => (++n === 2 ? Promise.reject(new Error('boom')) : real(ids, o));
    expect((await world.invoke(world.handler(), lifecycleMessage())).records[0]!.status).toBe('drained');
    expect(cluster.calls.filter((c) => c.op === 'list-marked')).toHaveLength(2);
  });

  it('cordons every share first and tells (CordonedAhead) after the passes: a pass never waits on the Events', async () => {
    const { world, cluster } = wave(60);
    const marksAtEachTell: number[] = [];
    const record = cluster.record.bind(cluster);
    cluster.record = async (event) => {
      if (event.reason === 'CordonedAhead')
        marksAtEachTell.push(cluster.calls.filter((c) => c.op === 'mark' && c.target.startsWith('wave-')).length);
      return record(event);
    };
    expect((await world.invoke(world.handler(), lifecycleMessage())).records[0]!.status).toBe('drained');
    expect(cluster.calls.filter((c) => c.op === 'list-marked')).toHaveLength(3);
    expect(marksAtEachTell).toEqual(Array.from({ length: 60 }, () => 60));
    const told = cluster.events.filter((e) => e.reason === 'CordonedAhead').map((e) => e.regarding.name);
    expect(new Set(told).size).toBe(60);
    const evictAt = cluster.calls.find((c) => c.op === 'evict')!.atMs;
    expect(cluster.calls.filter((c) => c.op === 'mark' && c.atMs > evictAt)).toEqual([]);
  });

  it('26 unmarked siblings: the pause is paid once for a single leftover; 25 or fewer: no pause', async () => {
    for (const [count, pauses] of [
      [25, false],
      [26, true],
    ] as const) {
      const { world, cluster } = wave(count);
      await world.invoke(world.handler(), lifecycleMessage());
      const markAt = cluster.calls.find((c) => c.op === 'mark')!.atMs;
      const evictAt = cluster.calls.find((c) => c.op === 'evict')!.atMs;
      expect(evictAt - markAt >= 500).toBe(pauses);
    }
  });
});
