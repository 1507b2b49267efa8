// Properties of label selectors (lambda/shared/label-selector.ts): matchesSelector agrees with Kubernetes' reading
// of matchLabels and matchExpressions over a label map, for every key, including the names every plain object
// already answers to ("constructor", "toString"): a pod has a label only when its map holds it.
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { matchesSelector, type LabelSelector } from '../../../lambda/shared/label-selector.js';
import { prototypeNames } from '../../fakes/arbitraries.js';

const keys = fc.constantFrom('app', 'tier', ...prototypeNames);
const values = fc.constantFrom('web', 'db', '');
const labelsArb = fc.dictionary(keys, values, { maxKeys: 4 });
const selectorArb: fc.Arbitrary<LabelSelector> = fc.record(
  {
    matchLabels: fc.dictionary(keys, values, { maxKeys: 2 }),
    matchExpressions: fc.array(
      fc.record({
        key: keys,
        operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist'),
        values: fc.array(values, { minLength: 1, maxLength: 2 }),
      }),
      { maxLength: 3 },
    ),
  },
  { requiredKeys: [] },
);

/** Kubernetes' reading, over a Map of the label map's own entries. */
function reference(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  const has = new Map(Object.entries(labels));
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => has.get(k) === v);
  const byExpressions = (selector.matchExpressions ?? []).every((e) => {
    const value = has.get(e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        return value !== undefined && values.includes(value);
      case 'NotIn':
        return value === undefined || !values.includes(value);
      case 'Exists':
        return value !== undefined;
      default:
        return value === undefined;
    }
  });
  return byLabels && byExpressions;
}

describe('label selectors (properties)', () => {
  test.prop([selectorArb, labelsArb])("agree with Kubernetes' reading for every key", (selector, labels) => {
    expect(matchesSelector(selector, labels)).toBe(reference(selector, labels));
  });

  test.prop([labelsArb])('the empty selector selects every label map', (labels) => {
    expect(matchesSelector({}, labels)).toBe(true);
  });

  it('a key every object answers to is not a label the pod has (the property above found it)', () => {
    expect(matchesSelector({ matchExpressions: [{ key: 'toString', operator: 'Exists' }] }, {})).toBe(false);
    expect(matchesSelector({ matchExpressions: [{ key: 'constructor', operator: 'DoesNotExist' }] }, {})).toBe(true);
    expect(matchesSelector({ matchExpressions: [{ key: 'valueOf', operator: 'NotIn', values: ['x'] }] }, {})).toBe(
      true,
    );
  });
});
