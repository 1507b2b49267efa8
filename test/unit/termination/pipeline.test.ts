import { beforeEach, describe, expect, it } from 'vitest';
import { defaultDrainRuleSettings, type DrainRuleSettings } from '../../../lambda/cluster/rules/drain-rules.js';
import { DeadlinePolicy } from '../../../lambda/shared/deadline-policy.js';
import { terminate } from '../../../lambda/termination/pipeline.js';
import type { TerminateDeps } from '../../../lambda/termination/state.js';
import { lifecycleEnding } from '../../../lambda/termination/terminate-hook.js';
import { FakeClock, FakeCluster, FakeLifecycleActions, MemoryLog, pdbBlocks, pod } from '../../fakes/fake-world.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

const instanceId = 'i-0123456789abcdef0';
const action = {
  autoScalingGroupName: 'workers',
  lifecycleHookName: 'workers-terminate',
  lifecycleActionToken: 'token-1',
  instanceId,
};

/** This test's options, flat: what a trigger's plan and request say. */
interface TerminateOptions {
  readonly action: typeof action;
  readonly notifiedAtMs: number;
  readonly requestId: string;
  readonly drainDeadlineMs: number;
  readonly latestDrainEndMs: number;
  readonly minEvictionWindowMs: number;
  readonly invocationStopMs: number;
  readonly deadlinePolicy: 'force' | 'leave' | 'retain';
  readonly loadBalancerDelaySeconds: number;
  readonly evictionConcurrency: number;
  readonly blockedReportMs?: number;
  readonly drainRules?: DrainRuleSettings;
}

/** The pipeline (verify -> mark -> drain -> settle -> complete) as the terminate hook asks for it, once confirmed. */
const terminateNode = (o: TerminateOptions, deps: TerminateDeps) =>
  terminate(
    {
      instance: { instanceId: o.action.instanceId, group: o.action.autoScalingGroupName },
      source: lifecycleAction(o.action.lifecycleActionToken, o.action.lifecycleHookName),
      notifiedAtMs: o.notifiedAtMs,
      requestId: o.requestId,
      deadlinesFrom: () => ({
        drainDeadlineMs: o.drainDeadlineMs,
        latestDrainEndMs: o.latestDrainEndMs,
        invocationStopMs: o.invocationStopMs,
        minEvictionWindowMs: o.minEvictionWindowMs,
        loadBalancerDelayMs: o.loadBalancerDelaySeconds * 1000,
      }),
      settings: {
        deadlinePolicy: o.deadlinePolicy as DeadlinePolicy,
        waitForVolumeDetach: true,
        blockedReportSeconds: (o.blockedReportMs ?? 120_000) / 1000,
        evictionConcurrency: o.evictionConcurrency,
        ...(o.drainRules ?? defaultDrainRuleSettings),
        cordonDoomedSiblings: false,
        surge: undefined,
        deploymentName: 'graceful-node-termination',
      },
      ending: lifecycleEnding(
        { ...o.action, time: new Date(o.notifiedAtMs), destination: undefined },
        deps,
        deps.events,
      ),
    },
    deps,
  );

