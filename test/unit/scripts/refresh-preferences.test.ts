// The instance refresh `upgrade` starts (scripts/refresh-preferences.ts), against the limits
// of the API: MinHealthyPercentage 0..100, MaxHealthyPercentage 100..200, Max - Min <= 100,
// at most 10 alarms, no AutoRollback to $Latest or $Default.
// https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_RefreshPreferences.html
import { describe, expect, it } from 'vitest';
import {
  batchPercentage,
  refreshPreferences,
  startRefreshInput,
  UpgradeOptionsError,
  type UpgradeOptions,
} from '../../../scripts/refresh-preferences.js';

const base: UpgradeOptions = {
  group: 'workers',
  strategy: 'default',
  desiredCapacity: 6,
  autoRollback: false,
  alarms: [],
};
const withinLimits = (p: { MinHealthyPercentage?: number; MaxHealthyPercentage?: number }) =>
  p.MinHealthyPercentage! >= 0 &&
  p.MinHealthyPercentage! <= 100 &&
  p.MaxHealthyPercentage! >= 100 &&
  p.MaxHealthyPercentage! <= 200 &&
  p.MaxHealthyPercentage! - p.MinHealthyPercentage! <= 100;

describe('refresh preferences from upgrade options', () => {
  it('default: launch before terminate, one instance at a time, never below capacity; skips matching instances', () => {
    expect(refreshPreferences(base)).toEqual({
      MinHealthyPercentage: 100,
      MaxHealthyPercentage: 117,
      SkipMatching: true,
      AutoRollback: false,
    });
  });

  it('minimal: terminate first, N at a time', () => {
    expect(refreshPreferences({ ...base, strategy: 'minimal', maxUnavailable: 2 })).toMatchObject({
      MinHealthyPercentage: 66,
      MaxHealthyPercentage: 100,
    });
  });

  it('takes a percentage as given, and N as a percentage of the group rounded up (at least one instance a batch)', () => {
    expect(refreshPreferences({ ...base, maxUnavailablePercentage: 25 })).toMatchObject({
      MinHealthyPercentage: 100,
      MaxHealthyPercentage: 125,
    });
    expect(batchPercentage({ desiredCapacity: 300, maxUnavailable: 1 })).toBe(1);
    expect(batchPercentage({ desiredCapacity: 3, maxUnavailable: 5 })).toBe(100);
  });

  it('stays within the API limits for every strategy, N and group size', () => {
    for (const strategy of ['default', 'minimal'] as const) {
      for (const desiredCapacity of [1, 2, 3, 7, 50, 1000]) {
        for (const maxUnavailable of [1, 2, 5, 100, 2000]) {
          expect(withinLimits(refreshPreferences({ ...base, strategy, desiredCapacity, maxUnavailable }))).toBe(true);
        }
        for (const maxUnavailablePercentage of [1, 33, 100]) {
          expect(
            withinLimits(refreshPreferences({ ...base, strategy, desiredCapacity, maxUnavailablePercentage })),
          ).toBe(true);
        }
      }
    }
  });

  it('puts the alarms in the alarm specification, and refuses what the API would', () => {
    expect(
      refreshPreferences({ ...base, alarms: ['gnt-DrainsTimedOut', 'gnt-LaunchesAbandoned'], autoRollback: true }),
    ).toMatchObject({
      AlarmSpecification: { Alarms: ['gnt-DrainsTimedOut', 'gnt-LaunchesAbandoned'] },
      AutoRollback: true,
    });
    expect(() => refreshPreferences({ ...base, alarms: Array.from({ length: 11 }, (_, i) => `a${i}`) })).toThrow(
      /at most 10 alarms/,
    );
    expect(() => refreshPreferences({ ...base, autoRollback: true, launchTemplateVersion: '$Latest' })).toThrow(
      UpgradeOptionsError,
    );
    expect(() => refreshPreferences({ ...base, maxUnavailable: 1, maxUnavailablePercentage: 10 })).toThrow(/not both/);
    expect(() => refreshPreferences({ ...base, maxUnavailablePercentage: 0 })).toThrow(/1 to 100/);
    expect(() => refreshPreferences({ ...base, maxUnavailable: 0 })).toThrow(/>= 1/);
    expect(() => refreshPreferences({ ...base, desiredCapacity: 0 })).toThrow(/nothing to upgrade/);
  });

  it('starts a rolling refresh to the asked launch template version', () => {
    expect(startRefreshInput({ ...base, launchTemplateVersion: '7', launchTemplate: { id: 'lt-0abc' } })).toMatchObject(
      {
        AutoScalingGroupName: 'workers',
        Strategy: 'Rolling',
        DesiredConfiguration: { LaunchTemplate: { LaunchTemplateId: 'lt-0abc', Version: '7' } },
      },
    );
    expect(startRefreshInput(base).DesiredConfiguration).toBeUndefined();
  });

  it('refuses --auto-rollback for a group that uses $Latest or $Default itself, whatever version it rolls to', () => {
    // AutoRollback: "A rollback is not supported ... The Auto Scaling group uses the launch template's $Latest or
    // $Default version." https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_RefreshPreferences.html
    for (const groupVersion of ['$Latest', '$Default'])
      expect(() =>
        refreshPreferences({ ...base, autoRollback: true, launchTemplateVersion: '7', groupVersion }),
      ).toThrow(new RegExp(`^--auto-rollback is refused: workers uses its launch template's \\${groupVersion}`));
    expect(
      refreshPreferences({ ...base, autoRollback: true, launchTemplateVersion: '7', groupVersion: '6' }),
    ).toMatchObject({
      AutoRollback: true,
    });
    expect(refreshPreferences({ ...base, launchTemplateVersion: '7', groupVersion: '$Latest' })).toMatchObject({
      AutoRollback: false,
    });
  });
});
