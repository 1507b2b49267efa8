// Each repair rule alone: which condition is bad, its wait by condition (managed groups'
// defaults), an override by condition and reason, the strongest due action, and a node that
// recovered is healthy whatever it went through.
import { describe, expect, it } from 'vitest';
import type { NodeCondition } from '../../../lambda/cluster/model.js';
import { judge, ruleFor } from '../../../lambda/repair/rules.js';
import { defaultRepairSettings, RepairAction, type RepairSettings } from '../../../lambda/shared/repair-settings.js';

const now = Date.parse('2026-11-27T12:00:00Z');
const min = 60_000;
const cond = (type: string, status: string, agoMinutes: number, reason = ''): NodeCondition => ({
  type,
  status,
  reason,
  sinceMs: now - agoMinutes * min,
});
const healthy = [
  'Ready',
  'KernelReady',
  'NetworkingReady',
  'ContainerRuntimeReady',
  'StorageReady',
  'AcceleratedHardwareReady',
].map((t) => cond(t, 'True', 600));
const node = (...bad: NodeCondition[]) => ({
  conditions: [...healthy.filter((h) => !bad.some((b) => b.type === h.type)), ...bad],
});
const withOverride = (repairAction: RepairAction, minutes = 5): RepairSettings => ({
  ...defaultRepairSettings,
  overrides: [
    {
      nodeMonitoringCondition: 'AcceleratedHardwareReady',
      nodeUnhealthyReason: 'NvidiaXID64Error',
      minRepairWaitTimeMins: minutes,
      repairAction,
    },
  ],
});

describe('repair rules', () => {
  it('a node whose monitored conditions are all True is healthy, and so is one without the agent (no conditions but Ready)', () => {
    expect(judge(node(), defaultRepairSettings, now)).toEqual({ kind: 'healthy' });
    expect(judge({ conditions: [cond('Ready', 'True', 1)] }, defaultRepairSettings, now)).toEqual({ kind: 'healthy' });
  });

  it('ignores conditions no rule names (MemoryPressure, DiskPressure)', () => {
    expect(
      judge(
        node(cond('DiskPressure', 'True', 100), cond('MemoryPressure', 'Unknown', 100)),
        defaultRepairSettings,
        now,
      ),
    ).toEqual({ kind: 'healthy' });
  });

  it('waits 30 min for NetworkingReady False, then it is due with Replace', () => {
    expect(
      judge(node(cond('NetworkingReady', 'False', 29, 'IPAMDNotReady')), defaultRepairSettings, now),
    ).toMatchObject({ kind: 'waiting', dueAtMs: now + min });
    expect(
      judge(node(cond('NetworkingReady', 'False', 30, 'IPAMDNotReady')), defaultRepairSettings, now),
    ).toMatchObject({
      kind: 'due',
      action: RepairAction.REPLACE,
      bad: { condition: 'NetworkingReady', reason: 'IPAMDNotReady', minutes: 30, ruleMinutes: 30 },
    });
  });

  it('waits 10 min only for accelerated hardware', () => {
    expect(judge(node(cond('AcceleratedHardwareReady', 'False', 10)), defaultRepairSettings, now).kind).toBe('due');
    expect(judge(node(cond('KernelReady', 'False', 10)), defaultRepairSettings, now).kind).toBe('waiting');
  });

  it('takes Ready Unknown (the kubelet stopped posting) as bad', () => {
    expect(judge(node(cond('Ready', 'Unknown', 31, 'NodeStatusUnknown')), defaultRepairSettings, now)).toMatchObject({
      kind: 'due',
      bad: { condition: 'Ready', status: 'Unknown' },
    });
  });

  it('an override matches its condition and reason exactly: its wait and its action', () => {
    const s = withOverride(RepairAction.REBOOT);
    expect(judge(node(cond('AcceleratedHardwareReady', 'False', 6, 'NvidiaXID64Error')), s, now)).toMatchObject({
      kind: 'due',
      action: RepairAction.REBOOT,
    });
    expect(judge(node(cond('AcceleratedHardwareReady', 'False', 6, 'NvidiaXID79Error')), s, now).kind).toBe('waiting');
    expect(ruleFor(s, 'AcceleratedHardwareReady', 'NvidiaXID79Error')).toEqual({
      minutes: 10,
      action: RepairAction.REPLACE,
    });
  });

  it('NoAction is due like any rule (the pass only reports it)', () => {
    expect(
      judge(
        node(cond('AcceleratedHardwareReady', 'False', 6, 'NvidiaXID64Error')),
        withOverride(RepairAction.NO_ACTION),
        now,
      ),
    ).toMatchObject({
      kind: 'due',
      action: 'NoAction',
    });
  });

  it('with several due conditions the strongest action wins', () => {
    const verdict = judge(
      node(
        cond('AcceleratedHardwareReady', 'False', 60, 'NvidiaXID64Error'),
        cond('KernelReady', 'False', 40, 'KernelBug'),
      ),
      withOverride(RepairAction.REBOOT),
      now,
    );
    expect(verdict).toMatchObject({ kind: 'due', action: RepairAction.REPLACE, bad: { condition: 'KernelReady' } });
  });

  it('a condition without lastTransitionTime is never due on a guess', () => {
    expect(
      judge(
        { conditions: [{ type: 'Ready', status: 'False', reason: '', sinceMs: Number.NaN }] },
        defaultRepairSettings,
        now,
      ).kind,
    ).toBe('waiting');
  });

  it('a node that recovered before its rule fired is healthy again', () => {
    expect(judge(node(cond('NetworkingReady', 'True', 1)), defaultRepairSettings, now)).toEqual({ kind: 'healthy' });
  });

  it('a configured wait replaces the default for its condition', () => {
    const s = {
      ...defaultRepairSettings,
      repairAfterMinutes: { ...defaultRepairSettings.repairAfterMinutes, Ready: 5 },
    };
    expect(judge(node(cond('Ready', 'False', 5)), s, now).kind).toBe('due');
  });
});
