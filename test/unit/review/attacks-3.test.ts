// Attacks from an adversarial review of issues 20 (the settle phase: volumes detached, load
// balancers let go) and 21 (waves at fleet scale). Each test states the behaviour the issue
// or the design promises; each failed against d77bbb3.
import { describe, expect, it } from 'vitest';
import { createNodeLookup } from '../../../lambda/adapters/kubernetes/node-lookup.js';
import { type NodeReader } from '../../../lambda/adapters/kubernetes/node-reader.js';
import { instanceMatches } from '../../../lambda/cluster/rules/provider-id.js';
import type { NodeInfo } from '../../../lambda/cluster/model.js';
import type { NodeWatch } from '../../../lambda/cluster/ports/node-gateway.js';
import type { InstanceDirectory, TargetReading } from '../../../lambda/shared/aws-ports.js';
import { ServiceBusyError } from '../../../lambda/shared/errors.js';
import { settle } from '../../../lambda/termination/settle.js';
import { spotDeadlines } from '../../../lambda/termination/spot-interruption.js';
import { isStop, type Deadlines, type Drained } from '../../../lambda/termination/state.js';
import { FakeClock, handlerWorld, MemoryLog, pod } from '../../fakes/fake-world.js';
import { handOffDeploymentEnv, lifecycleMessage } from '../../fixtures/notifications.js';
import { instanceId, phaseWorld } from '../termination/phase-world.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

type World = ReturnType<typeof phaseWorld>;

function drained(w: World, deadlines: Partial<Deadlines> = {}): Drained {
  const node = w.cluster.nodes.get('node-a') ?? w.cluster.addNode('node-a', instanceId);
  const startedAtMs = w.clock.now();
  const record = {
    source: lifecycleAction('sha256:a', 'h'),
    notifiedAtMs: startedAtMs,
    startedAtMs,
    updatedAtMs: startedAtMs,
    set: [],
  };
  const result = {
    outcome: 'drained' as const,
    evicted: 1,
    blocked: 0,
    forced: 0,
    stuck: [],
    returned: [],
    notWaitedFor: [],
  };
  return {
    node,
    claim: undefined,
    ownPendingClaim: undefined,
    record,
    deadlines: w.deadlines({ loadBalancerDelayMs: 0, ...deadlines }),
    outcome: 'drained',
    drainedAtMs: w.clock.now(),
    evictedTotal: 1,
    result,
  };
}

const settled = async (w: World, d: Drained) => {
  const start = w.clock.now();
  const step = await settle(w.run(), d);
  return { step, seconds: (w.clock.now() - start) / 1000 };
};

describe('review: the volume wait', () => {
  // Found (medium). A pod the drain evicted that is still terminating when the drain gives up
  // on it (a finalizer nobody removes: cannotLeave, 30 s past its grace period) is a pod it
  // DRAINED, not one it left; yet its claim counts as "in use by a pod on the node", so the
  // attachment of its volume holds nothing and the instance is released at once, while the
  // kubelet has stopped its containers and the attach-detach controller is detaching the volume
  // (it treats a deleted pod whose containers ended as terminated). Issue 20: wait for the
  // VolumeAttachments "of the pods it drained"; only DaemonSets and pods it left do not hold.
  it('the volume of a drained pod still terminating on the node (stuck on a finalizer) holds the release until it detaches', async () => {
    const w = phaseWorld();
    w.cluster.addPod(
      pod({
        name: 'db-0',
        controllerKind: 'StatefulSet',
        claims: ['data-db-0'],
        deletionTimestamp: new Date(w.clock.now() - 60_000),
        finalizers: ['example.com/backup'],
      }),
    );
    w.cluster.attach('pv-db');
    w.cluster.volumeClaims.set('pv-db', 'default/data-db-0');
    w.clock.after(8_000, () => w.cluster.detach('pv-db'));
    const { seconds } = await settled(w, drained(w));
    expect(seconds).toBe(8);
    expect(w.cluster.reasons()).toContain('Node/VolumesDetached');
  });

  // Found (low). With `get persistentvolumes` denied, the claim is never cached: every wake of
  // the settle loop (each target look, each attachment change) GETs every held PV again and
  // logs the same warning again, for up to the whole drain deadline.
  it('a PersistentVolume that cannot be read is asked for (and warned about) once, not on every wake', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers;
    w.loadBalancers.hold(instanceId, 'k8s-default-web', w.clock.now() + 120_000);
    w.cluster.addPod(pod({ name: 'agent', controllerKind: 'DaemonSet', claims: ['agent-cache'] }));
    w.cluster.attach('pv-agent');
    let gets = 0;
    w.cluster.claimOfVolume = async () => {
      gets++;
      throw Object.assign(new Error('persistentvolumes "pv-agent" is forbidden'), { status: 403 });
    };
    await settled(w, drained(w, { loadBalancerWait: { minMs: 5_000, maxMs: 300_000 }, loadBalancerDelayMs: 60_000 }));
    expect(w.log.messages('warn').filter((m) => m.startsWith('could not read a PersistentVolume'))).toHaveLength(1);
    expect(gets).toBe(1);
  });
});

