// Soak time between the handler and the API server (test/soak/clock.ts): the fault proxy moves
// the timestamp fields of what passes, and only those.
import { describe, expect, it } from 'vitest';
import { shiftTimestamps } from '../../soak/clock.js';

describe('shiftTimestamps', () => {
  const pod = JSON.stringify({
    metadata: {
      name: 'web-1',
      creationTimestamp: '2026-11-29T10:00:00Z',
      deletionTimestamp: '2026-11-29T10:05:00Z',
      annotations: { 'graceful-node-termination/drain': JSON.stringify({ startedAt: '2026-11-29T10:04:00.000Z' }) },
    },
    status: {
      startTime: '2026-11-29T10:00:01Z',
      conditions: [{ type: 'Ready', lastTransitionTime: '2026-11-29T10:00:02Z' }],
    },
  });

  it('moves every timestamp field by whole seconds, keeping a fraction, into soak time and back', () => {
    const soak = JSON.parse(shiftTimestamps(pod, 300_000));
    expect(soak.metadata.creationTimestamp).toBe('2026-11-29T10:05:00Z');
    expect(soak.metadata.deletionTimestamp).toBe('2026-11-29T10:10:00Z');
    expect(soak.status.startTime).toBe('2026-11-29T10:05:01Z');
    expect(soak.status.conditions[0].lastTransitionTime).toBe('2026-11-29T10:05:02Z');
    const event = '{"eventTime":"2026-11-29T10:05:00.123456Z","firstTimestamp":"2026-11-29T10:05:00Z"}';
    expect(shiftTimestamps(event, -300_000)).toBe(
      '{"eventTime":"2026-11-29T10:00:00.123456Z","firstTimestamp":"2026-11-29T10:00:00Z"}',
    );
    expect(shiftTimestamps(shiftTimestamps(pod, 300_000), -300_000)).toBe(pod);
  });

  it('leaves our own records inside annotation strings alone (soak time already), and everything at offset 0', () => {
    const soak = JSON.parse(shiftTimestamps(pod, 300_000));
    expect(JSON.parse(soak.metadata.annotations['graceful-node-termination/drain']).startedAt).toBe(
      '2026-11-29T10:04:00.000Z',
    );
    expect(shiftTimestamps(pod, 0)).toBe(pod);
  });
});
