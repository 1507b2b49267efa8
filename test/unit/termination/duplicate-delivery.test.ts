// A notification or a hand-off delivered twice (SNS delivers at least once) while the drain runs:
// the invocation that takes the drain up claims it with its marks (claim.ts: count 0 for the first,
// the hand-off's count for its recipient), so the second delivery stands down instead of draining
// the same node side by side (the soak's seed 1 saw two such twins restart one Deployment twice);
// Lambda's retry of that invocation, with its request id, carries on.
import { beforeEach, describe, expect, it } from 'vitest';
import { handlerWorld, pdbBlocks, pod } from '../../fakes/fake-world.js';
import { instanceId, lifecycleMessage, snsEvent } from '../../fixtures/notifications.js';
import { parseClaim } from '../../../lambda/termination/claim.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  LOAD_BALANCER_DELAY_SECONDS: '0',
  HEARTBEAT_TIMEOUT_SECONDS: '1800',
  HAND_OFF_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:gnt-topic',
};
const invocationMs = 900_000;

type World = ReturnType<typeof handlerWorld>;

describe('a notification delivered twice', () => {
  let clock: World['clock'];
  let cluster: World['cluster'];
  let lifecycle: World['lifecycle'];
  let handOffs: World['handOffs'];
  let deliver: (message: Record<string, unknown>, requestId: string) => Promise<{ records?: { status: string }[] }>;
  let run: (requestId: string) => Promise<{ records?: { status: string }[] }>;

  beforeEach(() => {
    const world = handlerWorld(env);
    ({ clock, cluster, lifecycle, handOffs } = world);
    cluster.addNode('node-a', instanceId);
    const handle = world.handler({ DRAIN_TIMEOUT_SECONDS: '7200' });
    deliver = (message, awsRequestId) => {
      const end = clock.now() + invocationMs;
      return handle(snsEvent(message), {
        awsRequestId,
        getRemainingTimeInMillis: () => end - clock.now(),
      }) as Promise<{ records?: { status: string }[] }>;
    };
    run = (awsRequestId) => deliver(lifecycleMessage(), awsRequestId);
  });

  const evictions = () => cluster.calls.filter((c) => c.op === 'evict').map((c) => c.target);
  const reasons = () => cluster.events.filter((e) => e.regarding.kind === 'Node').map((e) => e.reason);

  it('the second delivery, while the first invocation drains, stands down: one drain, one completion', async () => {
    const pods = ['web-1', 'web-2'].map((name) => cluster.addPod(pod({ name })));
    let second: Promise<{ records?: { status: string }[] }> | undefined;
    // The duplicate arrives while the first invocation evicts its first pod.
    cluster.evictionRules.push(() => {
      second ??= run('request-2');
      return 'accept';
    });
    const first = await run('request-1');
    const twin = await second!;

    expect(first.records![0]!.status).toBe('drained');
    expect(twin.records![0]!.status).toBe('superseded');
    expect(evictions()).toHaveLength(pods.length);
    expect(reasons().filter((r) => r === 'DrainStarted')).toHaveLength(1);
    expect(reasons().filter((r) => r === 'Drained')).toHaveLength(1);
    expect(lifecycle.completions).toHaveLength(1);
  });

  it('both read the node before either marked it: the one whose mark lost stands down', async () => {
    cluster.addPod(pod({ name: 'web-1' }));
    const [a, b] = await Promise.all([run('request-1'), run('request-2')]);

    expect([a.records![0]!.status, b.records![0]!.status].sort()).toEqual(['drained', 'superseded']);
    expect(evictions()).toHaveLength(1);
    expect(reasons().filter((r) => r === 'DrainStarted')).toHaveLength(1);
    expect(lifecycle.completions).toHaveLength(1);
  });

  it("Lambda's retry of the first invocation, with its request id, carries on; another delivery does not", async () => {
    cluster.addPod(pod({ name: 'web-1' }));
    let crash = true;
    cluster.evictionRules.push(() => {
      if (crash) throw new Error('the invocation was killed here');
      return 'accept';
    });
    await run('request-1').catch(() => undefined);
    expect(parseClaim(cluster.nodes.get('node-a')?.handOffClaim)).toMatchObject({ count: 0, requestId: 'request-1' });
    expect(lifecycle.completions).toEqual([]);

    crash = false;
    const tried = evictions().length;
    expect((await run('request-2')).records![0]!.status).toBe('superseded');
    expect(evictions()).toHaveLength(tried);
    expect((await run('request-1')).records![0]!.status).toBe('drained');
    expect(evictions()).toHaveLength(tried + 1);
    expect(lifecycle.completions).toHaveLength(1);
  });

  it('two deliveries of the same hand-off at once: the one that took the drain up carries on, the other stands down', async () => {
    cluster.addPod(pod({ name: 'web-1' }));
    let twin: (() => Promise<{ records?: { status: string }[] }>) | undefined;
    let second: Promise<{ records?: { status: string }[] }> | undefined;
    cluster.evictionRules.push((p) => {
      // The hand-off's second delivery arrives while the first one evicts.
      if (twin !== undefined) second ??= twin();
      return pdbBlocks('web-pdb', () => true)(p);
    });
    expect((await run('request-1')).records![0]!.status).toBe('handed-off');
    const first = handOffs.sent[0]!;
    twin = () => deliver(first, 'request-3');

    const a = await deliver(first, 'request-2');
    const b = await second!;

    expect(a.records![0]!.status).toBe('handed-off');
    expect(b.records![0]!.status).toBe('superseded');
    const counts = handOffs.sent.map((m) => (m['GracefulNodeTerminationHandOff'] as { count: number }).count);
    expect(counts).toEqual([1, 2]);
  });

  it("Lambda's retry of a hand-off's recipient carries on; a late second delivery of that hand-off does not", async () => {
    cluster.addPod(pod({ name: 'web-1' }));
    let crash = false;
    cluster.evictionRules.push((p) => {
      if (crash) throw new Error('the invocation was killed here');
      return pdbBlocks('web-pdb', () => true)(p);
    });
    expect((await run('request-1')).records![0]!.status).toBe('handed-off');
    const first = handOffs.sent[0]!;
    crash = true;
    await deliver(first, 'request-2').catch(() => undefined);
    expect(parseClaim(cluster.nodes.get('node-a')?.handOffClaim)).toMatchObject({ count: 1, requestId: 'request-2' });
    crash = false;

    expect((await deliver(first, 'request-3')).records![0]!.status).toBe('superseded');
    expect((await deliver(first, 'request-2')).records![0]!.status).toBe('handed-off');
    expect(handOffs.sent).toHaveLength(2);
  });
});
