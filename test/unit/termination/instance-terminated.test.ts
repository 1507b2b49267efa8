// After an undrained release: EC2's terminated event taints the node out-of-service only when EC2
// confirms the termination, the instance was a served group's, our drain released it undrained
// and pods are still bound to it; the reconciler takes the taint back once the node is Ready.
import { beforeEach, describe, expect, it } from 'vitest';
import type { DrainRecord } from '../../../lambda/cluster/model.js';
import { handlerWorld, pod } from '../../fakes/fake-world.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

const env = { CLUSTER_NAME: 'prod', AUTO_SCALING_GROUP_NAMES: 'workers', LIFECYCLE_HOOK_NAMES: 'workers-terminate' };
const instanceId = 'i-0123456789abcdef0';
const stateChange = (state: string, id = instanceId) => ({
  'detail-type': 'EC2 Instance State-change Notification',
  source: 'aws.ec2',
  id: 'e1',
  time: '2026-11-22T10:00:00Z',
  resources: [],
  detail: { 'instance-id': id, state },
});
const released = (outcome: 'drained' | 'timed-out'): DrainRecord => ({
  source: lifecycleAction('sha256:x', 'workers-terminate'),
  notifiedAtMs: 0,
  startedAtMs: 0,
  updatedAtMs: 0,
  set: ['cordon'],
  drained: { atMs: 1, outcome },
});

describe('the out-of-service taint after an undrained release', () => {
  let world: ReturnType<typeof handlerWorld>;
  beforeEach(() => {
    world = handlerWorld(env);
    world.cluster.addNode('node-a', instanceId, {
      drain: released('timed-out'),
      labels: { 'graceful-node-termination/owner': 'graceful-node-termination' },
      ready: false,
    });
    world.cluster.addPod(pod({ name: 'stuck', nodeName: 'node-a' }));
    world.ec2.runStateOf.set(instanceId, { state: 'terminated', group: 'workers' });
  });
  const status = async (event: unknown) => (await world.invokeRaw(world.handler(), event)).records![0]!.status;
  const tainted = () =>
    world.cluster.nodes
      .get('node-a')!
      .taints.some((t) => t.key === 'node.kubernetes.io/out-of-service' && t.effect === 'NoExecute');

  it('taints the node once EC2 confirms the instance is terminated, with an Event and a metric', async () => {
    expect(await status(stateChange('terminated'))).toBe('out-of-service-tainted');
    expect(tainted()).toBe(true);
    expect(world.cluster.events.map((e) => e.reason)).toEqual(['OutOfServiceTainted']);
    expect(world.metrics.some((m) => m.values['OutOfServiceTainted'])).toBe(true);
    // Twice is once.
    expect(await status(stateChange('terminated'))).toBe('out-of-service-not-needed');
  });

  it('never while EC2 says the instance runs, whatever the event says', async () => {
    world.ec2.runStateOf.set(instanceId, { state: 'running', group: 'workers' });
    expect(await status(stateChange('terminated'))).toBe('refused');
    expect(tainted()).toBe(false);
  });

  it('not for another group, a drained release, a node with nothing left, or another state', async () => {
    world.ec2.runStateOf.set(instanceId, { state: 'terminated', group: 'someone-else' });
    expect(await status(stateChange('terminated'))).toBe('refused');
    world.ec2.runStateOf.set(instanceId, { state: 'terminated', group: 'workers' });
    world.cluster.nodes.set('node-a', { ...world.cluster.nodes.get('node-a')!, drain: released('drained') });
    expect(await status(stateChange('terminated'))).toBe('out-of-service-not-needed');
    world.cluster.nodes.set('node-a', { ...world.cluster.nodes.get('node-a')!, drain: released('timed-out') });
    world.cluster.pods.clear();
    expect(await status(stateChange('terminated'))).toBe('out-of-service-not-needed');
    expect(await status(stateChange('stopping'))).toBe('refused');
    expect(tainted()).toBe(false);
  });

  it('the reconciler takes the taint back only when the node is Ready again as another instance', async () => {
    await status(stateChange('terminated'));
    // The terminated instance's Node still says Ready until the lifecycle controller notices: not a return.
    world.cluster.nodes.set('node-a', { ...world.cluster.nodes.get('node-a')!, ready: true });
    await world.invokeRaw(world.handler(), {
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      id: 'r0',
      time: new Date(world.clock.now()).toISOString(),
      detail: {},
      resources: [],
    });
    expect(tainted()).toBe(true);
    world.cluster.nodes.set('node-a', {
      ...world.cluster.nodes.get('node-a')!,
      providerId: 'aws:///eu-west-1a/i-0fedcba9876543210',
    });
    await world.invokeRaw(world.handler(), {
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      id: 'r1',
      time: new Date(world.clock.now()).toISOString(),
      detail: {},
      resources: [],
    });
    expect(tainted()).toBe(false);
    expect(world.cluster.events.map((e) => e.reason)).toContain('OutOfServiceRemoved');
  });
});
