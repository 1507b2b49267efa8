// Warm pools and instances that come back, with the message shapes of the Auto Scaling docs:
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/warm-pools-eventbridge-events.html
// (a launch into the pool is Origin EC2 -> Destination WarmPool; out of it WarmPool ->
// AutoScalingGroup; a scale-in that reuses the instance AutoScalingGroup -> WarmPool).
import { beforeEach, describe, expect, it } from 'vitest';
import { ownerLabel, refreshCordonedLabel } from '../../../lambda/cluster/marks/mark-keys.js';
import { boundStrategyTag } from '../../../lambda/refresh/strategy-tag.js';
import { handlerWorld, pod, type FakeCluster, type FakeLifecycleActions } from '../../fakes/fake-world.js';
import { refreshEvent } from '../../fixtures/deliveries.js';
import { handOffDeploymentEnv, instanceId, lifecycleMessage } from '../../fixtures/notifications.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate,workers-launch',
  LOAD_BALANCER_DELAY_SECONDS: '0',
};
const launch = (origin: string, destination: string) =>
  lifecycleMessage({
    LifecycleTransition: 'autoscaling:EC2_INSTANCE_LAUNCHING',
    LifecycleHookName: 'workers-launch',
    LifecycleActionToken: 'launch-token',
    Origin: origin,
    Destination: destination,
  });
const lbLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';

describe('warm pools', () => {
  let world: ReturnType<typeof handlerWorld>;
  let cluster: FakeCluster;
  let lifecycle: FakeLifecycleActions;

  beforeEach(() => {
    world = handlerWorld(env);
    ({ cluster, lifecycle } = world);
  });

  it('completes a launch into the warm pool at once, without asking the cluster (its node may never register)', async () => {
    let connected = 0;
    const handle = world.handler({}, async () => {
      connected++;
      return cluster;
    });
    const result = await world.invoke(handle, launch('EC2', 'WarmPool'));
    expect(result.records).toEqual([{ status: 'launch-into-warm-pool', instanceId }]);
    expect(lifecycle.completions.map((c) => c.result)).toEqual(['CONTINUE']);
    expect(connected).toBe(0);
    expect(world.metrics.map((m) => m.dimensions['Outcome'])).toEqual(['into-warm-pool']);
  });

  it('drains an instance going back into the pool, then gives its node back when it leaves the pool: only our marks are removed', async () => {
    // Somebody else's marks on the node: a team label and a taint.
    cluster.addNode('node-a', instanceId, {
      labels: { team: 'payments' },
      taints: [{ key: 'dedicated', effect: 'NoSchedule' }],
    });
    cluster.addPod(pod({ name: 'web' }));

    const back = await world.runChain({}, lifecycleMessage({ Origin: 'AutoScalingGroup', Destination: 'WarmPool' }));
    expect(back).toEqual(['drained']);
    expect(cluster.events.find((e) => e.reason === 'DrainStarted')?.message).toMatch(
      /returning instance .* to its warm pool/,
    );
    expect(cluster.nodes.get('node-a')).toMatchObject({
      unschedulable: true,
      labels: { team: 'payments', [lbLabel]: 'true' },
    });

    // The instance stays stopped in the pool; its Node object survives. Then it comes back.
    const result = await world.invoke(world.handler(), launch('WarmPool', 'AutoScalingGroup'));

    expect(result.records).toEqual([{ status: 'launch-admitted', instanceId }]);
    const node = cluster.nodes.get('node-a')!;
    expect(node).toMatchObject({
      unschedulable: false,
      labels: { team: 'payments' },
      taints: [{ key: 'dedicated', effect: 'NoSchedule' }],
    });
    expect(node.labels[lbLabel]).toBeUndefined();
    expect(node.drain).toBeUndefined();
    expect(node.handOffClaim).toBeUndefined();
    expect(cluster.reasons()).toContain('Node/DrainMarksRemoved');
  });

  it('leaves a cordon and a label it did not set: somebody else put them there before the drain', async () => {
    cluster.addNode('node-a', instanceId, { unschedulable: true, labels: { [lbLabel]: 'true' } });

    await world.runChain({}, lifecycleMessage({ Origin: 'AutoScalingGroup', Destination: 'WarmPool' }));
    expect(cluster.nodes.get('node-a')?.drain?.set).toEqual([]);
    await world.invoke(world.handler(), launch('WarmPool', 'AutoScalingGroup'));

    expect(cluster.nodes.get('node-a')).toMatchObject({
      unschedulable: true,
      labels: { [lbLabel]: 'true' },
      drain: undefined,
    });
  });

  it('keeps Origin and Destination in a hand-off', async () => {
    const { handOffMessage } = await import('../../../lambda/inbound/lifecycle-message.js');
    const { parseLifecycleMessage } = await import('../../../lambda/inbound/lifecycle-message.js');
    const parsed = parseLifecycleMessage(lifecycleMessage({ Origin: 'AutoScalingGroup', Destination: 'WarmPool' }));
    if (!parsed.ok) throw new Error('did not parse');
    const message = handOffMessage(parsed.notification, { count: 1, claim: 'sha256:ab/1/r' });
    expect(message).toMatchObject({ Origin: 'AutoScalingGroup', Destination: 'WarmPool' });
  });
});

