// Properties of the delivery parser (lambda/inbound/deliveries.ts) on arbitrary input: nothing thrown but the one
// documented error (an invocation of no known shape), one delivery per record, every delivery of a known kind, and
// nothing answered that the input did not hold.
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { toDeliveries, UnsupportedEventError, type Delivery } from '../../../lambda/inbound/deliveries.js';
import { prototypeNames, untrusted } from '../../fakes/arbitraries.js';

const kinds: ReadonlySet<string> = new Set([
  'terminate',
  'launch',
  'test-notification',
  'event',
  'termination-choice',
  'malformed',
]);
const vias: ReadonlySet<string> = new Set(['sns', 'sqs', 'eventbridge', 'autoscaling']);

/** A lifecycle message whose fields are drawn from valid values, near misses and the prototype's names. */
const messageArb = fc.record(
  {
    LifecycleTransition: fc.constantFrom(
      'autoscaling:EC2_INSTANCE_TERMINATING',
      'autoscaling:EC2_INSTANCE_LAUNCHING',
      'autoscaling:TEST',
      ...prototypeNames,
    ),
    Event: fc.constantFrom('autoscaling:TEST_NOTIFICATION', 'other'),
    AutoScalingGroupName: fc.string({ maxLength: 8 }),
    EC2InstanceId: fc.constantFrom('i-0123456789abcdef0', 'i-XYZ', ''),
    'detail-type': fc.constantFrom('EC2 Instance-terminate Lifecycle Action', 'EC2 Spot Instance Interruption Warning'),
    detail: untrusted,
  },
  { requiredKeys: ['LifecycleTransition'] },
);

/** Records as SNS and SQS deliver them, with any body, or anything at all in their place. */
const recordArb = fc.oneof(
  fc.record({
    EventSource: fc.constant('aws:sns'),
    Sns: fc.record({
      MessageId: fc.string({ maxLength: 6 }),
      Message: fc.oneof(
        messageArb.map((m) => JSON.stringify(m)),
        fc.string(),
      ),
    }),
  }),
  fc.record({
    eventSource: fc.constant('aws:sqs'),
    messageId: fc.string({ maxLength: 6 }),
    body: fc.oneof(
      messageArb.map((m) => JSON.stringify(m)),
      fc.string(),
      untrusted,
    ),
  }),
  untrusted,
);
const eventArb = fc.oneof(
  fc.record({ Records: fc.array(recordArb, { maxLength: 5 }) }),
  messageArb,
  fc.record({ 'detail-type': fc.string({ maxLength: 10 }), detail: untrusted, id: untrusted }),
  fc.record({
    CapacityToTerminate: untrusted,
    AutoScalingGroupName: untrusted,
    Instances: untrusted,
    Cause: untrusted,
  }),
  untrusted,
);

function deliveriesOf(event: unknown): Delivery[] | 'unsupported' {
  try {
    return toDeliveries(event);
  } catch (error) {
    // The one error it may throw: the invocation itself is of no known shape.
    expect(error).toBeInstanceOf(UnsupportedEventError);
    return 'unsupported';
  }
}

describe('deliveries (properties)', () => {
  test.prop([eventArb])(
    'no throw escapes but UnsupportedEventError, and every delivery is of a known kind',
    (event) => {
      const deliveries = deliveriesOf(event);
      if (deliveries === 'unsupported') return;
      for (const d of deliveries) {
        expect(kinds.has(d.kind)).toBe(true);
        expect(vias.has(d.via)).toBe(true);
        expect(d.id === undefined || typeof d.id === 'string').toBe(true);
      }
    },
  );

  test.prop([fc.array(recordArb, { maxLength: 6 })])(
    'one delivery per record, each from its own record: nothing answered that the input did not hold',
    (records) => {
      const deliveries = deliveriesOf({ Records: records });
      expect(deliveries).not.toBe('unsupported');
      expect(deliveries).toHaveLength(records.length);
      (deliveries as Delivery[]).forEach((d, i) => {
        const text = JSON.stringify(records[i]);
        if (d.id !== undefined) expect(text).toContain(JSON.stringify(d.id).slice(1, -1));
        if ('message' in d) {
          const from = records[i] as { Sns?: { Message?: string }; body?: unknown };
          const raw = from.Sns?.Message ?? from.body;
          expect(typeof raw).toBe('string');
          expect(d.message).toMatchObject(
            d.field === 'detail' ? (JSON.parse(raw as string) as { detail: object }).detail : JSON.parse(raw as string),
          );
        }
      });
    },
  );

  it.each(prototypeNames)(
    'a LifecycleTransition of %s is malformed, not a delivery of an unknown kind (found by the property above)',
    (name) => {
      const [d] = toDeliveries({
        Records: [{ EventSource: 'aws:sns', Sns: { Message: JSON.stringify({ LifecycleTransition: name }) } }],
      });
      expect(d).toMatchObject({ kind: 'malformed', field: 'LifecycleTransition' });
    },
  );
});
