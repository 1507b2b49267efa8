// Properties of the termination policy's payload parser (lambda/termination-policy/payload.ts) on arbitrary input:
// never a throw, a refusal names its field, nothing accepted or answered that the payload's Instances did not hold,
// and the fail-open answer is the suggestion itself.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { instanceIdPattern } from '../../../lambda/inbound/lifecycle-message.js';
import { causes, parseChoiceRequest, suggestedIds } from '../../../lambda/termination-policy/payload.js';
import { prototypeNames, untrusted } from '../../fakes/arbitraries.js';

const sometimesBad = <T>(valid: fc.Arbitrary<T>) =>
  fc.oneof(
    { arbitrary: valid, weight: 5 },
    { arbitrary: untrusted, weight: 1 },
    fc.constantFrom('', ...prototypeNames),
  );
const zone = fc.constantFrom('eu-west-1a', 'eu-west-1b');
const market = fc.constantFrom('on-demand', 'spot');

const payloadArb = fc
  .record({
    group: fc.constantFrom('workers', 'gpu'),
    cause: sometimesBad(fc.constantFrom(...causes)),
    capacity: sometimesBad(
      fc.array(
        fc.record({
          AvailabilityZone: sometimesBad(zone),
          Capacity: sometimesBad(fc.integer({ min: 0, max: 3 })),
          InstanceMarketOption: sometimesBad(market),
        }),
        { maxLength: 3 },
      ),
    ),
    instances: sometimesBad(
      fc.array(
        fc.record({
          InstanceId: sometimesBad(fc.stringMatching(/^i-[0-9a-f]{17}$/)),
          AvailabilityZone: sometimesBad(zone),
          InstanceType: sometimesBad(fc.constantFrom('m5.large', 'c6g.xlarge')),
          InstanceMarketOption: sometimesBad(market),
        }),
        { maxLength: 5 },
      ),
    ),
    more: sometimesBad(fc.boolean()),
    arnGroup: fc.constantFrom('workers', 'gpu'),
  })
  .map((g) => ({
    AutoScalingGroupName: g.group,
    AutoScalingGroupARN: `arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:uuid:autoScalingGroupName/${g.arnGroup}`,
    Cause: g.cause,
    CapacityToTerminate: g.capacity,
    Instances: g.instances,
    HasMoreInstances: g.more,
  }));

const listedIds = (payload: Record<string, unknown>): unknown[] =>
  Array.isArray(payload['Instances'])
    ? payload['Instances'].map((i: unknown) =>
        typeof i === 'object' && i !== null ? (i as Record<string, unknown>)['InstanceId'] : undefined,
      )
    : [];

describe("the termination policy's payload (properties)", () => {
  test.prop([fc.oneof(payloadArb, fc.dictionary(fc.string(), untrusted))])(
    'never throws; a refusal names a field of the payload; an accepted request holds only what the payload listed',
    (payload) => {
      const result = parseChoiceRequest(payload);
      if (!result.ok) {
        expect(result.field).toMatch(
          /^(AutoScalingGroupName|AutoScalingGroupARN|Cause|CapacityToTerminate|Instances|HasMoreInstances)/,
        );
        return;
      }
      const listed = listedIds(payload);
      expect(result.request.suggested.map((s) => s.instanceId)).toEqual(listed);
      expect(result.request.group).toBe(payload['AutoScalingGroupName']);
      expect(causes).toContain(result.request.cause);
      for (const c of result.request.capacity) expect(Number.isInteger(c.capacity) && c.capacity >= 0).toBe(true);
    },
  );

  test.prop([fc.oneof(payloadArb, fc.dictionary(fc.string(), untrusted))])(
    'the fail-open answer is only instance ids the payload listed, in its order, even for a refused payload',
    (payload) => {
      const ids = suggestedIds(payload);
      const listed = listedIds(payload);
      expect(ids).toEqual(listed.filter((id): id is string => typeof id === 'string' && instanceIdPattern.test(id)));
      const result = parseChoiceRequest(payload);
      if (result.ok) expect(ids).toEqual(result.request.suggested.map((s) => s.instanceId));
    },
  );
});