describe('a termination (verify, mark, drain, settle, complete)', () => {
  let clock: FakeClock;
  let cluster: FakeCluster;
  let lifecycle: FakeLifecycleActions;
  let log: MemoryLog;
  let deps: TerminateDeps;
  let options: TerminateOptions;

  beforeEach(() => {
    clock = new FakeClock();
    cluster = new FakeCluster(clock);
    lifecycle = new FakeLifecycleActions(clock);
    log = new MemoryLog();
    deps = { nodes: cluster, pods: cluster, events: cluster, volumes: cluster, lifecycle, clock, log };
    options = {
      action,
      notifiedAtMs: clock.now(),
      requestId: 'request-1',
      drainDeadlineMs: clock.now() + 300_000,
      latestDrainEndMs: clock.now() + 48 * 3600_000,
      minEvictionWindowMs: 0,
      invocationStopMs: Number.POSITIVE_INFINITY,
      deadlinePolicy: 'leave',
      loadBalancerDelaySeconds: 60,
      evictionConcurrency: 8,
    };
    cluster.addNode('node-a', instanceId);
  });

  it('labels, cordons, evicts non-DaemonSet pods, waits 60 s, then completes CONTINUE', async () => {
    // Prepare: the managed-node-group story from the audit log.
    cluster.addPod(pod({ name: 'nginx-1', terminationMs: 4_000 }));
    cluster.addPod(pod({ name: 'coredns-1', namespace: 'kube-system', priorityClassName: 'system-cluster-critical' }));
    cluster.addPod(pod({ name: 'aws-node-x', namespace: 'kube-system', controllerKind: 'DaemonSet' }));
    cluster.addPod(pod({ name: 'kube-proxy-x', namespace: 'kube-system', controllerKind: 'DaemonSet' }));
    const start = clock.now();

    // Act
    const report = await terminateNode(options, deps);

    // Assess
    expect(report.outcome).toBe('drained');
    expect(report.lifecycleAction).toBe('completed');
    expect(
      cluster.calls
        .filter((c) => c.op !== 'list-nodes' && c.op !== 'watch-pods' && c.op !== 'watch-attachments')
        .map((c) => `${c.op} ${c.target}`),
    ).toEqual(['mark node-a label cordon', 'evict default/nginx-1', 'evict kube-system/coredns-1']);
    // coredns (critical) waits until nginx has finished terminating.
    const corednsEviction = cluster.calls.find((c) => c.target === 'kube-system/coredns-1')!;
    expect(corednsEviction.atMs - start).toBe(4_000);
    expect(lifecycle.completions).toEqual([{ action, result: 'CONTINUE', atMs: start + 4_000 + 60_000 }]);
    expect(
      cluster
        .podsOn('node-a')
        .map((p) => p.name)
        .sort(),
    ).toEqual(['aws-node-x', 'kube-proxy-x']);
    expect(cluster.nodes.get('node-a')).toMatchObject({
      unschedulable: true,
      labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' },
    });
    expect(cluster.reasons()).toEqual([
      'Node/DrainStarted',
      'Node/Cordoned',
      'Node/Drained',
      'Node/LifecycleActionCompleted',
    ]);
  });

  it('skips mirror and finished pods, evicts unmanaged and emptyDir pods', async () => {
    cluster.addPod(
      pod({ name: 'static', annotations: { 'kubernetes.io/config.mirror': 'abc' }, controllerKind: 'Node' }),
    );
    cluster.addPod(pod({ name: 'job-done', phase: 'Succeeded', controllerKind: 'Job' }));
    cluster.addPod(pod({ name: 'job-failed', phase: 'Failed', controllerKind: 'Job' }));
    cluster.addPod(pod({ name: 'bare', controllerKind: undefined }));

    const report = await terminateNode(options, deps);

    expect(report.outcome).toBe('drained');
    expect(cluster.calls.filter((c) => c.op === 'evict').map((c) => c.target)).toEqual(['default/bare']);
  });

  it('waits for pods that were already terminating without evicting them again', async () => {
    const terminating = cluster.addPod(pod({ name: 'leaving', deletionTimestamp: new Date(clock.now()) }));
    clock.after(20_000, () => cluster.removePod(terminating.uid));

    const report = await terminateNode({ ...options, loadBalancerDelaySeconds: 0 }, deps);

    expect(report.outcome).toBe('drained');
    expect(cluster.calls.some((c) => c.op === 'evict')).toBe(false);
    expect(lifecycle.completions[0]!.atMs - report.durationMs).toBe(clock.now() - report.durationMs);
    expect(report.durationMs).toBe(20_000);
  });

  it('completes CONTINUE when no node has the instance in its providerID', async () => {
    const report = await terminateNode({ ...options, action: { ...action, instanceId: 'i-00000000000000000' } }, deps);

    expect(report.outcome).toBe('node-not-found');
    expect(lifecycle.completions).toHaveLength(1);
    expect(cluster.calls.map((c) => c.op)).toEqual(['list-nodes']);
    expect(log.messages('warn')).toContain(
      'no node has this instance in spec.providerID; completing so the instance is not held',
    );
  });

  it('finds the node by providerID even when its name is not the instance DNS name', async () => {
    cluster.nodes.clear();
    cluster.addNode('ip-10-0-0-1.custom.internal', instanceId);
    cluster.addPod(pod({ name: 'web', nodeName: 'ip-10-0-0-1.custom.internal' }));

    const report = await terminateNode(options, deps);

    expect(report).toMatchObject({ outcome: 'drained', nodeName: 'ip-10-0-0-1.custom.internal' });
  });

  it('retries a PDB-blocked pod until the deadline, names the budget, then completes CONTINUE', async () => {
    const web = cluster.addPod(pod({ name: 'web-1' }));
    cluster.addPod(pod({ name: 'other' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    const start = clock.now();

    const report = await terminateNode({ ...options, drainDeadlineMs: start + 120_000 }, deps);

    expect(report.outcome).toBe('timed-out');
    expect(report.drain?.stuck).toEqual([
      {
        pod: 'default/web-1',
        reason: 'disruption-budget',
        budgetName: 'web-pdb',
        message: expect.stringContaining('web-pdb'),
      },
    ]);
    const evictions = cluster.calls.filter((c) => c.target === 'default/web-1');
    expect(evictions.length).toBeGreaterThan(5); // retried with backoff...
    expect(evictions.length).toBeLessThan(40); // ...but not in a hot loop
    const gaps = evictions.slice(1).map((c, i) => c.atMs - evictions[i]!.atMs);
    expect(Math.max(...gaps)).toBe(10_000);
    expect(lifecycle.completions).toEqual([{ action, result: 'CONTINUE', atMs: start + 120_000 + 60_000 }]);
    const timedOut = cluster.events.find((e) => e.reason === 'DrainTimedOut');
    expect(timedOut?.message).toContain('default/web-1 (disruption-budget: PodDisruptionBudget web-pdb)');
    // The blocked pod carries an Event too, written once, not on every retry.
    expect(cluster.events.filter((e) => e.reason === 'EvictionBlocked' && e.regarding.kind === 'Pod')).toHaveLength(1);
    expect(log.lines.find((l) => l.message.startsWith('drain deadline reached'))?.level).toBe('error');
  });

  it('with the force policy, deletes each pod at the deadline minus its grace, never inside the eviction window', async () => {
    const web = cluster.addPod(pod({ name: 'web-1', terminationGracePeriodSeconds: 120, terminationMs: 90_000 }));
    const quick = cluster.addPod(pod({ name: 'quick', terminationGracePeriodSeconds: 10, terminationMs: 5_000 }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid || p.uid === quick.uid));
    const start = clock.now();

    const report = await terminateNode(
      { ...options, drainDeadlineMs: start + 120_000, deadlinePolicy: 'force', minEvictionWindowMs: 60_000 },
      deps,
    );

    // web-1 (120 s grace) would be due at 0 s but waits out the 60 s window, then gets the
    // 60 s left of its grace; quick (10 s grace) goes at 110 s. Both are gone by 120 s.
    expect(report.outcome).toBe('timed-out');
    expect(cluster.deletions).toEqual([
      { pod: 'default/web-1', gracePeriodSeconds: 60, atMs: start + 60_000 },
      { pod: 'default/quick', gracePeriodSeconds: 10, atMs: start + 110_000 },
    ]);
    expect(cluster.events.filter((e) => e.reason === 'PodForceDeleted').map((e) => e.regarding.kind)).toEqual([
      'Node',
      'Pod',
      'Node',
      'Pod',
    ]);
    expect(cluster.events.find((e) => e.reason === 'DrainTimedOut')?.message).toContain(
      'DEADLINE_POLICY=force: 2 pod(s) were deleted at the deadline minus their grace period',
    );
    expect(cluster.podsOn('node-a')).toEqual([]);
    // The load-balancer wait starts when the last forced pod is gone, at the deadline.
    expect(lifecycle.completions.map((c) => c.atMs - start)).toEqual([120_000 + 60_000]);
  });

  it('with the force policy and a pod whose grace outlasts the drain, deletes it after the window with the grace clamped to the deadline', async () => {
    const web = cluster.addPod(pod({ name: 'web-1', terminationGracePeriodSeconds: 600, terminationMs: 600_000 }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    const start = clock.now();

    const report = await terminateNode(
      {
        ...options,
        drainDeadlineMs: start + 120_000,
        latestDrainEndMs: start + 300_000,
        deadlinePolicy: 'force',
        minEvictionWindowMs: 60_000,
      },
      deps,
    );

    expect(report.outcome).toBe('timed-out');
    expect(cluster.deletions).toEqual([{ pod: 'default/web-1', gracePeriodSeconds: 60, atMs: start + 60_000 }]);
    expect(lifecycle.completions.map((c) => c.atMs - start)).toEqual([120_000 + 60_000]);
  });

  it('with the force policy, lets a pod already shutting down finish before its deadline, hurrying it only in the last 10 s', async () => {
    // Evicted at once; its shutdown takes 8 s although its grace (60 s) outlasts the 30 s drain.
    cluster.addPod(pod({ name: 'slow', terminationGracePeriodSeconds: 60, terminationMs: 8_000 }));
    const start = clock.now();
    const report = await terminateNode(
      { ...options, drainDeadlineMs: start + 30_000, deadlinePolicy: 'force', loadBalancerDelaySeconds: 0 },
      deps,
    );
    expect(report.outcome).toBe('drained');
    expect(cluster.deletions).toEqual([]);
    expect(report.durationMs).toBe(8_000);
  });

  it('with the force policy, hurries a pod whose shutdown would outlast the deadline, 10 s before it', async () => {
    cluster.addPod(pod({ name: 'slower', terminationGracePeriodSeconds: 60, terminationMs: 50_000 }));
    const start = clock.now();
    const report = await terminateNode(
      { ...options, drainDeadlineMs: start + 30_000, deadlinePolicy: 'force', loadBalancerDelaySeconds: 0 },
      deps,
    );
    expect(report.outcome).toBe('timed-out');
    expect(cluster.deletions).toEqual([{ pod: 'default/slower', gracePeriodSeconds: 10, atMs: start + 20_000 }]);
    expect(report.durationMs).toBe(30_000);
  });

  it('with the retain policy, deletes nothing and completes ABANDON at the deadline, leaving the node cordoned', async () => {
    const web = cluster.addPod(pod({ name: 'web-1' }));
    cluster.addPod(pod({ name: 'other' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    const start = clock.now();

    const report = await terminateNode(
      { ...options, drainDeadlineMs: start + 120_000, deadlinePolicy: 'retain' },
      deps,
    );

    expect(report).toMatchObject({ outcome: 'retained', lifecycleAction: 'completed' });
    // At the deadline, without the load-balancer wait: the instance stays and keeps serving.
    expect(lifecycle.completions).toEqual([{ action, result: 'ABANDON', atMs: start + 120_000 }]);
    expect(cluster.deletions).toEqual([]);
    expect(cluster.podsOn('node-a').map((p) => p.name)).toEqual(['web-1']);
    expect(cluster.nodes.get('node-a')).toMatchObject({ unschedulable: true });
    expect(cluster.events.find((e) => e.reason === 'DrainTimedOut')?.message).toMatch(
      /web-1 \(disruption-budget: PodDisruptionBudget web-pdb\).*DEADLINE_POLICY=retain.*terminate-instance-in-auto-scaling-group --instance-id i-0123456789abcdef0/,
    );
    expect(cluster.events.at(-1)).toMatchObject({
      type: 'Warning',
      reason: 'LifecycleActionCompleted',
      message: expect.stringContaining('with ABANDON'),
    });
    expect(log.messages('error')).toContain(
      'drain deadline reached: completing with ABANDON so the group retains the instance, cordoned (DEADLINE_POLICY=retain)',
    );
  });

  it('with the leave policy, deletes nothing', async () => {
    const web = cluster.addPod(pod({ name: 'web-1' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    const report = await terminateNode(
      { ...options, drainDeadlineMs: clock.now() + 60_000, deadlinePolicy: 'leave' },
      deps,
    );
    expect(report.outcome).toBe('timed-out');
    expect(cluster.deletions).toEqual([]);
    expect(cluster.events.find((e) => e.reason === 'DrainTimedOut')?.message).toContain(
      'The instance terminates with them (DEADLINE_POLICY=leave)',
    );
  });

  it('reports a budget that refuses a pod for minutes, once, when the time comes, with its pending replacements', async () => {
    const web = cluster.addPod(pod({ name: 'web-1' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    cluster.pending = [
      {
        pod: 'default/web-2',
        reason: "Unschedulable: 0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints.",
      },
    ];
    const start = clock.now();

    await terminateNode({ ...options, drainDeadlineMs: start + 600_000, blockedReportMs: 120_000 }, deps);

    const long = cluster.events.filter((e) => e.reason === 'EvictionBlockedLong');
    expect(long).toHaveLength(1);
    // At 120 s exactly, not at the next retry (backoff puts that at 125.5 s).
    expect(long[0]!.message).toMatch(
      /default\/web-1 has been refused by PodDisruptionBudget web-pdb for 2 min: .*needs 2 healthy pods and has 2 currently/,
    );
    expect(long[0]!.message).toContain(
      "Replacements pending: default/web-2 (Unschedulable: 0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints.)",
    );
    const line = log.lines.find((l) => l.message === 'eviction blocked by a budget for minutes')!;
    expect(line.fields).toMatchObject({ pod: 'default/web-1', budget: 'web-pdb' });
    expect(line.fields['minutes']).toBe(2);
  });

  it('evicts a blocked pod once the budget allows it', async () => {
    const web = cluster.addPod(pod({ name: 'web-1' }));
    let budgetOpen = false;
    cluster.evictionRules.push((p) =>
      p.uid === web.uid && !budgetOpen ? pdbBlocks('web-pdb', () => true)(p) : 'accept',
    );
    clock.after(30_000, () => (budgetOpen = true));

    const report = await terminateNode(options, deps);

    expect(report.outcome).toBe('drained');
    expect(report.durationMs).toBeGreaterThanOrEqual(30_000 + 60_000);
    expect(report.durationMs).toBeLessThanOrEqual(40_000 + 60_000);
  });

  it('honours Retry-After from the server', async () => {
    const web = cluster.addPod(pod({ name: 'web-1' }));
    let refused = 0;
    cluster.evictionRules.push((p) =>
      p.uid === web.uid && refused++ < 1
        ? {
            kind: 'blocked',
            reason: 'disruption-budget',
            message: 'still being processed',
            retryAfterSeconds: 10,
            budgetName: 'web-pdb',
          }
        : 'accept',
    );

    await terminateNode({ ...options, loadBalancerDelaySeconds: 0 }, deps);

    const evictions = cluster.calls.filter((c) => c.op === 'evict');
    expect(evictions).toHaveLength(2);
    expect(evictions[1]!.atMs - evictions[0]!.atMs).toBe(10_000);
  });

  it('reports two budgets over one pod loudly and keeps trying until the deadline', async () => {
    cluster.addPod(pod({ name: 'web-1' }));
    cluster.evictionRules.push(() => ({
      kind: 'blocked',
      reason: 'multiple-budgets',
      message: 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      retryAfterSeconds: undefined,
      budgetName: undefined,
    }));

    const report = await terminateNode({ ...options, drainDeadlineMs: clock.now() + 30_000 }, deps);

    expect(report.outcome).toBe('timed-out');
    expect(report.drain?.stuck[0]?.reason).toBe('multiple-budgets');
    expect(log.messages('error')).toContain('eviction impossible: more than one PodDisruptionBudget selects the pod');
    expect(
      cluster.events.find((e) => e.reason === 'EvictionBlocked' && e.regarding.kind === 'Node')?.message,
    ).toContain('more than one PodDisruptionBudget');
  });

  it('reports a pod that tolerates the cordon and lands back, without chasing it', async () => {
    const tolerateAll = [{ operator: 'Exists' }];
    cluster.addPod(pod({ name: 'sticky-1', tolerations: tolerateAll }));
    // Its controller recreates it on the same (cordoned) node, every time.
    cluster.onEvicted = (p) => {
      if (p.name.startsWith('sticky'))
        cluster.addPod(pod({ name: `sticky-${cluster.calls.length}`, tolerations: tolerateAll }));
    };

    const report = await terminateNode({ ...options, loadBalancerDelaySeconds: 0 }, deps);

    expect(report.outcome).toBe('drained');
    expect(report.drain?.returned).toHaveLength(1);
    expect(cluster.calls.filter((c) => c.op === 'evict')).toHaveLength(1);
    expect(cluster.reasons()).toContain('Node/PodRescheduledOnDrainingNode');
  });

  it('notices a pod that lands back during the load-balancer wait', async () => {
    const sticky = cluster.addPod(pod({ name: 'sticky-1', tolerations: [{ operator: 'Exists' }] }));
    cluster.onEvicted = (p) => {
      if (p.uid === sticky.uid)
        clock.after(2_000, () => cluster.addPod(pod({ name: 'sticky-2', tolerations: [{ operator: 'Exists' }] })));
    };

    const report = await terminateNode(options, deps);

    expect(report.outcome).toBe('drained');
    expect(report.drain?.returned).toEqual(['default/sticky-2']);
    expect(cluster.reasons()).toEqual([
      'Node/DrainStarted',
      'Node/Cordoned',
      'Node/Drained',
      'Node/PodRescheduledOnDrainingNode',
      'Node/LifecycleActionCompleted',
    ]);
    expect(lifecycle.completions[0]!.atMs - report.durationMs).toBe(clock.now() - report.durationMs);
    expect(report.durationMs).toBe(60_000);
  });

  it('ends in CONTINUE when the node is deleted before it is cordoned', async () => {
    const original = cluster.mark.bind(cluster);
    cluster.mark = async (name, marks) => {
      cluster.nodes.delete(name);
      return original(name, marks);
    };

    const report = await terminateNode(options, deps);

    expect(report.outcome).toBe('node-gone');
    expect(lifecycle.completions).toHaveLength(1);
  });

  it('treats an action completed by another delivery while it drained as success', async () => {
    cluster.addPod(pod({ name: 'web-1', terminationMs: 5_000 }));
    clock.after(1_000, () => void lifecycle.complete(action, 'CONTINUE'));

    const report = await terminateNode({ ...options, loadBalancerDelaySeconds: 0 }, deps);

    expect(report).toMatchObject({ outcome: 'drained', lifecycleAction: 'already-completed' });
    expect(log.messages('error')).toEqual([]);
  });

  it('is idempotent: a duplicate delivery after the first ends in the same state without error', async () => {
    cluster.addPod(pod({ name: 'web-1' }));
    cluster.addPod(pod({ name: 'web-2' }));

    const first = await terminateNode(options, deps);
    const second = await terminateNode(options, deps);

    expect(first).toMatchObject({ outcome: 'drained', lifecycleAction: 'completed' });
    // (The trigger's confirm stops a late duplicate before the pipeline: terminate-hook.test.ts.)
    // Past it, the pipeline finds its own record and marks: it writes nothing again.
    expect(second).toMatchObject({ outcome: 'drained', lifecycleAction: 'already-completed' });
    expect(cluster.calls.filter((c) => c.op === 'mark')).toHaveLength(1);
    expect(lifecycle.completions).toHaveLength(1);
  });

  it('is idempotent under concurrent duplicate deliveries', async () => {
    for (let i = 0; i < 5; i++) cluster.addPod(pod({ name: `web-${i}`, terminationMs: 1_000 * i }));

    const [a, b] = await Promise.all([terminateNode(options, deps), terminateNode(options, deps)]);

    expect([a.outcome, b.outcome]).toEqual(['drained', 'drained']);
    expect([a.lifecycleAction, b.lifecycleAction].sort()).toEqual(['already-completed', 'completed']);
    expect(lifecycle.completions).toHaveLength(1);
    expect(cluster.podsOn('node-a')).toEqual([]);
    expect(log.messages('error')).toEqual([]);
  });

  it('stops waiting for a pod still terminating 30 s past its grace period, naming its finalizers', async () => {
    cluster.addPod(
      pod({
        name: 'slow',
        terminationGracePeriodSeconds: 30,
        terminationMs: 3_600_000,
        finalizers: ['example.com/cleanup'],
      }),
    );
    const start = clock.now();

    const report = await terminateNode(
      { ...options, drainDeadlineMs: start + 900_000, loadBalancerDelaySeconds: 0 },
      deps,
    );

    expect(report.outcome).toBe('drained');
    expect(report.drain?.notWaitedFor).toEqual(['default/slow (finalizers: example.com/cleanup)']);
    // Evicted at 0 s, grace ends at 30 s, given up at 60 s: not held for the 900 s deadline.
    expect(report.durationMs).toBe(60_000);
    expect(cluster.events.find((e) => e.reason === 'PodsNotWaitedFor')?.message).toContain(
      '30 s past the end of their grace period',
    );
  });

  it('keeps its deadline when a pod never leaves and has no deadline policy to end it', async () => {
    const web = cluster.addPod(pod({ name: 'web-1' }));
    cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));
    const start = clock.now();

    const report = await terminateNode(
      { ...options, drainDeadlineMs: start + 90_000, loadBalancerDelaySeconds: 0 },
      deps,
    );

    expect(report.outcome).toBe('timed-out');
    expect(report.durationMs).toBe(90_000);
  });

  it('evicts the pods of a tier in parallel, bounded by the concurrency setting', async () => {
    let inFlight = 0;
    let peak = 0;
    const evict = cluster.evictPod.bind(cluster);
    cluster.evictPod = async (p) => {
      peak = Math.max(peak, ++inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      return evict(p);
    };
    for (let i = 0; i < 20; i++) cluster.addPod(pod({ name: `web-${i}` }));

    await terminateNode({ ...options, evictionConcurrency: 8, loadBalancerDelaySeconds: 0 }, deps);

    expect(peak).toBe(8);
    expect(cluster.podsOn('node-a')).toEqual([]);
  });
});
