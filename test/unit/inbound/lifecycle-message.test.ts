import { describe, expect, it } from 'vitest';
import { toDeliveries } from '../../../lambda/inbound/deliveries.js';
import { parseLifecycleMessage, type ParseResult } from '../../../lambda/inbound/lifecycle-message.js';
import { instanceId, lifecycleMessage, snsRecord, testMessage } from '../../fixtures/notifications.js';

type Parsed =
  | ParseResult
  | { readonly ok: true; readonly notification: { readonly kind: 'test'; readonly autoScalingGroupName: unknown } };

/** One SNS record through the path the router takes: unwrap the delivery, then parse the message. */
function parseLifecycleRecord(record: unknown): Parsed {
  const delivery = toDeliveries({ Records: [record] })[0]!;
  if (delivery.kind === 'malformed') return { ok: false, field: delivery.field, reason: delivery.reason };
  if (delivery.kind === 'test-notification')
    return { ok: true, notification: { kind: 'test', autoScalingGroupName: delivery.message['AutoScalingGroupName'] } };
  if (delivery.kind !== 'terminate' && delivery.kind !== 'launch')
    throw new Error(`not a lifecycle message: ${delivery.kind}`);
  return parseLifecycleMessage(delivery.message);
}

describe('an SNS record of a lifecycle notification', () => {
  it('parses a terminate notification', () => {
    expect(parseLifecycleRecord(snsRecord(lifecycleMessage()))).toEqual({
      ok: true,
      notification: {
        transition: 'terminating',
        autoScalingGroupName: 'workers',
        lifecycleHookName: 'workers-terminate',
        instanceId,
        lifecycleActionToken: '71cd9f4c-aaaa-bbbb-cccc-ddddeeeeffff',
        time: new Date('2026-11-22T10:00:00.000Z'),
        notificationMetadata: '{"clusterName":"prod"}',
        origin: 'AutoScalingGroup',
        destination: 'EC2',
        handOff: undefined,
      },
    });
  });

  it('parses a launch notification', () => {
    const result = parseLifecycleRecord(
      snsRecord(lifecycleMessage({ LifecycleTransition: 'autoscaling:EC2_INSTANCE_LAUNCHING' })),
    );
    expect(result).toMatchObject({ ok: true, notification: { transition: 'launching' } });
  });

  it('recognises the test notification Auto Scaling sends when a hook is created', () => {
    expect(parseLifecycleRecord(snsRecord(testMessage))).toEqual({
      ok: true,
      notification: { kind: 'test', autoScalingGroupName: 'workers' },
    });
  });

  it('accepts a message without NotificationMetadata', () => {
    const message = lifecycleMessage();
    delete message['NotificationMetadata'];
    expect(parseLifecycleRecord(snsRecord(message))).toMatchObject({
      ok: true,
      notification: { notificationMetadata: undefined },
    });
  });

  const malformed: [string, unknown, string][] = [
    ['a record that is not an object', 'nope', 'Records[0]'],
    ['a record that is null', null, 'Records[0]'],
    ['a record without Sns', { EventSource: 'aws:sns' }, 'Sns'],
    ['an Sns without Message', { Sns: { MessageId: 'x' } }, 'Sns.Message'],
    ['a Message that is not a string', { Sns: { Message: { a: 1 } } }, 'Sns.Message'],
    ['a Message that is not JSON', snsRecord('{"Origin": '), 'Sns.Message'],
    ['a Message that is a JSON array', snsRecord('[1,2]'), 'Sns.Message'],
    ['a Message that is JSON null', snsRecord('null'), 'Sns.Message'],
    [
      'a missing LifecycleTransition',
      snsRecord(lifecycleMessage({ LifecycleTransition: undefined })),
      'LifecycleTransition',
    ],
    [
      'an unknown LifecycleTransition',
      snsRecord(lifecycleMessage({ LifecycleTransition: 'autoscaling:EC2_INSTANCE_WARMING' })),
      'LifecycleTransition',
    ],
    ['a numeric LifecycleTransition', snsRecord(lifecycleMessage({ LifecycleTransition: 7 })), 'LifecycleTransition'],
    [
      'a missing AutoScalingGroupName',
      snsRecord(lifecycleMessage({ AutoScalingGroupName: undefined })),
      'AutoScalingGroupName',
    ],
    ['an empty LifecycleHookName', snsRecord(lifecycleMessage({ LifecycleHookName: '' })), 'LifecycleHookName'],
    ['a missing EC2InstanceId', snsRecord(lifecycleMessage({ EC2InstanceId: undefined })), 'EC2InstanceId'],
    [
      'an EC2InstanceId that is not an instance id',
      snsRecord(lifecycleMessage({ EC2InstanceId: 'node-a' })),
      'EC2InstanceId',
    ],
    [
      'a missing LifecycleActionToken',
      snsRecord(lifecycleMessage({ LifecycleActionToken: undefined })),
      'LifecycleActionToken',
    ],
    ['a missing Time', snsRecord(lifecycleMessage({ Time: undefined })), 'Time'],
    ['a Time that is not a date', snsRecord(lifecycleMessage({ Time: 'yesterday' })), 'Time'],
  ];

  it('reads a hand-off as a pointer: count and claim, nothing that decides where the drain stands', () => {
    const handOff = {
      count: 2,
      claim: 'sha256:ab/2/req',
      phase: 'settle',
      loadBalancerWaitUntil: '2026-11-22T10:00:00Z',
      drainOutcome: 'drained',
      evicted: 9,
    };
    expect(
      parseLifecycleRecord(snsRecord(lifecycleMessage({ GracefulNodeTerminationHandOff: handOff }))),
    ).toMatchObject({
      ok: true,
      notification: { handOff: { count: 2, claim: 'sha256:ab/2/req', byReconciler: false } },
    });
  });

  it("takes a reconciler's hand-off without a token (it names the action by instance), and nothing else without one", () => {
    const pointer = { count: 1, resumedBy: 'reconciler' };
    expect(
      parseLifecycleRecord(
        snsRecord(lifecycleMessage({ LifecycleActionToken: undefined, GracefulNodeTerminationHandOff: pointer })),
      ),
    ).toMatchObject({
      ok: true,
      notification: { lifecycleActionToken: undefined, handOff: { byReconciler: true } },
    });
    expect(
      parseLifecycleRecord(
        snsRecord(lifecycleMessage({ LifecycleActionToken: undefined, GracefulNodeTerminationHandOff: { count: 1 } })),
      ),
    ).toMatchObject({
      ok: false,
      field: 'LifecycleActionToken',
    });
  });

  it.each(malformed)('names the field for %s', (_what, record, field) => {
    const result = parseLifecycleRecord(record);
    expect(result.ok).toBe(false);
    expect(result).toMatchObject({ field, reason: expect.any(String) });
  });
});