// From the adversarial review of issue 19 ("Found": broke e12925a; was test/unit/review/attacks.test.ts).
describe('warm pools: a node a refresh cordoned, drained into the pool and back', () => {
  // The deployment the review played against (it hands drains on), not this file's.
  const env = handOffDeploymentEnv;
  const refreshId = 'c613620e-07e2-4ed2-a9e2-ef8258911ade';
  const launchMessage = (o: Record<string, unknown> = {}) =>
    lifecycleMessage({
      LifecycleTransition: 'autoscaling:EC2_INSTANCE_LAUNCHING',
      LifecycleHookName: 'workers-launch',
      LifecycleActionToken: 'launch-token',
      ...o,
    });
  let world: ReturnType<typeof handlerWorld>;
  // Found (medium). A refresh (strategy minimal) cordons an outdated node; scale-in returns
  // that instance to the warm pool: the drain finds it cordoned already, so its record does not
  // list the cordon. The refresh then ends (cancelled, failed) and leaves the cordon to "the
  // drain that owns it now", dropping its refresh-cordoned label. When the instance comes back,
  // the launch hook takes back what the record lists: not the cordon. The node stays
  // unschedulable forever, with no owner label for the reconciler to find.
  it('a node cordoned by a refresh and drained into the warm pool is schedulable again when it comes back', async () => {
    world = handlerWorld({ ...env, LOAD_BALANCER_DELAY_SECONDS: '0' });
    world.groups.set(instanceId, 'workers');
    world.cluster.addNode('node-a', instanceId);
    world.refreshes.set(refreshId, {
      strategyTag: boundStrategyTag(refreshId),
      outdated: [instanceId],
      desired: 'lt-0abc version 7',
    });
    await world.invokeRaw(world.handler(), refreshEvent('Started'));
    expect(world.cluster.nodes.get('node-a')!.labels[refreshCordonedLabel]).toBe('true');

    world.autoScaling.states.set(instanceId, 'Warmed:Pending:Wait');
    await world.runChain({}, lifecycleMessage({ Destination: 'WarmPool' }));
    world.autoScaling.states.set(instanceId, 'Warmed:Stopped');
    world.autoScaling.refreshStatus.set(refreshId, 'Cancelled');
    await world.invokeRaw(world.handler(), refreshEvent('Cancelled'));

    world.autoScaling.states.set(instanceId, 'Pending:Wait');
    const launch = await world.invoke(
      world.handler(),
      launchMessage({ Origin: 'WarmPool', Destination: 'AutoScalingGroup' }),
    );
    expect(launch.records[0]!.status).toBe('launch-admitted');
    const node = world.cluster.nodes.get('node-a')!;
    expect({ unschedulable: node.unschedulable, owner: node.labels[ownerLabel] }).toEqual({
      unschedulable: false,
      owner: undefined,
    });
  });
});
