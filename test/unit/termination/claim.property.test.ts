// Properties of the hand-off claim (lambda/termination/claim.ts): a claim reads back as the action, the step and
// the request id it was written with (a request id may hold slashes), and anything else on the node reads as a
// claim of a step of at least zero (0: the first invocation's own claim, written with its marks), or as none,
// without a throw.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { ActionId } from '../../../lambda/cluster/model.js';
import { claimValue, firstInvocation, parseClaim } from '../../../lambda/termination/claim.js';

const actionIdArb: fc.Arbitrary<ActionId> = fc.oneof(
  fc.stringMatching(/^[0-9a-f]{32}$/).map((h) => `sha256:${h}` as const),
  fc.stringMatching(/^i-[0-9a-f]{17}$/).map((i) => `instance:${i}` as const),
  fc.stringMatching(/^i-[0-9a-f]{17}$/).map((i) => `spot:${i}` as const),
);

describe('hand-off claims (properties)', () => {
  test.prop([actionIdArb, fc.integer({ min: firstInvocation, max: 10_000 }), fc.string({ maxLength: 40 })])(
    'a claim reads back as what it was written with',
    (actionId, count, requestId) => {
      expect(parseClaim(claimValue(actionId, count, requestId))).toEqual({ actionId, count, requestId });
    },
  );

  test.prop([fc.option(fc.string({ maxLength: 60 }), { nil: undefined })])(
    'anything else reads as a claim of a step of at least zero, or as none, without a throw',
    (value) => {
      const claim = parseClaim(value);
      if (claim === undefined) return;
      expect(Number.isInteger(claim.count) && claim.count >= firstInvocation).toBe(true);
      expect(claim.actionId).toMatch(/^(sha256|instance|spot):./);
    },
  );
});
