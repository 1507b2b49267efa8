// Properties of the lifecycle message parser (lambda/inbound/lifecycle-message.ts) on arbitrary input: it never
// throws, what it accepts comes from the message itself (a known transition, the instance id as given and an EC2
// one), and a hand-off message parses back to the notification and hand-off it was made from.
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  handOffField,
  handOffMessage,
  instanceIdPattern,
  parseLifecycleMessage,
  type LifecycleNotification,
} from '../../../lambda/inbound/lifecycle-message.js';
import { prototypeNames, untrusted } from '../../fakes/arbitraries.js';

const fieldArb = (valid: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { arbitrary: valid, weight: 4 },
    { arbitrary: untrusted, weight: 1 },
    fc.constantFrom('', ' ', ...prototypeNames),
  );

const messageArb = fc.record(
  {
    LifecycleTransition: fieldArb(
      fc.constantFrom('autoscaling:EC2_INSTANCE_TERMINATING', 'autoscaling:EC2_INSTANCE_LAUNCHING'),
    ),
    AutoScalingGroupName: fieldArb(fc.string({ minLength: 1, maxLength: 12 })),
    LifecycleHookName: fieldArb(fc.string({ minLength: 1, maxLength: 12 })),
    EC2InstanceId: fieldArb(fc.stringMatching(/^i-[0-9a-f]{8,17}$/)),
    LifecycleActionToken: fieldArb(fc.uuid()),
    Time: fieldArb(
      fc
        .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((d) => d.toISOString()),
    ),
    NotificationMetadata: fieldArb(fc.string({ maxLength: 20 })),
    Origin: fieldArb(fc.constantFrom('EC2', 'AutoScalingGroup', 'WarmPool')),
    Destination: fieldArb(fc.constantFrom('EC2', 'AutoScalingGroup', 'WarmPool')),
    [handOffField]: fieldArb(
      fc.record(
        {
          count: fc.integer({ min: -1, max: 20 }),
          claim: fc.oneof(fc.string({ maxLength: 20 }), untrusted),
          resumedBy: fc.constantFrom('reconciler', 'x'),
        },
        { requiredKeys: ['count'] },
      ),
    ),
  },
  { requiredKeys: [] },
);

/** A notification as the parser builds it: every field it keeps, valid. */
const notificationArb: fc.Arbitrary<LifecycleNotification> = fc.record({
  transition: fc.constantFrom('launching', 'terminating'),
  autoScalingGroupName: fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() !== ''),
  lifecycleHookName: fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() !== ''),
  instanceId: fc.stringMatching(/^i-[0-9a-f]{8,17}$/),
  lifecycleActionToken: fc.option(fc.uuid(), { nil: undefined }),
  time: fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }),
  notificationMetadata: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  origin: fc.option(fc.constantFrom('EC2', 'AutoScalingGroup', 'WarmPool'), { nil: undefined }),
  destination: fc.option(fc.constantFrom('EC2', 'AutoScalingGroup', 'WarmPool'), { nil: undefined }),
  handOff: fc.constant(undefined),
});
const handOffArb = fc.option(
  fc.record({
    count: fc.integer({ min: 1, max: 50 }),
    claim: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
    byReconciler: fc.boolean(),
  }),
  { nil: undefined },
);

describe('lifecycle messages (properties)', () => {
  test.prop([messageArb])(
    'never throws, and accepts only a known transition and an EC2 instance id from the message',
    (message) => {
      const result = parseLifecycleMessage(message);
      if (!result.ok) {
        expect(typeof result.field).toBe('string');
        expect(typeof result.reason).toBe('string');
        return;
      }
      const n = result.notification;
      expect(['launching', 'terminating']).toContain(n.transition);
      expect(n.instanceId).toBe(message.EC2InstanceId);
      expect(instanceIdPattern.test(n.instanceId)).toBe(true);
      expect(n.autoScalingGroupName).toBe(message.AutoScalingGroupName);
      expect(n.lifecycleHookName).toBe(message.LifecycleHookName);
      expect(Number.isNaN(n.time.getTime())).toBe(false);
      if (n.lifecycleActionToken !== undefined) expect(n.lifecycleActionToken).toBe(message.LifecycleActionToken);
      if (n.handOff !== undefined) expect(Number.isInteger(n.handOff.count) && n.handOff.count >= 1).toBe(true);
    },
  );

  test.prop([notificationArb, handOffArb])(
    'a hand-off message parses back to the notification and the hand-off it was made from',
    (n, h) => {
      fc.pre(n.lifecycleActionToken !== undefined || h?.byReconciler === true);
      const result = parseLifecycleMessage(JSON.parse(JSON.stringify(handOffMessage(n, h))));
      expect(result).toEqual({
        ok: true,
        notification: {
          ...n,
          origin: n.origin ?? 'AutoScalingGroup',
          handOff: h === undefined ? undefined : { count: h.count, claim: h.claim, byReconciler: h.byReconciler },
        },
      });
    },
  );

  it.each(prototypeNames)('a LifecycleTransition of %s is refused (found by the property above)', (name) => {
    const result = parseLifecycleMessage({
      LifecycleTransition: name,
      AutoScalingGroupName: 'workers',
      LifecycleHookName: 'workers-terminate',
      EC2InstanceId: 'i-0123456789abcdef0',
      LifecycleActionToken: 'token',
      Time: '2026-11-22T10:00:00.000Z',
    });
    expect(result).toMatchObject({ ok: false, field: 'LifecycleTransition' });
  });

  it('a LifecycleTransition that is an object JSON can carry is refused, not thrown (found by the property above)', () => {
    const message = JSON.parse('{"LifecycleTransition": {"toString": 1}, "EC2InstanceId": "i-0123456789abcdef0"}');
    expect(parseLifecycleMessage(message)).toMatchObject({ ok: false, field: 'LifecycleTransition' });
  });
});
