import { describe, expect, it } from 'vitest';
import { parseChoiceRequest, suggestedIds } from '../../../lambda/termination-policy/payload.js';
import { choicePayload } from '../../fixtures/choice.js';

const ids = ['i-0aaaaaaaaaaaaaaa1', 'i-0aaaaaaaaaaaaaaa2'];

describe('the termination policy payload', () => {
  it('reads the documented shape', () => {
    const r = parseChoiceRequest({ ...choicePayload(ids, { capacity: 1 }), HasMoreInstances: true });
    expect(r).toEqual({
      ok: true,
      request: {
        group: 'workers',
        groupArn: choicePayload(ids).AutoScalingGroupARN,
        cause: 'SCALE_IN',
        capacity: [{ availabilityZone: 'eu-west-1a', capacity: 1, market: 'on-demand' }],
        suggested: ids.map((instanceId) => ({
          instanceId,
          availabilityZone: 'eu-west-1a',
          instanceType: 'm7g.large',
          market: 'on-demand',
        })),
        hasMoreInstances: true,
      },
    });
  });

  const refused: [string, (p: Record<string, unknown>) => void, string][] = [
    ['AutoScalingGroupName', (p) => delete p['AutoScalingGroupName'], 'AutoScalingGroupName'],
    [
      'an ARN of another group',
      (p) => (p['AutoScalingGroupARN'] = choicePayload(ids, { group: 'other' })['AutoScalingGroupARN']),
      'AutoScalingGroupARN',
    ],
    ['a malformed ARN', (p) => (p['AutoScalingGroupARN'] = 'arn:nope'), 'AutoScalingGroupARN'],
    ['an unknown cause', (p) => (p['Cause'] = 'WHIM'), 'Cause'],
    ['a capacity that is not a list', (p) => (p['CapacityToTerminate'] = {}), 'CapacityToTerminate'],
    [
      'a negative capacity',
      (p) => ((p['CapacityToTerminate'] as Record<string, unknown>[])[0]!['Capacity'] = -1),
      'CapacityToTerminate[0].Capacity',
    ],
    [
      'a capacity with no zone',
      (p) => delete (p['CapacityToTerminate'] as Record<string, unknown>[])[0]!['AvailabilityZone'],
      'CapacityToTerminate[0].AvailabilityZone',
    ],
    [
      'a capacity with no market',
      (p) => delete (p['CapacityToTerminate'] as Record<string, unknown>[])[0]!['InstanceMarketOption'],
      'CapacityToTerminate[0].InstanceMarketOption',
    ],
    ['instances that are not a list', (p) => (p['Instances'] = 'i-1'), 'Instances'],
    [
      'a bad instance id',
      (p) => ((p['Instances'] as Record<string, unknown>[])[1]!['InstanceId'] = 'i-nope'),
      'Instances[1].InstanceId',
    ],
    [
      'an instance with no zone',
      (p) => delete (p['Instances'] as Record<string, unknown>[])[0]!['AvailabilityZone'],
      'Instances[0].AvailabilityZone',
    ],
    [
      'an instance with no market',
      (p) => delete (p['Instances'] as Record<string, unknown>[])[0]!['InstanceMarketOption'],
      'Instances[0].InstanceMarketOption',
    ],
    ['HasMoreInstances not a boolean', (p) => (p['HasMoreInstances'] = 'yes'), 'HasMoreInstances'],
  ];
  it.each(refused)('refuses %s, naming the field', (_, spoil, field) => {
    const p = choicePayload(ids);
    spoil(p);
    const r = parseChoiceRequest(p);
    expect(r.ok).toBe(false);
    expect(r.ok === false && r.field).toBe(field);
  });

  it("keeps what it can read of Auto Scaling's suggestion, for the fail-open answer", () => {
    const p = choicePayload(ids);
    (p['Instances'] as unknown[]).push({ InstanceId: 'bogus' }, 7);
    expect(suggestedIds(p)).toEqual(ids);
    expect(suggestedIds({})).toEqual([]);
  });
});