describe('review: the load-balancer wait', () => {
  // Found (medium). A look at the load balancers is not bounded by the time the settle phase
  // has: an ELB endpoint that accepts and never answers costs 3 attempts x 5 s (+ backoff)
  // per look (runtime.ts), and the loop only checks its deadlines between looks. On a Spot
  // interruption whose drain ran to its deadline (reclaim - 15 s), the settle phase ends ~1 s
  // AFTER EC2 reclaims the instance, past settleEndMs (reclaim - 2 s) and the fixed delay
  // (13 s). The same overrun applies to LOAD_BALANCER_MAX_WAIT_SECONDS and to invocationStopMs
  // (20 s of margin before the Lambda timeout, 16 s of it spent in one look).
  it('a hanging ELB read does not carry the Spot settle past the reclaim', async () => {
    const w = phaseWorld();
    const reclaimAtMs = w.clock.now() + 15_000;
    w.deps.loadBalancers = {
      async holding(): Promise<TargetReading> {
        // As the runtime builds the client: 2 attempts of 3 s and the backoff between; a
        // reading that takes longer in real time is cut off (within(), tested below).
        await w.clock.sleep(6_400);
        return {
          read: false,
          denied: false,
          error: new Error('elbv2 DescribeTargetGroups: no answer within 5000 ms'),
          calls: 3,
        };
      },
    };
    const d = drained(w, spotDeadlines(reclaimAtMs, 60, { minSeconds: 5 }));
    await settled(w, d);
    expect(w.clock.now()).toBeLessThanOrEqual(reclaimAtMs - 2_000);
  });

  // Found (medium). One failed look after successful ones (a throttled burst in a wave, an
  // endpoint timing out for 15 s) switches the wait to the fixed delay for good; since the
  // fixed delay is dated from the drain's end it is usually over already, so the instance is
  // released at once although the last reading said the target group was still draining it.
  // A failure should keep the last reading and look again (within the maximum); only a wait
  // that could never read the load balancers falls back to the fixed delay.
  it('a transient failure in the middle of the wait does not release an instance a target group is still draining', async () => {
    const w = phaseWorld();
    w.deps.loadBalancers = w.loadBalancers;
    w.loadBalancers.hold(instanceId, 'k8s-default-web', w.clock.now() + 200_000);
    w.clock.after(90_000, () => (w.loadBalancers.failure = { denied: false }));
    w.clock.after(110_000, () => (w.loadBalancers.failure = undefined));
    const { step, seconds } = await settled(
      w,
      drained(w, { loadBalancerWait: { minMs: 5_000, maxMs: 300_000 }, loadBalancerDelayMs: 60_000 }),
    );
    expect(isStop(step)).toBe(false);
    expect(seconds).toBeGreaterThanOrEqual(200);
    expect(w.cluster.reasons()).toContain('Node/TargetsDeregistered');
  });
});

describe('review: a launch whose EC2 lookup was throttled', () => {
  // Found (low). When EC2 finally names the instance, the watch under the name opens but
  // lastScanMs is still -Infinity (no scan ever ran), so the very next wait scans the whole
  // node list at once, before the node had any time to register under its name. Opened at
  // first try, the same watch scans only after scanEveryMs (60 s). In a wave of launches with
  // EC2 throttled, that is one full node-list scan per launch.
  it('opening the watch under the EC2 name after a throttled lookup does not scan the node list at once', async () => {
    const clock = new FakeClock();
    const calls: string[] = [];
    const nodes: NodeInfo[] = [];
    const reader: NodeReader = {
      getNode: async (name) => nodes.find((n) => n.name === name),
      getNodesNamed: async () => [],
      scanForInstances: async (ids) => {
        calls.push('scan');
        return new Map(
          ids.flatMap((id) => nodes.filter((n) => instanceMatches(n.providerId, id)).map((n) => [id, n] as const)),
        );
      },
      watchNodeNamed: async (name): Promise<NodeWatch> => {
        calls.push(`watch ${name}`);
        return { current: () => nodes.find((n) => n.name === name), changed: (ms) => clock.sleep(ms), close: () => {} };
      },
    };
    let busy = 1;
    const directory: Pick<InstanceDirectory, 'privateDnsNames'> = {
      privateDnsNames: async (ids) => {
        if (busy-- > 0) throw new ServiceBusyError('ec2:DescribeInstances throttled');
        return new Map(ids.map((id) => [id, 'ip-10-0-0-9'] as const));
      },
    };
    const watch = await createNodeLookup(reader, directory, clock, new MemoryLog()).watchNodeOf('i-0late');
    while (!calls.includes('watch ip-10-0-0-9')) await watch.changed(10_000);
    const namedAtMs = clock.now();
    // The node has not registered yet: the wait goes on under the name, for 30 s.
    while (clock.now() < namedAtMs + 30_000) await watch.changed(10_000);
    expect(calls).toEqual(['watch ip-10-0-0-9']);
  });
});

describe('review: a throttled heartbeat on a hand-off', () => {
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
