// REPAIR's value: off, on, or NodeRepairConfig's knobs as JSON; every bad value refused with its reason.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../lambda/shared/config.js';
import {
  defaultRepairSettings,
  formatRepairSettings,
  parseRepairSettings,
  RepairAction,
} from '../../../lambda/shared/repair-settings.js';
import { handOffDeploymentEnv } from '../../fixtures/notifications.js';

describe('REPAIR', () => {
  it('is off unless set, on with managed groups defaults', () => {
    expect(parseConfig(handOffDeploymentEnv).repair).toBeUndefined();
    expect(parseConfig({ ...handOffDeploymentEnv, REPAIR: 'off' }).repair).toBeUndefined();
    expect(parseConfig({ ...handOffDeploymentEnv, REPAIR: 'on' }).repair).toEqual(defaultRepairSettings);
    expect(defaultRepairSettings.repairAfterMinutes).toMatchObject({
      AcceleratedHardwareReady: 10,
      NetworkingReady: 30,
      Ready: 30,
    });
  });

  it('reads every knob and writes it back the same', () => {
    const raw = JSON.stringify({
      repairAfterMinutes: { Ready: 15 },
      maxUnhealthyNodeThresholdPercentage: 40,
      maxParallelNodesRepairedCount: 2,
      nodeRepairConfigOverrides: [
        {
          nodeMonitoringCondition: 'AcceleratedHardwareReady',
          nodeUnhealthyReason: 'NvidiaXID64Error',
          minRepairWaitTimeMins: 5,
          repairAction: 'Reboot',
        },
      ],
      nodeSelector: 'role=gpu',
    });
    const s = parseRepairSettings(raw);
    expect(s).toMatchObject({
      maxUnhealthy: { percentage: 40 },
      maxParallel: { count: 2 },
      nodeSelector: 'role=gpu',
      repairAfterMinutes: { Ready: 15, KernelReady: 30 },
    });
    expect((s as typeof defaultRepairSettings).overrides[0]?.repairAction).toBe(RepairAction.REBOOT);
    expect(parseRepairSettings(formatRepairSettings(s as typeof defaultRepairSettings))).toEqual(s);
  });

  it.each([
    ['{"maxParallelNodesRepairedCount":1,"maxParallelNodesRepairedPercentage":10}', /exclude each other/],
    ['{"maxUnhealthyNodeThresholdPercentage":0}', /from 1 to 100/],
    [
      '{"nodeRepairConfigOverrides":[{"nodeMonitoringCondition":"Ready","nodeUnhealthyReason":"x","minRepairWaitTimeMins":1,"repairAction":"Delete"}]}',
      /Replace, Reboot, NoAction/,
    ],
    [
      '{"nodeRepairConfigOverrides":[{"nodeMonitoringCondition":"Ready"}]}',
      /needs nodeMonitoringCondition and nodeUnhealthyReason/,
    ],
    ['{"repairAfterMinutes":{"Ready":0}}', /whole minutes/],
    ['{"maxParallel":1}', /unknown key\(s\) maxParallel/],
    ['yes', /neither on, off nor a JSON object/],
  ])('refuses %s with its reason at cold start', (raw, why) => {
    expect(() => parseConfig({ ...handOffDeploymentEnv, REPAIR: raw })).toThrow(why);
  });

  it('needs the reconciler it runs with', () => {
    expect(() => parseConfig({ ...handOffDeploymentEnv, REPAIR: 'on', RECONCILE_MARKS: 'false' })).toThrow(
      /needs RECONCILE_MARKS=true/,
    );
  });
});
