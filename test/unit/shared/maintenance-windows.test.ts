import { describe, expect, it } from 'vitest';
import { isTimeZone, nextOpening, openWindow, parseWindows } from '../../../lambda/shared/maintenance-windows.js';

const at = (iso: string) => Date.parse(iso);

describe('maintenance windows', () => {
  it('parses cron-and-duration windows and refuses malformed ones', () => {
    expect(parseWindows('0 22 * * MON-FRI for 6h; 0 0 * * SAT,SUN for 1d')?.map((w) => w.durationMinutes)).toEqual([
      360, 1440,
    ]);
    for (const bad of [
      '0 22 * * MON-FRI',
      '61 22 * * * for 1h',
      '0 22 * * * for 0h',
      '0 22 * * * for 8d',
      'x y z for 1h',
      '0 22 * * FRI-MON for 1h',
    ])
      expect(parseWindows(bad)).toBeUndefined();
  });

  it('is open from the opening minute for its duration, in UTC', () => {
    const w = parseWindows('0 22 * * MON-FRI for 6h')!;
    expect(openWindow(w, at('2026-11-23T21:59:00Z'), 'UTC')).toBeUndefined(); // Monday
    expect(openWindow(w, at('2026-11-23T22:00:00Z'), 'UTC')).toBeDefined();
    expect(openWindow(w, at('2026-11-24T03:59:00Z'), 'UTC')).toBeDefined(); // Tuesday morning, still Monday's window
    expect(openWindow(w, at('2026-11-24T04:00:00Z'), 'UTC')).toBeUndefined();
    expect(openWindow(w, at('2026-11-28T23:00:00Z'), 'UTC')).toBeUndefined(); // Saturday
  });

  it('reads the cron in the given time zone', () => {
    const w = parseWindows('0 2 * * * for 1h')!;
    // 02:00 in Paris (UTC+1 in November) is 01:00 UTC.
    expect(openWindow(w, at('2026-11-27T01:30:00Z'), 'Europe/Paris')).toBeDefined();
    expect(openWindow(w, at('2026-11-27T02:30:00Z'), 'Europe/Paris')).toBeUndefined();
    expect(isTimeZone('Europe/Paris')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
  });

  it('says when the next window opens', () => {
    const w = parseWindows('30 1 * * SUN for 2h')!;
    expect(new Date(nextOpening(w, at('2026-11-27T10:00:00Z'), 'UTC')!).toISOString()).toBe('2026-11-29T01:30:00.000Z');
  });
});
