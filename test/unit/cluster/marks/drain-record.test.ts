// The drain record's codec (cluster/marks/drain-record.ts): the source is typed in memory and written as every
// version wrote it (`action`, `hook`, `spot`), so a record on a node reads the same before and after an upgrade
// of the function, and the reconciler of either version understands the other's.
import { describe, expect, it } from 'vitest';
import { actionIdOfToken } from '../../../../lambda/cluster/marks/action-id.js';
import { formatDrainRecord, parseDrainRecord } from '../../../../lambda/cluster/marks/drain-record.js';
import type { DrainRecord, DrainSource } from '../../../../lambda/cluster/model.js';
import { lifecycleAction, markedAhead, resumedAction, spotInterruption } from '../../../fixtures/drain-sources.js';

const times = { notifiedAt: '2026-11-28T10:00:00.000Z', startedAt: '2026-11-28T10:00:05.000Z' };
const wire = (fields: Record<string, unknown>) =>
  JSON.stringify({ ...fields, ...times, updatedAt: times.startedAt, set: ['cordon'] });

describe('the drain record on the wire', () => {
  const cases: readonly (readonly [string, Record<string, unknown>, DrainSource])[] = [
    ['a lifecycle action', { action: 'sha256:0123', hook: 'workers-terminate' }, lifecycleAction('sha256:0123')],
    ['a drain the reconciler resumed', { action: 'instance:i-0abc', hook: 'h' }, resumedAction('i-0abc', 'h')],
    ['a Spot interruption', { action: 'spot:i-0abc', spot: true }, spotInterruption('i-0abc')],
    ['marks set ahead by a sibling', { action: '', hook: 'h', aheadOf: 'i-0def' }, markedAhead('h')],
    ['an action whose hook is not known', { action: 'sha256:0123' }, lifecycleAction('sha256:0123', undefined)],
  ];

  it.each(cases)('reads %s as its typed source and writes it back byte for byte', (_, fields, source) => {
    const raw = wire(fields);
    const record = parseDrainRecord(raw);
    expect(record?.source).toEqual(source);
    expect(JSON.parse(formatDrainRecord(record!))).toEqual(JSON.parse(raw));
  });

  it('reads a record of the versions that kept the token in clear as the same action, token hashed', () => {
    const record = parseDrainRecord(wire({ token: 'token-1', hook: 'h' }));
    expect(record?.source).toEqual(lifecycleAction(actionIdOfToken('token-1'), 'h'));
    expect(formatDrainRecord(record!)).not.toContain('token-1');
  });

  it('treats a record whose action is not one of ours as absent, never as a guess', () => {
    expect(parseDrainRecord(wire({ action: 'somebody-else' }))).toBeUndefined();
    expect(parseDrainRecord(wire({ hook: 'h' }))).toBeUndefined();
    expect(parseDrainRecord('not json')).toBeUndefined();
  });

  it('writes no empty hook and no spot flag where the source has none', () => {
    const record: DrainRecord = {
      source: lifecycleAction('sha256:0123', undefined),
      notifiedAtMs: 0,
      startedAtMs: 0,
      updatedAtMs: 0,
      set: [],
    };
    expect(JSON.parse(formatDrainRecord(record))).not.toHaveProperty('hook');
    expect(JSON.parse(formatDrainRecord(record))).not.toHaveProperty('spot');
  });
});
