// Batch work is allowed to finish: Job pods and do-not-disrupt pods are not evicted until
// they finish or the batch wait ends, while the rest of the node drains and the lifecycle
// action is kept alive across invocations.
import { actionIdOfToken } from '../../../lambda/cluster/marks/action-id.js';
import { beforeEach, describe, expect, it } from 'vitest';
import { handlerWorld, FakeClock, FakeCluster, FakeLifecycleActions, pod } from '../../fakes/fake-world.js';
import { instanceId } from '../../fixtures/notifications.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  LOAD_BALANCER_DELAY_SECONDS: '60',
  HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:gnt-topic',
};

describe('batch pods', () => {
  let world: ReturnType<typeof handlerWorld>;
  let clock: FakeClock;
  let cluster: FakeCluster;
  let lifecycle: FakeLifecycleActions;
  let t0: number;
  let runChain: ReturnType<typeof handlerWorld>['runChain'];

  beforeEach(() => {
    world = handlerWorld(env);
    ({ clock, cluster, lifecycle, runChain } = world);
    t0 = clock.now();
    cluster.addNode('node-a', instanceId);
  });

  const evicted = () => cluster.calls.filter((c) => c.op === 'evict').map((c) => c.target);

  it('lets a Job pod finish (20 min) while the rest drains, then completes once', async () => {
    const job = cluster.addPod(pod({ name: 'report-x', controllerKind: 'Job' }));
    cluster.addPod(pod({ name: 'web' }));
    cluster.addPod(pod({ name: 'coredns', namespace: 'kube-system', priorityClassName: 'system-cluster-critical' }));
    clock.at(t0 + 20 * 60_000, () => cluster.finishPod(job.uid));

    const statuses = await runChain();

    expect(statuses).toEqual(['handed-off', 'drained']);
    // The Job pod is never evicted; coredns is not held back by it.
    expect(evicted()).toEqual(['default/web', 'kube-system/coredns']);
    expect(cluster.reasons()).toContain('Node/WaitingForBatchPods');
    expect(cluster.events.find((e) => e.reason === 'WaitingForBatchPods')?.message).toMatch(/default\/report-x/);
    expect(lifecycle.completions).toHaveLength(1);
    expect((lifecycle.completions[0]!.atMs - t0) / 1000).toBe(20 * 60 + 60);
    // Kept alive meanwhile: heartbeats as each invocation starts (verify) and at the hand-off.
    expect(lifecycle.heartbeats).toHaveLength(3);
    // The last invocation's Events tell the whole drain, once: both evictions of the first
    // invocation (kept in the record on the node), durations from the notification, one batch-wait Event.
    expect(world.handOffs.sent.map((m) => m['GracefulNodeTerminationHandOff'])).toEqual([
      { count: 1, claim: `${actionIdOfToken('71cd9f4c-aaaa-bbbb-cccc-ddddeeeeffff')}/1/request-1` },
    ]);
    expect(cluster.reasons().filter((r) => r === 'Node/WaitingForBatchPods')).toHaveLength(1);
    expect(cluster.events.find((e) => e.reason === 'Drained')?.message).toBe(
      'All pods left the node in 1200 s (2 evicted).',
    );
    expect(cluster.events.find((e) => e.reason === 'LifecycleActionCompleted')?.message).toBe(
      'Lifecycle action completed with CONTINUE 1260 s after the notification (drained).',
    );
  });

  it('evicts a do-not-disrupt pod that is still running when the batch wait ends', async () => {
    cluster.addPod(
      pod({
        name: 'trainer',
        controllerKind: 'StatefulSet',
        annotations: { 'karpenter.sh/do-not-disrupt': 'true' },
        terminationMs: 30_000,
      }),
    );

    const statuses = await runChain({ BATCH_WAIT_SECONDS: '1800' });

    expect(statuses.at(-1)).toBe('drained');
    const evictAt = cluster.calls.find((c) => c.op === 'evict')!.atMs;
    expect((evictAt - t0) / 1000).toBe(1800);
    expect((lifecycle.completions[0]!.atMs - t0) / 1000).toBe(1800 + 30 + 60);
  });

  it('waits for our own annotation too, and reports the batch pod if it outlives the drain deadline', async () => {
    cluster.addPod(
      pod({
        name: 'etl',
        controllerKind: undefined,
        annotations: { 'graceful-node-termination/wait-for-completion': 'true' },
      }),
    );
    cluster.evictionRules.push(() => ({
      kind: 'blocked',
      reason: 'disruption-budget',
      message: 'held',
      retryAfterSeconds: undefined,
      budgetName: 'etl-pdb',
    }));

    const statuses = await runChain({ BATCH_WAIT_SECONDS: '600', DRAIN_TIMEOUT_SECONDS: '300' });

    expect(statuses).toEqual(['handed-off', 'timed-out']);
    // Batch wait 600 s, then 300 s of trying to drain it (force deletes it 30 s, its grace,
    // before that deadline), then the LB wait.
    expect((lifecycle.completions[0]!.atMs - t0) / 1000).toBe(600 + 300 - 30 + 60);
    expect(cluster.events.find((e) => e.reason === 'DrainTimedOut')?.message).toMatch(/default\/etl .*etl-pdb/);
  });

  it('with BATCH_WAIT_SECONDS=0 evicts Job pods at once, like managed node groups', async () => {
    cluster.addPod(pod({ name: 'report-x', controllerKind: 'Job' }));
    const statuses = await runChain({ BATCH_WAIT_SECONDS: '0' });
    expect(statuses).toEqual(['drained']);
    expect(evicted()).toEqual(['default/report-x']);
    expect(cluster.reasons()).not.toContain('Node/WaitingForBatchPods');
  });
});
