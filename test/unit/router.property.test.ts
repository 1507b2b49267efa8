// A property of the router (lambda/router.ts) and every trigger's parse (trigger.ts: "never throws on bad input"):
// whatever a record holds, in the shape of every delivery the function serves (each lifecycle transition, each
// EventBridge detail-type, through SQS so that each record is judged alone), it ends malformed, refused or in
// another outcome of its own, never `failed`: a failed record is retried by Lambda, and bad input retried fails the
// same way every time.
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { handlerWorld } from '../fakes/fake-world.js';
import { jsonTraps, prototypeNames, untrusted } from '../fakes/arbitraries.js';
import { handOffDeploymentEnv, instanceId } from '../fixtures/notifications.js';

const detailTypes = [
  'EC2 Instance-terminate Lifecycle Action',
  'EC2 Instance-launch Lifecycle Action',
  'EC2 Spot Instance Interruption Warning',
  'EC2 Instance Rebalance Recommendation',
  'EC2 Instance State-change Notification',
  'EC2 Auto Scaling Instance Refresh Started',
  'EC2 Auto Scaling Instance Refresh Succeeded',
  'Scheduled Event',
];

/** A value for a field: a plausible one, or anything JSON can carry in its place (an object String() cannot print). */
const field = (plausible: fc.Arbitrary<unknown>) =>
  fc.oneof({ arbitrary: plausible, weight: 2 }, untrusted, jsonTraps, fc.constantFrom('', ...prototypeNames));

const detailArb = fc.record({
  'instance-id': field(fc.constant(instanceId)),
  'instance-action': field(fc.constantFrom('terminate', 'stop')),
  state: field(fc.constantFrom('terminated', 'running')),
  AutoScalingGroupName: field(fc.constant('workers')),
  InstanceRefreshId: field(fc.constant('ab00c0ee-0000-4000-8000-000000000000')),
  LifecycleHookName: field(fc.constant('workers-terminate')),
  EC2InstanceId: field(fc.constant(instanceId)),
  LifecycleActionToken: field(fc.uuid()),
  LifecycleTransition: field(
    fc.constantFrom('autoscaling:EC2_INSTANCE_TERMINATING', 'autoscaling:EC2_INSTANCE_LAUNCHING'),
  ),
  NotificationMetadata: field(fc.constant(JSON.stringify({ clusterName: 'prod' }))),
  Origin: field(fc.constantFrom('EC2', 'AutoScalingGroup', 'WarmPool')),
  Destination: field(fc.constantFrom('EC2', 'AutoScalingGroup', 'WarmPool')),
});

/** The envelope of an EventBridge event, as a rule targeting a queue delivers it; its detail-type is each one served. */
const envelopeArb = fc.record({
  source: field(fc.constantFrom('aws.ec2', 'aws.autoscaling', 'aws.events')),
  time: field(fc.constant('2026-11-22T10:00:00Z')),
  account: field(fc.constant('123456789012')),
  region: field(fc.constant('eu-west-1')),
  resources: field(fc.constant([])),
  detail: fc.oneof({ arbitrary: detailArb, weight: 3 }, untrusted),
});

/** A custom termination policy call as Auto Scaling makes it, each field plausible or anything else. */
const choiceArb = fc.record({
  AutoScalingGroupName: field(fc.constant('workers')),
  AutoScalingGroupARN: field(
    fc.constant('arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:uuid:autoScalingGroupName/workers'),
  ),
  Cause: field(fc.constantFrom('SCALE_IN', 'INSTANCE_REFRESH', 'REBALANCE')),
  CapacityToTerminate: field(
    fc.array(
      fc.record({
        AvailabilityZone: field(fc.constant('eu-west-1a')),
        Capacity: field(fc.integer({ min: 0, max: 3 })),
        InstanceMarketOption: field(fc.constant('on-demand')),
      }),
      { maxLength: 2 },
    ),
  ),
  Instances: field(
    fc.array(
      fc.record({
        InstanceId: field(fc.constantFrom(instanceId, 'i-0fedcba9876543210')),
        AvailabilityZone: field(fc.constant('eu-west-1a')),
        InstanceType: field(fc.constant('m5.large')),
        InstanceMarketOption: field(fc.constant('on-demand')),
      }),
      { maxLength: 3 },
    ),
  ),
  HasMoreInstances: field(fc.boolean()),
});

describe('the router on anything a record may hold (property)', () => {
  test.prop([envelopeArb, detailArb, untrusted])(
    'no record of bad input fails (to be retried): each ends malformed, refused or an outcome of its own',
    async (envelope, message, anything) => {
      const w = handlerWorld(handOffDeploymentEnv);
      w.cluster.addNode('node-a', instanceId);
      w.groups.set(instanceId, 'workers');
      // The same fields in every shape served: each detail-type, a lifecycle message, and anything at all.
      const bodies = [
        ...detailTypes.map((type) => ({ ...envelope, 'detail-type': type })),
        { Time: '2026-11-22T10:00:00.000Z', ...message },
        anything,
      ];
      const event = {
        Records: bodies.map((body, i) => ({
          eventSource: 'aws:sqs',
          messageId: `m-${i}`,
          body: JSON.stringify(body) ?? '',
        })),
      };
      const result = await w.invokeRaw(w.handler(), event, 60_000);
      expect(result.records?.map((r) => r.status)).not.toContain('failed');
      expect(w.log.lines.filter((l) => l.message === 'record failed; it is retried')).toEqual([]);
    },
  );

  test.prop([choiceArb])(
    'a termination policy call is always answered, and only with instance ids the call listed',
    async (payload) => {
      const w = handlerWorld(handOffDeploymentEnv);
      w.cluster.addNode('node-a', instanceId);
      const answer = await w.invokeChoice(w.handler(), payload);
      const listed = Array.isArray(payload.Instances)
        ? payload.Instances.map((i: unknown) => (i as { InstanceId?: unknown } | null)?.InstanceId)
        : [];
      expect(Array.isArray(answer.InstanceIDs)).toBe(true);
      for (const id of answer.InstanceIDs) expect(listed).toContain(id);
      // Each instance once, when the call listed each once.
      if (new Set(listed).size === listed.length)
        expect(new Set(answer.InstanceIDs).size).toBe(answer.InstanceIDs.length);
    },
  );

  it('a rebalance recommendation whose time is an object is told, not failed (found by the property above)', async () => {
    const w = handlerWorld(handOffDeploymentEnv);
    w.groups.set(instanceId, 'workers');
    const body = {
      'detail-type': 'EC2 Instance Rebalance Recommendation',
      source: 'aws.ec2',
      time: { toString: 1 },
      detail: { 'instance-id': instanceId },
    };
    const result = await w.invokeRaw(w.handler(), {
      Records: [{ eventSource: 'aws:sqs', messageId: 'm-0', body: JSON.stringify(body) }],
    });
    expect(result.records?.map((r) => r.status)).toEqual(['rebalance-recommendation']);
  });
});
