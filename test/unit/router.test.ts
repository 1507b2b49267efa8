import { beforeEach, describe, expect, it } from 'vitest';
import { AccessDeniedError, TransientError } from '../../lambda/shared/errors.js';
import type { ClusterGateway } from '../../lambda/cluster/ports/cluster-gateway.js';
import { actionIdOfToken } from '../../lambda/cluster/marks/action-id.js';
import {
  handlerWorld,
  pod,
  type FakeClock,
  type FakeCluster,
  type FakeLifecycleActions,
  type MemoryLog,
} from '../fakes/fake-world.js';
import { instanceId, lifecycleMessage, snsEvent, snsRecord, testMessage } from '../fixtures/notifications.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate,workers-launch',
  LOAD_BALANCER_DELAY_SECONDS: '60',
  DRAIN_TIMEOUT_SECONDS: '900',
};
const context = (remainingMs = 900_000) => ({ getRemainingTimeInMillis: () => remainingMs });

describe('handler', () => {
  let clock: FakeClock;
  let cluster: FakeCluster;
  let lifecycle: FakeLifecycleActions;
  let log: MemoryLog;
  let world: ReturnType<typeof handlerWorld>;
  let connections: number;
  let gateway: () => Promise<ClusterGateway>;

  beforeEach(() => {
    world = handlerWorld(env);
    ({ clock, cluster, lifecycle, log } = world);
    connections = 0;
    gateway = async () => {
      connections++;
      return cluster;
    };
    cluster.addNode('node-a', instanceId);
  });

  const handler = (extra: Record<string, string> = {}) => world.handler(extra, gateway);

  it('drains and completes a terminate notification, logging the action keys on every line', async () => {
    cluster.addPod(pod({ name: 'web' }));

    const result = await handler()(snsEvent(lifecycleMessage()), context());

    expect(result.records).toEqual([{ status: 'drained', instanceId }]);
    expect(lifecycle.completions).toHaveLength(1);
    const recordLines = log.lines.filter((l) => l.message !== 'termination handled');
    for (const line of recordLines) {
      expect(line.fields).toMatchObject({
        instanceId,
        autoScalingGroupName: 'workers',
        lifecycleHookName: 'workers-terminate',
        lifecycleAction: actionIdOfToken('71cd9f4c-aaaa-bbbb-cccc-ddddeeeeffff'),
      });
    }
    // The token itself never reaches the log: whoever can read it could complete the action.
    expect(JSON.stringify(log.lines)).not.toContain('71cd9f4c-aaaa-bbbb-cccc-ddddeeeeffff');
    expect(log.lines.find((l) => l.message === 'pod evicted')?.fields).toMatchObject({
      node: 'node-a',
      pod: 'default/web',
    });
  });

  it('logs and ignores the test notification without touching the cluster', async () => {
    const result = await handler()(snsEvent(testMessage), context());

    expect(result.records).toEqual([{ status: 'test-notification' }]);
    expect(connections).toBe(0);
    expect(log.lines[0]).toMatchObject({ level: 'info', fields: { autoScalingGroupName: 'workers' } });
  });

  it.each([
    ['another Auto Scaling group', { AutoScalingGroupName: 'someone-elses' }, 'Auto Scaling group someone-elses'],
    ['another hook', { LifecycleHookName: 'forged-hook' }, 'lifecycle hook forged-hook'],
    ['another cluster in the metadata', { NotificationMetadata: '{"clusterName":"staging"}' }, 'names cluster staging'],
  ])('refuses a notification for %s with a warning and touches nothing', async (_what, overrides, reason) => {
    cluster.addPod(pod({ name: 'web' }));

    const result = await handler()(snsEvent(lifecycleMessage(overrides)), context());

    expect(result.records).toEqual([{ status: 'refused', instanceId }]);
    expect(log.lines.find((l) => l.level === 'warn')?.fields['reason']).toContain(reason);
    expect(lifecycle.completions).toEqual([]);
    expect(cluster.calls).toEqual([]);
  });

  it('logs a malformed record with its field and still processes the others', async () => {
    cluster.addPod(pod({ name: 'web' }));
    const event = {
      Records: [
        snsRecord('{not json'),
        snsRecord(lifecycleMessage({ EC2InstanceId: 'bogus' })),
        snsRecord(lifecycleMessage()),
      ],
    };

    const result = await handler()(event, context());

    expect(result.records!.map((r) => r.status)).toEqual(['malformed', 'malformed', 'drained']);
    const errors = log.lines.filter((l) => l.level === 'error');
    expect(errors.map((l) => l.fields['field'])).toEqual(['Sns.Message', 'EC2InstanceId']);
    expect(errors[0]!.fields['messageId']).toBe('c0ffee00-0000-0000-0000-000000000001');
  });

  it('fails, with one error line naming the shape, on an event that is no shape it knows (never an empty success)', async () => {
    // Lambda retries it twice and then keeps it in the failed-notifications queue, with the
    // errors alarm: bounded, and somebody hears of it.
    await expect(handler()({ detail: {} }, context())).rejects.toThrow(
      /unsupported event shape: an object with keys detail/,
    );
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatchObject({ level: 'error', fields: { shape: 'an object with keys detail' } });
  });

  it('keeps the drain deadline inside the invocation, leaving room for the LB wait and the completion', async () => {
    const web = cluster.addPod(pod({ name: 'web' }));
    cluster.evictionRules.push((p) =>
      p.uid === web.uid
        ? {
            kind: 'blocked',
            reason: 'disruption-budget',
            message: 'blocked',
            retryAfterSeconds: undefined,
            budgetName: 'web-pdb',
          }
        : 'accept',
    );
    const start = clock.now();

    // 300 s left in the invocation: 300 - 20 margin - 60 LB wait = 220 s of drain.
    const result = await handler({ DEADLINE_POLICY: 'leave' })(snsEvent(lifecycleMessage()), context(300_000));

    expect(result.records![0]?.status).toBe('timed-out');
    expect(lifecycle.completions[0]!.atMs - start).toBe(220_000 + 60_000);
  });

  it('on an RBAC refusal completes CONTINUE (holding the instance helps nobody) and fails the invocation', async () => {
    cluster.addPod(pod({ name: 'web' }));
    cluster.evictPod = async () => {
      throw new AccessDeniedError('evicting pod default/web was forbidden', 403);
    };

    await expect(handler()(snsEvent(lifecycleMessage()), context())).rejects.toBeInstanceOf(AccessDeniedError);

    expect(lifecycle.completions).toHaveLength(1);
    expect(log.messages('error')).toContain('the cluster refused the drainer; check its access entry and ClusterRole');
  });

  it('on a transient failure leaves the action to the retry and fails the invocation', async () => {
    gateway = async () => {
      throw new TransientError('eks:DescribeCluster prod failed: throttled');
    };

    await expect(handler()(snsEvent(lifecycleMessage()), context())).rejects.toBeInstanceOf(TransientError);

    expect(lifecycle.completions).toEqual([]);
    expect(log.lines.at(-1)?.fields).toMatchObject({ instanceId });
  });
});
