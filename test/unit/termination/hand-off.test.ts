// Drains longer than one invocation: hand-offs through the topic, heartbeats before the
// hook's timeout, one deadline measured from the original notification, one completion,
// and duplicate hand-off deliveries that never fork the work.
import { beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../lambda/shared/config.js';
import { ServiceBusyError } from '../../../lambda/shared/errors.js';
import { lifecycleDeadlines } from '../../../lambda/termination/deadlines.js';
import { actionIdOfToken } from '../../../lambda/cluster/marks/action-id.js';
import { parseLifecycleMessage } from '../../../lambda/inbound/lifecycle-message.js';
import {
  handlerWorld,
  FakeClock,
  FakeCluster,
  FakeHandOffs,
  FakeLifecycleActions,
  pdbBlocks,
  pod,
} from '../../fakes/fake-world.js';
import { handOffDeploymentEnv, instanceId, lifecycleMessage, snsEvent } from '../../fixtures/notifications.js';

const baseEnv = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  LOAD_BALANCER_DELAY_SECONDS: '60',
  HEARTBEAT_TIMEOUT_SECONDS: '1800',
  HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:gnt-topic',
};
const invocationMs = 900_000; // Lambda's 15 minutes

describe('drains longer than one invocation', () => {
  let clock: FakeClock;
  let cluster: FakeCluster;
  let lifecycle: FakeLifecycleActions;
  let handOffs: FakeHandOffs;
  let t0: number;
  let handlerWith: ReturnType<typeof handlerWorld>['handler'];
  let runChain: ReturnType<typeof handlerWorld>['runChain'];

  beforeEach(() => {
    ({ clock, cluster, lifecycle, handOffs, handler: handlerWith, runChain } = handlerWorld(baseEnv));
    t0 = clock.now();
    cluster.addNode('node-a', instanceId);
  });

  it('hands a 40-minute PDB wait on twice, heart-beating before each timeout, and completes once', async () => {
    const web = cluster.addPod(pod({ name: 'web' }));
    let budgetOpen = false;
    cluster.evictionRules.push((p) =>
      p.uid === web.uid && !budgetOpen ? pdbBlocks('web-pdb', () => true)(p) : 'accept',
    );
    clock.at(t0 + 40 * 60_000, () => (budgetOpen = true));

    const results = await runChain({ DRAIN_TIMEOUT_SECONDS: '7200' });

    expect(results).toEqual(['handed-off', 'handed-off', 'drained']);
    expect(handOffs.sent).toHaveLength(2);
    // The original Time travels with every hand-off.
    expect(handOffs.sent.map((m) => m['Time'])).toEqual(['2026-11-22T10:00:00.000Z', '2026-11-22T10:00:00.000Z']);
    // A pointer: which hand-off of which action (the claim names the action by its token's
    // hash, the number, the claiming request id); where the drain stands is on the node.
    const action = actionIdOfToken('71cd9f4c-aaaa-bbbb-cccc-ddddeeeeffff');
    expect(handOffs.sent.map((m) => m['GracefulNodeTerminationHandOff'])).toEqual([
      { count: 1, claim: `${action}/1/request-1` },
      { count: 2, claim: `${action}/2/request-2` },
    ]);
    expect(JSON.stringify(cluster.nodes.get('node-a'))).not.toContain('71cd9f4c-aaaa');
    // Heartbeats: one as each invocation starts (verify) and one before each hand-off; the
    // timer (1800 s) never runs out between two of them or since the notification.
    const beats = [t0, ...lifecycle.heartbeats.map((h) => h.atMs), lifecycle.completions[0]!.atMs];
    expect(lifecycle.heartbeats).toHaveLength(5);
    for (let i = 1; i < beats.length; i++) expect(beats[i]! - beats[i - 1]!).toBeLessThan(1_800_000);
    expect(lifecycle.completions).toEqual([expect.objectContaining({ result: 'CONTINUE' })]);
    expect(lifecycle.completions[0]!.atMs - t0).toBeGreaterThanOrEqual(40 * 60_000 + 60_000);
    expect(cluster.reasons().filter((r) => r === 'Node/DrainStarted')).toHaveLength(1);
  });

  it('keeps one deadline across invocations: times out at DRAIN_TIMEOUT_SECONDS from the notification', async () => {
    const web = cluster.addPod(pod({ name: 'web' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));

    const results = await runChain({ DRAIN_TIMEOUT_SECONDS: '1500' });

    expect(results).toEqual(['handed-off', 'timed-out']);
    expect(cluster.reasons()).toContain('Node/DrainTimedOut');
    // Deadline at +1500 s; under the force policy the pod (30 s grace) is deleted at 1470 s so
    // its grace ends by the deadline; it leaves at once, then the 60 s load-balancer wait.
    expect(lifecycle.completions.map((c) => (c.atMs - t0) / 1000)).toEqual([1470 + 60]);
    expect(cluster.deletions.map((d) => [(d.atMs - t0) / 1000, d.gracePeriodSeconds])).toEqual([[1470, 30]]);
  });

  it('hands on a load-balancer wait that does not fit the invocation', async () => {
    const web = cluster.addPod(pod({ name: 'web' }));
    let budgetOpen = false;
    cluster.evictionRules.push((p) =>
      p.uid === web.uid && !budgetOpen ? pdbBlocks('web-pdb', () => true)(p) : 'accept',
    );
    clock.at(t0 + 850_000, () => (budgetOpen = true));

    const results = await runChain({ DRAIN_TIMEOUT_SECONDS: '3600' });

    expect(results).toEqual(['handed-off', 'drained']);
    expect(handOffs.sent[0]!['GracefulNodeTerminationHandOff']).toEqual({ count: 1, claim: expect.any(String) });
    // The record on the node says when the drain ended: the wait runs from there.
    const drainedAt = cluster.nodes.get('node-a')!.drain!.drained!.atMs;
    const waitUntil = drainedAt + 60_000;
    expect(lifecycle.completions[0]!.atMs).toBeGreaterThanOrEqual(waitUntil);
    expect(lifecycle.completions[0]!.atMs - waitUntil).toBeLessThan(1_000);
  });

  it('lets only one of two deliveries of the same hand-off carry on', async () => {
    cluster.addPod(pod({ name: 'web' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', () => true));
    const handle = handlerWith({ DRAIN_TIMEOUT_SECONDS: '7200' });
    const run = (message: Record<string, unknown>) => {
      const end = clock.now() + invocationMs;
      return handle(snsEvent(message), { getRemainingTimeInMillis: () => end - clock.now() });
    };
    await run(lifecycleMessage());
    const first = handOffs.sent[0]!;

    const a = await run(first);
    const evictionsBefore = cluster.calls.filter((c) => c.op === 'evict').length;
    const b = await run(first); // SNS delivered it twice

    // The second delivery sees the node's hand-off annotation has moved on and does nothing.
    expect(cluster.calls.filter((c) => c.op === 'evict').length).toBe(evictionsBefore);
    expect(a.records![0]!.status).toBe('handed-off');
    expect(b.records![0]!.status).toBe('superseded');
    expect(handOffs.sent.map((m) => (m['GracefulNodeTerminationHandOff'] as { count: number }).count)).toEqual([1, 2]);
    expect(lifecycle.completions).toEqual([]);
  });

  it('stops quietly when the action is already over as a hand-off arrives', async () => {
    cluster.addPod(pod({ name: 'web' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', () => true));
    const handle = handlerWith({ DRAIN_TIMEOUT_SECONDS: '7200' });
    const end = clock.now() + invocationMs;
    await handle(snsEvent(lifecycleMessage()), { getRemainingTimeInMillis: () => end - clock.now() });
    // Meanwhile somebody completed the action (or its timer ran out).
    await lifecycle.complete(
      {
        autoScalingGroupName: 'workers',
        lifecycleHookName: 'workers-terminate',
        lifecycleActionToken: '71cd9f4c-aaaa-bbbb-cccc-ddddeeeeffff',
        instanceId,
      },
      'CONTINUE',
    );

    const result = await handle(snsEvent(handOffs.sent[0]!), { getRemainingTimeInMillis: () => invocationMs });

    expect(result.records![0]!.status).toBe('superseded');
    expect(handOffs.sent).toHaveLength(1);
    expect(cluster.calls.filter((c) => c.op === 'evict').length).toBeGreaterThan(0);
  });

  it('without a hand-off topic, a drain still ends within its invocation', async () => {
    cluster.addPod(pod({ name: 'web' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', () => true));
    const handle = handlerWith({ HAND_OFF_TOPIC_ARN: '', DRAIN_TIMEOUT_SECONDS: '7200' });
    const result = await handle(snsEvent(lifecycleMessage()), { getRemainingTimeInMillis: () => invocationMs });
    expect(result.records![0]!.status).toBe('timed-out');
    expect(lifecycle.completions[0]!.atMs - t0).toBeLessThanOrEqual(invocationMs);
  });
});

describe('lifecycleDeadlines', () => {
  const t = Date.parse('2026-11-22T10:00:00.000Z');

  it("never plans past the hook's global cap, min(48 h, 100 x HeartbeatTimeout)", () => {
    // A combination parseConfig refuses (it cannot fit the cap, nor the launch wait, nor a resume):
    // the plan clamps to the cap all the same.
    const config = { ...parseConfig(baseEnv), heartbeatTimeoutSeconds: 60, drainTimeoutSeconds: 172_800 };
    const plan = lifecycleDeadlines(config, {
      notifiedAtMs: t,
      nowMs: t,
      invocationEndMs: t + invocationMs,
      canHandOff: true,
    });
    // 100 x 60 s = 6000 s, minus the 60 s load-balancer wait and the 20 s margin.
    expect((plan.drainDeadlineMs - t) / 1000).toBe(5920);
    // And this invocation hands on before 80 % of the 60 s heartbeat timeout.
    expect((plan.invocationStopMs - t) / 1000).toBe(48);
  });

  it('measures the deadline from the notification, not from a late delivery', () => {
    const config = parseConfig({ ...baseEnv, DRAIN_TIMEOUT_SECONDS: '900' });
    const lateBy = 600_000;
    const plan = lifecycleDeadlines(config, {
      notifiedAtMs: t,
      nowMs: t + lateBy,
      invocationEndMs: t + lateBy + invocationMs,
      canHandOff: true,
    });
    expect((plan.drainDeadlineMs - t) / 1000).toBe(900);
  });

  it('rejects a malformed hand-off field with the field named', () => {
    const parsed = parseLifecycleMessage(lifecycleMessage({ GracefulNodeTerminationHandOff: { count: 0 } }));
    expect(parsed).toEqual({
      ok: false,
      field: 'GracefulNodeTerminationHandOff',
      reason: 'must be an object with an integer count >= 1',
    });
    expect(
      parseLifecycleMessage(lifecycleMessage({ GracefulNodeTerminationHandOff: { count: 1, claim: 7 } })),
    ).toMatchObject({
      ok: false,
      field: 'GracefulNodeTerminationHandOff.claim',
    });
  });
});

// From the review of issues 20 and 21 (each failed on d77bbb3; was test/unit/review/attacks-3.test.ts).
describe('a hand-off whose heartbeat is throttled', () => {
  // Found (medium). retryLater() redelivers only while the notification's Time is within one
  // heartbeat timeout (30 min by default). A hand-off keeps the original Time (for the log), so
  // every hand-off of a drain longer than that (DRAIN_TIMEOUT_SECONDS and BATCH_WAIT_SECONDS may
  // each be an hour; every hand-off heartbeats the action) fails its invocation when Auto
  // Scaling throttles the heartbeat, although the action was extended moments ago: the chain
  // is left to Lambda's two retries, which issue 21 says throttling must never cost while the
  // hook has time. Bound it by when the hand-off was sent (or the action's cap), not by Time.
  it('a hand-off of a drain older than the heartbeat timeout, heartbeat throttled: sent again, not failed', async () => {
    const world = handlerWorld(handOffDeploymentEnv);
    world.cluster.addNode('node-a', instanceId);
    world.lifecycle.failWith = new ServiceBusyError(
      'autoscaling:heartbeat was throttled through every retry: Rate exceeded',
    );
    const handOff = lifecycleMessage({
      Service: 'graceful-node-termination',
      Time: new Date(world.clock.now() - 2 * 3600_000).toISOString(),
      GracefulNodeTerminationHandOff: { count: 4, claim: 'hand-off-4' },
    });
    const result = await world.invoke(world.handler(), handOff);
    expect(result.records[0]!.status).toBe('retried-later');
    expect(world.handOffs.sent).toHaveLength(1);
    expect(world.cluster.calls).toEqual([]);
  });
});
