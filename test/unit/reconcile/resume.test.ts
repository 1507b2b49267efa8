// The reconciler's resume of a lost drain (reconcile/reconcile.ts, termination/verify.ts): a resumed drain for a
// new action starts afresh whatever record an earlier action left on the node, a late or forged hand-off never
// ends or doubles a running drain, and a resume whose action is gone writes nothing.
import { beforeEach, describe, expect, it } from 'vitest';
import { excludeFromLoadBalancersLabel, refreshLabel } from '../../../lambda/cluster/marks/mark-keys.js';
import { type DrainRecord } from '../../../lambda/cluster/model.js';
import { handlerWorld, pdbBlocks, pod } from '../../fakes/fake-world.js';
import { scheduledEvent } from '../../fixtures/deliveries.js';
import { gntAOwner, handOffDeploymentEnv, instanceId, lifecycleMessage } from '../../fixtures/notifications.js';
import { lifecycleAction, resumedAction } from '../../fixtures/drain-sources.js';

const env = handOffDeploymentEnv;
const owner = gntAOwner;
const byReconciler = (m: Record<string, unknown>) =>
  (m['GracefulNodeTerminationHandOff'] as { resumedBy?: string } | undefined)?.resumedBy === 'reconciler';

// From the adversarial review of issue 19 ("Found": broke e12925a; was test/unit/review/attacks.test.ts).
describe('the reconciler and the record it resumes from', () => {
  let world: ReturnType<typeof handlerWorld>;
  let t0: number;
  const pass = () => world.invokeRaw(world.handler(), scheduledEvent());
  beforeEach(() => {
    world = handlerWorld(env);
    t0 = world.clock.now();
    world.groups.set(instanceId, 'workers');
  });

  /** The record an earlier termination of this instance left (a warm-pool return not yet given back, a retained instance). */
  const oldRecord = (o: Partial<DrainRecord> = {}): DrainRecord => {
    const old = t0 - 2 * 86_400_000;
    return {
      source: lifecycleAction('earlier-token', 'workers-terminate'),
      notifiedAtMs: old,
      startedAtMs: old,
      updatedAtMs: old,
      set: ['exclude-from-load-balancers', 'cordon'],
      ...o,
    };
  };

  // Found (high). A by-instance resume adopts whatever record is on the node. When the
  // record belongs to an EARLIER action of the instance (its age alone makes it "stalled" the
  // moment a new terminate action holds the instance), the new action inherits its deadlines
  // and phase: a record whose drain had ended completes CONTINUE at once with every pod on
  // the node; one that had not has a deadline of "now" (no eviction window, no drain timeout).
  it.each([
    ['whose drain had ended (settle)', true],
    ['whose drain had not ended', false],
  ])('a resumed drain for a new action does not inherit an old record %s', async (_what, ended) => {
    world.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: { ...owner, [excludeFromLoadBalancersLabel]: 'true' },
      drain: oldRecord(ended ? { drained: { atMs: t0 - 2 * 86_400_000 + 60_000, outcome: 'drained' } } : {}),
    });
    const web = world.cluster.addPod(pod({ name: 'web' }));
    world.cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    // A new terminate action holds the instance; its own notification is still on its way.
    world.terminating.add(instanceId);
    await pass();
    const resumed = world.handOffs.sent.find(
      (m) => (m['GracefulNodeTerminationHandOff'] as { resumedBy?: string }).resumedBy === 'reconciler',
    );
    expect(resumed).toBeDefined();
    const started = world.clock.now();

    await world.invoke(world.handler(), resumed!, 300_000);

    // A fresh drain (DRAIN_TIMEOUT_SECONDS 900 from now) would still be evicting after five minutes.
    expect(
      world.lifecycle.completions.map((c) => ({ result: c.result, afterSeconds: (c.atMs - started) / 1000 })),
    ).toEqual([]);
  });

  // An `instance:<id>` action id names every by-instance drain of that instance alike. The marks
  // and claim of an EARLIER such drain (the instance came back from the warm pool, its launch
  // admitted unchecked) must not make a NEW action's own notification stand down.
  it("a new action's notification is not superseded by an earlier by-instance drain's claim", async () => {
    const old = t0 - 2 * 86_400_000;
    world.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: { ...owner, [excludeFromLoadBalancersLabel]: 'true' },
      drain: oldRecord({ source: resumedAction(instanceId), drained: { atMs: old + 60_000, outcome: 'drained' } }),
      handOffClaim: `instance:${instanceId}/2/request-old`,
    });
    const web = world.cluster.addPod(pod({ name: 'web' }));
    world.cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    world.terminating.add(instanceId);
    const result = await world.invoke(world.handler({ DRAIN_TIMEOUT_SECONDS: '3600' }), lifecycleMessage(), 300_000);
    expect(result.records[0]!.status).toBe('handed-off');
  });

  // The by-instance form of a hand-off (resumedBy reconciler, no token) must be no stronger than
  // the token form: a reader of nodes who can invoke the function copies the claim from the node
  // and sends it with an old Time. Its Time must not become the drain's deadline.
  it('a forged by-instance hand-off with an old Time does not end a running drain', async () => {
    world.terminating.add(instanceId);
    world.cluster.addNode('node-a', instanceId);
    const web = world.cluster.addPod(pod({ name: 'web' }));
    world.cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    const handle = world.handler({ DRAIN_TIMEOUT_SECONDS: '3600' });
    expect((await world.invoke(handle, lifecycleMessage(), 200_000)).records[0]!.status).toBe('handed-off');
    const claim = world.cluster.nodes.get('node-a')!.handOffClaim;
    const forged = lifecycleMessage({
      LifecycleActionToken: undefined,
      Time: '2020-01-01T00:00:00.000Z',
      GracefulNodeTerminationHandOff: { count: 1, claim, resumedBy: 'reconciler' },
    });
    const started = world.clock.now();
    await world.invoke(handle, forged, 200_000);
    expect(
      world.lifecycle.completions.map((c) => ({ result: c.result, afterSeconds: (c.atMs - started) / 1000 })),
    ).toEqual([]);
    expect(world.cluster.podsOn('node-a').map((p) => p.name)).toEqual(['web']);
  });

  // Found (medium). "Stalled" is measured from the record's last write (the previous
  // invocation's claim), but an invocation's stretch runs from when it STARTS. A hand-off
  // delivered a little late (Lambda's async queue under throttling keeps events for up to the
  // heartbeat timeout; a Lambda retry waits 1-2 min) is still running when idle passes
  // 880 s + 60 s: the reconciler resumes a live chain, and its hand-off passes verify (the
  // claim has not moved yet): two invocations drain the node at once.
  it('does not resume a chain whose hand-off is running, only late', async () => {
    world.terminating.add(instanceId);
    world.cluster.addNode('node-a', instanceId);
    const web = world.cluster.addPod(pod({ name: 'web' }));
    world.cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    const handle = world.handler({ DRAIN_TIMEOUT_SECONDS: '7200', LOAD_BALANCER_DELAY_SECONDS: '0' });
    expect((await world.invoke(handle, lifecycleMessage(), 900_000)).records[0]!.status).toBe('handed-off');
    const claimedAt = world.cluster.nodes.get('node-a')!.drain!.updatedAtMs;
    const first = world.handOffs.sent.at(-1)!;

    // The hand-off is delivered two minutes late and runs its full stretch; the schedule fires meanwhile.
    world.clock.advanceTo(claimedAt + 120_000);
    let reconcilerStatus: string | undefined;
    let pending: Promise<unknown> | undefined;
    world.clock.at(claimedAt + 950_000, () => {
      pending = pass().then(async () => {
        const resumed = world.handOffs.sent.find(
          (m) => (m['GracefulNodeTerminationHandOff'] as { resumedBy?: string }).resumedBy === 'reconciler',
        );
        if (resumed) reconcilerStatus = (await world.invoke(world.handler(), resumed, 900_000)).records[0]!.status;
      });
    });
    const running = await world.invoke(handle, first, 900_000);
    await pending;

    expect(running.records[0]!.status).toBe('handed-off');
    expect(world.cluster.reasons()).not.toContain('Node/DrainResumed');
    expect(reconcilerStatus ?? 'not resumed').toMatch(/not resumed|superseded/);
  });

  // Found (low). After our CONTINUE, another terminate hook (a log shipper's, say) can hold the
  // instance in Terminating:Wait for hours. The record is never told the action completed, so
  // every ~16 min the reconciler "resumes" it: a hand-off, a heartbeat, a DrainResumed Warning.
  it('does not resume a drain it already completed while another hook holds the instance', async () => {
    world.terminating.add(instanceId);
    world.cluster.addNode('node-a', instanceId);
    await world.runChain({ LOAD_BALANCER_DELAY_SECONDS: '0' });
    expect(world.lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
    const sentBefore = world.handOffs.sent.length;
    for (let i = 1; i <= 4; i++) {
      world.clock.advanceTo(t0 + i * 17 * 60_000);
      await pass();
    }
    expect(world.handOffs.sent.length - sentBefore).toBe(0);
    expect(world.cluster.reasons().filter((r) => r === 'Node/DrainResumed')).toEqual([]);
  });

  // Found (low-medium). One failing DescribeInstanceRefreshes (a group name read from a
  // node's refresh-group annotation that AWS rejects: deleted, > 255 characters, written by
  // whoever may patch that node, its own kubelet included) throws the whole pass: no other
  // node's marks are ever taken back while that annotation stays.
  it("one node's refresh group that Auto Scaling refuses does not stop the pass for every other node", async () => {
    world.clock.advanceTo(t0 + 10 * 60_000);
    world.cluster.addNode('stale', instanceId, {
      unschedulable: true,
      labels: { ...owner, [excludeFromLoadBalancersLabel]: 'true' },
      drain: oldRecord(),
    });
    world.cluster.addNode('odd', 'i-0fedcba9876543210', {
      labels: { ...owner, [refreshLabel]: 'r-9' },
      refreshGroup: 'x'.repeat(300),
    });
    const real = world.autoScaling.refreshStatuses.bind(world.autoScaling);
    world.autoScaling.refreshStatuses = async (group, ids) => {
      if (group.length > 255)
        throw Object.assign(
          new Error('1 validation error detected: Value at autoScalingGroupName failed to satisfy constraint'),
          { name: 'ValidationError' },
        );
      return real(group, ids);
    };
    await pass().catch(() => undefined);
    expect(world.cluster.nodes.get('stale')).toMatchObject({ unschedulable: false, drain: undefined });
  });

  // Found (medium, a race). mark() is an unconditional merge patch computed from the node as
  // verify read it. If the reconciler takes back a stale record of an earlier action between
  // that read and the write (it described the instance InService just before the new terminate
  // began), the new record inherits "set: cordon, label" while the patch sends neither (they
  // were already there when read): the node is drained schedulable and still behind the load
  // balancers, and evicted pods can land straight back on it.
  it('a drain whose stale marks are taken back between its read and its mark still cordons and labels', async () => {
    // Every node read from the API server carries a resourceVersion.
    world.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: { ...owner, [excludeFromLoadBalancersLabel]: 'true' },
      drain: oldRecord(),
      resourceVersion: '1',
    });
    world.cluster.addPod(pod({ name: 'web', terminationMs: 5_000 }));
    const read = world.cluster.findNodeByInstanceId.bind(world.cluster);
    let raced = false;
    world.cluster.findNodeByInstanceId = async (id) => {
      const seen = await read(id);
      if (!raced) {
        raced = true;
        await pass(); // the reconciler's unmark lands here (it saw the instance InService)
      }
      return seen;
    };
    await world.invoke(world.handler({ LOAD_BALANCER_DELAY_SECONDS: '0' }), lifecycleMessage());
    const node = world.cluster.nodes.get('node-a')!;
    expect(raced).toBe(true);
    expect({
      recordSays: node.drain?.set,
      unschedulable: node.unschedulable,
      label: node.labels[excludeFromLoadBalancersLabel],
    }).toEqual({
      recordSays: ['exclude-from-load-balancers', 'cordon'],
      unschedulable: true,
      label: 'true',
    });
  });
});

