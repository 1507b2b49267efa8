// Storm control and the parallel limit, each rule alone, with managed groups' defaults.
import { describe, expect, it } from 'vitest';
import { parallelLimit, replacementHeld, stormOf } from '../../../lambda/repair/limits.js';

describe('storm control', () => {
  it('by default holds only a group of more than 5 nodes with more than 20 % unhealthy', () => {
    expect(stormOf(5, 5, undefined)).toBeUndefined();
    expect(stormOf(10, 2, undefined)).toBeUndefined();
    expect(stormOf(10, 3, undefined)).toMatch(/3 of its 10 nodes .*more than 20 %/);
    expect(stormOf(6, 2, undefined)).toBeDefined();
  });

  it('with a count, holds above it', () => {
    expect(stormOf(3, 2, { count: 2 })).toBeUndefined();
    expect(stormOf(3, 3, { count: 2 })).toMatch(/more than 2\)/);
  });

  it('with a percentage, holds above that share of the group, whatever its size', () => {
    expect(stormOf(4, 2, { percentage: 50 })).toBeUndefined();
    expect(stormOf(4, 3, { percentage: 50 })).toMatch(/more than 50 %/);
  });
});

describe('parallel limit', () => {
  it('a count is a count', () => expect(parallelLimit(10, { count: 2 })).toBe(2));
  it('a percentage is of the unhealthy nodes, at least one', () => {
    expect(parallelLimit(10, { percentage: 30 })).toBe(3);
    expect(parallelLimit(2, { percentage: 10 })).toBe(1);
  });
});

// Found by the mutation score: the reason a replacement is held names the suspended processes and what follows.
describe('a replacement held by suspended processes', () => {
  it('is not held by processes a replacement does not need', () => {
    expect(replacementHeld([])).toBeUndefined();
    expect(replacementHeld(['AZRebalance', 'AlarmNotification'])).toBeUndefined();
  });

  it('says what each suspension does, in the order Auto Scaling runs them', () => {
    expect(replacementHeld(['Launch'])).toBe(
      "Auto Scaling's Launch process is suspended on the group: it would terminate the instance and launch none in " +
        'its place',
    );
    expect(replacementHeld(['Terminate', 'AZRebalance'])).toBe(
      "Auto Scaling's Terminate process is suspended on the group: an instance marked Unhealthy would not be replaced",
    );
    expect(replacementHeld(['Launch', 'ReplaceUnhealthy'])).toBe(
      "Auto Scaling's ReplaceUnhealthy, Launch processes are suspended on the group: an instance marked Unhealthy " +
        'would not be replaced',
    );
  });
});
