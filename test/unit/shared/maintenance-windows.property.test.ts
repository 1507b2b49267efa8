// Properties of maintenance windows (lambda/shared/maintenance-windows.ts) across time zones and daylight saving:
// in UTC and in fixed-offset zones a window is open exactly when plain arithmetic says so; in every zone the window
// open now and the next opening agree (open at t iff an opening lies in (t - duration, t]); a parsed window prints
// back to itself; and across a DST change a window follows crontab(5)'s matching of wall-clock fields: an opening in
// the skipped hour does not happen that day, one in the repeated hour happens twice (docs/termination-policy.md).
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { nextOpening, openWindow, parseWindows } from '../../../lambda/shared/maintenance-windows.js';
import { numRuns } from '../../fakes/arbitraries.js';

const minuteMs = 60_000;
const fromMs = Date.parse('2026-01-01T00:00:00Z');
const timeArb = fc.integer({ min: 0, max: 365 * 1440 }).map((m) => fromMs + m * minuteMs + 17_000);

/** A window opening at the given minutes and hours every day, as plain arithmetic reads it. */
const dailyArb = fc.record({
  minutes: fc.uniqueArray(fc.integer({ min: 0, max: 59 }), { minLength: 1, maxLength: 3 }),
  hours: fc.uniqueArray(fc.integer({ min: 0, max: 23 }), { minLength: 1, maxLength: 3 }),
  duration: fc.oneof(fc.integer({ min: 1, max: 600 }), fc.constantFrom(1440, 2 * 1440)),
});
type Daily = typeof dailyArb extends fc.Arbitrary<infer D> ? D : never;
const text = (d: Daily) => `${d.minutes.join(',')} ${d.hours.join(',')} * * * for ${d.duration}m`;

/** Open at t: it opened at a minute whose wall clock (offset from UTC) matches, within the duration before t. */
function openByArithmetic(d: Daily, t: number, offsetMinutes: number): boolean {
  const start = Math.floor(t / minuteMs);
  for (let back = 0; back < d.duration; back++) {
    const local = (((start - back + offsetMinutes) % 1440) + 1440) % 1440;
    if (d.minutes.includes(local % 60) && d.hours.includes(Math.floor(local / 60))) return true;
  }
  return false;
}

/** Cron expressions of every shape (lists, ranges, steps, names, both day fields), each opening at least weekly. */
const cronArb = fc
  .record({
    minute: fc.constantFrom('0', '30', '*/15', '0,45', '5-10'),
    hour: fc.constantFrom('*', '2', '1,3', '22', '0-6/2', '2-3'),
    dom: fc.constantFrom('*', '*', '1-15', '*/10'),
    month: fc.constantFrom('*', '*', '*', 'MAR-NOV'),
    dow: fc.constantFrom('*', '*', 'SUN', 'MON-FRI', 'sat,sun', '0,7'),
    duration: fc.constantFrom('1m', '30m', '90m', '2h', '1d'),
  })
  .map((c) => `${c.minute} ${c.hour} ${c.dom} ${c.month} ${c.dow} for ${c.duration}`);
const zoneArb = fc.constantFrom('UTC', 'Europe/Paris', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kathmandu');

describe('maintenance windows (properties)', () => {
  test.prop([dailyArb, timeArb])('in UTC, open exactly when arithmetic says so', (d, t) => {
    expect(openWindow(parseWindows(text(d))!, t, 'UTC') !== undefined).toBe(openByArithmetic(d, t, 0));
  });

  test.prop([dailyArb, timeArb, fc.constantFrom(['Asia/Kolkata', 330], ['Asia/Kathmandu', 345], ['Etc/GMT+5', -300])])(
    'in a zone with a fixed offset, open exactly when arithmetic with that offset says so',
    (d, t, [zone, offset]) => {
      expect(openWindow(parseWindows(text(d))!, t, zone as string) !== undefined).toBe(
        openByArithmetic(d, t, offset as number),
      );
    },
  );

  test.prop([cronArb, timeArb, zoneArb], { numRuns: numRuns(30) })(
    'in every zone, open at t exactly when an opening lies within the duration before t',
    (cron, t, zone) => {
      const windows = parseWindows(cron)!;
      const duration = windows[0]!.durationMinutes;
      const next = nextOpening(windows, t - duration * minuteMs, zone);
      const expected = next !== undefined && next <= Math.floor(t / minuteMs) * minuteMs;
      expect(openWindow(windows, t, zone) !== undefined).toBe(expected);
      if (next !== undefined) {
        expect(next).toBeGreaterThan(t - duration * minuteMs);
        expect(next % minuteMs).toBe(0);
        expect(openWindow(windows, next, zone)).toBeDefined();
      }
    },
  );

  test.prop([cronArb, fc.integer({ min: 0, max: 3 }).map((n) => 'x'.repeat(n))])(
    'a window keeps its text, and any garbage after it makes the whole setting invalid',
    (cron, garbage) => {
      expect(parseWindows(cron)?.map((w) => w.text)).toEqual([cron]);
      if (garbage !== '') expect(parseWindows(`${cron} ${garbage}`)).toBeUndefined();
      expect(parseWindows(`${cron}; ${cron}`)).toHaveLength(2);
    },
  );

  it('across the spring DST change, an opening in the skipped hour does not happen that day (crontab(5) matching)', () => {
    // New York, 2026-03-08: 02:00 EST becomes 03:00 EDT; 02:30 does not exist that day.
    const w = parseWindows('30 2 * * * for 1h')!;
    const day = Date.parse('2026-03-08T05:00:00Z');
    const open = Array.from({ length: 24 * 60 }, (_, m) => day + m * minuteMs).filter(
      (t) => openWindow(w, t, 'America/New_York') !== undefined,
    );
    expect(open).toEqual([]);
    // The day before and after it opens at 02:30 local as always.
    expect(openWindow(w, Date.parse('2026-03-07T07:30:00Z'), 'America/New_York')).toBeDefined();
    expect(openWindow(w, Date.parse('2026-03-09T06:30:00Z'), 'America/New_York')).toBeDefined();
  });

  it('across the autumn DST change, an opening in the repeated hour happens twice', () => {
    // New York, 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 happens at 05:30Z and again at 06:30Z.
    const w = parseWindows('30 1 * * * for 30m')!;
    expect(openWindow(w, Date.parse('2026-11-01T05:45:00Z'), 'America/New_York')).toBeDefined();
    expect(openWindow(w, Date.parse('2026-11-01T06:15:00Z'), 'America/New_York')).toBeUndefined();
    expect(openWindow(w, Date.parse('2026-11-01T06:45:00Z'), 'America/New_York')).toBeDefined();
  });
});