// From the second adversarial review ("Found": broke 31bd7d5; was test/unit/review/attacks-2.test.ts).
describe('by-instance resumes', () => {
  let world: ReturnType<typeof handlerWorld>;
  let t0: number;
  const pass = () => world.invokeRaw(world.handler(), scheduledEvent());
  beforeEach(() => {
    world = handlerWorld(env);
    t0 = world.clock.now();
    world.groups.set(instanceId, 'workers');
  });

  // Found (high). The first review's fix gave a by-instance resume a timeline of its own, but
  // mark.ts still adopts any record whose action is `instance:<id>` as "ours". Every by-instance
  // drain of an instance has that same id, so when the record on the node is an EARLIER
  // termination's by-instance drain (that termination was itself resumed by the reconciler; the
  // instance went to the warm pool, came back with its give-back lost, and is leaving again),
  // the new resume inherits its deadlines and phase: a record whose drain had ended completes
  // CONTINUE at once with every pod still on the node (the sha256 form of this attack is
  // the first test of the block above, which passes).
  it('a resumed drain for a new action does not inherit an earlier by-instance drain that had ended', async () => {
    const old = t0 - 2 * 86_400_000;
    const earlier: DrainRecord = {
      source: resumedAction(instanceId, 'workers-terminate'),
      notifiedAtMs: old,
      startedAtMs: old,
      updatedAtMs: old,
      set: ['exclude-from-load-balancers', 'cordon'],
      drained: { atMs: old + 60_000, outcome: 'drained' },
    };
    world.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: { ...owner, [excludeFromLoadBalancersLabel]: 'true' },
      drain: earlier,
      handOffClaim: `instance:${instanceId}/3/request-old`,
    });
    const web = world.cluster.addPod(pod({ name: 'web' }));
    world.cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    // A new terminate action holds the instance; its own notification is still on its way.
    world.terminating.add(instanceId);
    await pass();
    const resumed = world.handOffs.sent.find(byReconciler);
    expect(resumed).toBeDefined();
    const started = world.clock.now();

    await world.invoke(world.handler(), resumed!, 300_000);

    // A fresh drain (DRAIN_TIMEOUT_SECONDS 900 from the resume) would still be evicting after five minutes.
    expect({
      completions: world.lifecycle.completions.map((c) => ({
        result: c.result,
        afterSeconds: (c.atMs - started) / 1000,
      })),
      podsLeft: world.cluster.podsOn('node-a').map((p) => p.name),
    }).toEqual({ completions: [], podsLeft: ['web'] });
  });

  // Found (medium). docs/reconciler.md: "a notification of the same action that arrives after
  // the resume (a delayed delivery) stands down (superseded): the by-instance drain carries that
  // action". verify.ts only looks for a by-instance CLAIM, which the by-instance drain writes
  // when it first hands on, up to 15 minutes after it began (never, if it ends within one
  // invocation). A notification delivered in that window starts a second drain of the same
  // node: another DrainStarted, its own record over the by-instance one, and two invocations
  // evicting at once until one of them loses the claim.
  it('a delayed notification of the action a by-instance drain carries stands down while that drain is in its first invocation', async () => {
    world.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: { ...owner, [excludeFromLoadBalancersLabel]: 'true' },
      // An earlier termination's record (no claim): stalled as soon as the new action holds the instance.
      drain: {
        source: lifecycleAction('earlier-token', 'workers-terminate'),
        notifiedAtMs: t0 - 86_400_000,
        startedAtMs: t0 - 86_400_000,
        updatedAtMs: t0 - 86_400_000,
        set: ['cordon'],
      },
    });
    const web = world.cluster.addPod(pod({ name: 'web' }));
    world.cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    world.terminating.add(instanceId);
    // The new action began at t0 (the notification's Time); the reconciler finds it a minute later.
    world.clock.advanceTo(t0 + 60_000);
    await pass();
    const resumed = world.handOffs.sent.find(byReconciler)!;
    expect(resumed).toBeDefined();

    let late: string | undefined;
    let pending: Promise<unknown> | undefined;
    // Two minutes into the by-instance drain, the action's own notification finally arrives.
    world.clock.at(world.clock.now() + 120_000, () => {
      pending = world.invoke(world.handler(), lifecycleMessage(), 120_000).then((r) => (late = r.records[0]!.status));
    });
    await world.invoke(world.handler(), resumed, 600_000);
    await pending;

    expect({ late, drainsStarted: world.cluster.reasons().filter((r) => r === 'Node/DrainStarted').length }).toEqual({
      late: 'superseded',
      drainsStarted: 0,
    });
  });
});

// From the second adversarial review (it held; was test/unit/review/attacks-2.test.ts).
describe('a resume whose action is gone', () => {
  it('a reconciler resume whose heartbeat finds no action of our hook publishes nothing and touches nothing', async () => {
    const world = handlerWorld(env);
    const t = world.clock.now();
    world.groups.set(instanceId, 'workers');
    world.terminating.add(instanceId);
    world.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: owner,
      drain: {
        source: lifecycleAction('x', 'workers-terminate'),
        notifiedAtMs: t - 86_400_000,
        startedAtMs: t - 86_400_000,
        updatedAtMs: t - 86_400_000,
        set: ['cordon'],
      },
    });
    await world.lifecycle.complete(
      { autoScalingGroupName: 'workers', lifecycleHookName: 'workers-terminate', instanceId },
      'CONTINUE',
    );
    const before = world.cluster.nodes.get('node-a')!.drain;
    await world.invokeRaw(world.handler(), scheduledEvent());
    expect(world.handOffs.sent).toEqual([]);
    expect(world.cluster.nodes.get('node-a')!.drain).toEqual(before);
  });
});
