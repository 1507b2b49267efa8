// Delivery shapes on the real plane: a terminate delivered as an EventBridge event and as an
// SQS record drains like an SNS one; a Spot interruption warning drains a node of a configured
// group within the two minutes and is refused for any other group.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventBridgeLifecycle, spotInterruptionWarning, sqsEvent } from '../fixtures/deliveries.js';
import { lifecycleMessage } from '../fixtures/notifications.js';
import { autoScalingGroupName, statusOf, terminateHookName } from './drainer.js';
import { byDrainer, eventsFor, newInstanceId, nodeWithDeployment, podsOn, readAudit } from './kube.js';
import { testAws } from './plane/token-webhook.js';
import { a, blockDrainer, plane } from './head.js';

const nodeWithPods = (name: string) => nodeWithDeployment(a, 'shapes', name, 2);

const ours = (instanceId: string, token: string) => ({
  EC2InstanceId: instanceId,
  LifecycleActionToken: token,
  AutoScalingGroupName: autoScalingGroupName,
  LifecycleHookName: terminateHookName,
  NotificationMetadata: JSON.stringify({ clusterName: testAws.clusterName }),
});

describe('delivery shapes', () => {
  const drainer = blockDrainer({ loadBalancerDelaySeconds: 1 }, { namespace: 'shapes' });

  it('drains a terminate delivered as an EventBridge event', async () => {
    const { instanceId, node } = await nodeWithPods('via-eventbridge');
    const token = randomUUID();
    const result = await drainer.invoke(eventBridgeLifecycle(ours(instanceId, token), new Date().toISOString()), {
      activeToken: token,
    });
    expect(statusOf(result)).toBe('drained');
    expect((await podsOn(a, node)).filter((p) => p.metadata?.namespace === 'shapes')).toEqual([]);
    expect(drainer.completions.filter((c) => c.token === token)).toEqual([
      expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
    ]);
  });

  it('drains a terminate delivered through an SQS hook target', async () => {
    const { instanceId, node } = await nodeWithPods('via-sqs');
    const token = randomUUID();
    const result = await drainer.invoke(
      sqsEvent(lifecycleMessage({ ...ours(instanceId, token), Time: new Date().toISOString() })),
      { activeToken: token },
    );
    expect(statusOf(result)).toBe('drained');
    expect((await podsOn(a, node)).filter((p) => p.metadata?.namespace === 'shapes')).toEqual([]);
    expect(drainer.completions.filter((c) => c.token === token)).toEqual([
      expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
    ]);
  });

  it('drains on a Spot interruption warning within the two minutes, and refuses an instance of another group or one EC2 gave no notice', async () => {
    const { instanceId, node } = await nodeWithPods('spot');
    drainer.groups.set(instanceId, autoScalingGroupName);
    drainer.spotInstances.set(instanceId, 'fulfilled');
    const other = newInstanceId();
    drainer.groups.set(other, 'someone-elses-group');
    drainer.spotInstances.set(other, 'marked-for-termination');
    const since = Date.now();
    const beatsBefore = drainer.heartbeats.length;

    const refused = await drainer.invoke(spotInterruptionWarning(other, new Date().toISOString()));
    expect(statusOf(refused)).toBe('refused');
    expect(readAudit(plane, (e) => byDrainer(e) && e.atMs >= since)).toEqual([]);
    // A Spot instance of ours whose request EC2 has not marked: no interruption is coming.
    expect(statusOf(await drainer.invoke(spotInterruptionWarning(instanceId, new Date().toISOString())))).toBe(
      'refused',
    );
    expect(readAudit(plane, (e) => byDrainer(e) && e.atMs >= since)).toEqual([]);

    drainer.spotInstances.set(instanceId, 'marked-for-termination');
    const result = await drainer.invoke(spotInterruptionWarning(instanceId, new Date().toISOString()));
    expect(statusOf(result)).toBe('drained');
    expect(Date.now() - since).toBeLessThan(120_000);
    expect((await podsOn(a, node)).filter((p) => p.metadata?.namespace === 'shapes')).toEqual([]);
    const evictions = readAudit(
      plane,
      (e) => byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.code === 201,
    );
    expect(evictions).toHaveLength(2);
    // No lifecycle action: nothing heart-beaten, nothing completed.
    expect(drainer.heartbeats.length - beatsBefore).toBe(0);
    expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toEqual([]);
    expect((await eventsFor(a, 'Node', node)).map((e) => e.reason)).toEqual(
      expect.arrayContaining(['DrainStarted', 'Cordoned', 'Drained', 'SpotInterruptionDrained']),
    );
  });
});
