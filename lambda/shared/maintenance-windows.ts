// Maintenance windows: when voluntary terminations may happen. Each window is a five-field
// cron expression for when it opens (minute hour day-of-month month day-of-week, as crontab(5)
// reads them, names allowed) and how long it stays open, in one time zone (IANA, default UTC):
//   "0 22 * * MON-FRI for 6h; 0 0 * * SAT,SUN for 24h"
// A window is open at t when it opened at some minute in (t - duration, t].

export interface Window {
  readonly text: string;
  readonly fields: readonly ReadonlySet<number>[];
  readonly durationMinutes: number;
  /** Day-of-month and day-of-week both restricted: either matches (crontab's rule). */
  readonly eitherDay: boolean;
}

const ranges: readonly (readonly [number, number])[] = [
  [0, 59],
  [0, 23],
  [1, 31],
  [1, 12],
  [0, 7],
];
const monthNames = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const dayNames = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

function value(raw: string, field: number): number | undefined {
  const upper = raw.toUpperCase();
  if (field === 3 && monthNames.includes(upper)) return monthNames.indexOf(upper) + 1;
  if (field === 4 && dayNames.includes(upper)) return dayNames.indexOf(upper);
  if (!/^\d+$/.test(raw)) return undefined;
  const n = Number(raw);
  return n >= ranges[field]![0] && n <= ranges[field]![1] ? n : undefined;
}

function parseField(raw: string, field: number): Set<number> | undefined {
  const out = new Set<number>();
  for (const part of raw.split(',')) {
    const [range, stepRaw] = part.split('/');
    const step = stepRaw === undefined ? 1 : Number(stepRaw);
    if (!Number.isInteger(step) || step < 1) return undefined;
    let [lo, hi] = ranges[field]!;
    if (range !== '*') {
      const [a, b] = range!.split('-');
      const from = value(a!, field);
      const to = b === undefined ? (stepRaw === undefined ? from : hi) : value(b, field);
      if (from === undefined || to === undefined || to < from) return undefined;
      [lo, hi] = [from, to];
    }
    for (let v = lo; v <= hi; v += step) out.add(field === 4 && v === 7 ? 0 : v);
  }
  return out;
}

/** Parses `cron for duration; ...`; undefined when any window is malformed. */
export function parseWindows(raw: string): Window[] | undefined {
  const windows: Window[] = [];
  for (const text of raw.split(';').map((s) => s.trim())) {
    if (text === '') continue;
    const m = /^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+for\s+(\d+)\s*(m|h|d)$/i.exec(text);
    if (m === null) return undefined;
    const fields = m.slice(1, 6).map((f, i) => parseField(f, i));
    if (fields.some((f) => f === undefined || f.size === 0)) return undefined;
    const durationMinutes = Number(m[6]) * { m: 1, h: 60, d: 1440 }[m[7]!.toLowerCase() as 'm' | 'h' | 'd'];
    if (durationMinutes < 1 || durationMinutes > 7 * 1440) return undefined;
    windows.push({ text, fields: fields as Set<number>[], durationMinutes, eitherDay: m[3] !== '*' && m[5] !== '*' });
  }
  return windows.length > 0 ? windows : undefined;
}

/** A valid IANA time zone name (the runtime's ICU knows it). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function wallClock(ms: number, zone: string): number[] {
  let f = formatters.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      minute: 'numeric',
      hour: 'numeric',
      day: 'numeric',
      month: 'numeric',
      weekday: 'short',
    });
    formatters.set(zone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(ms).map((p) => [p.type, p.value]));
  return [
    Number(parts['minute']),
    Number(parts['hour']),
    Number(parts['day']),
    Number(parts['month']),
    dayNames.indexOf(String(parts['weekday']).toUpperCase()),
  ];
}

function opensAt(w: Window, ms: number, zone: string): boolean {
  const [minute, hour, day, month, weekday] = wallClock(ms, zone) as [number, number, number, number, number];
  if (!w.fields[0]!.has(minute) || !w.fields[1]!.has(hour) || !w.fields[3]!.has(month)) return false;
  const dom = w.fields[2]!.has(day);
  const dow = w.fields[4]!.has(weekday);
  return w.eitherDay ? dom || dow : dom && dow;
}

const minuteMs = 60_000;

/** The window open at `nowMs`, if any. */
export function openWindow(windows: readonly Window[], nowMs: number, zone: string): Window | undefined {
  const start = Math.floor(nowMs / minuteMs) * minuteMs;
  return windows.find((w) => {
    for (let back = 0; back < w.durationMinutes; back++) if (opensAt(w, start - back * minuteMs, zone)) return true;
    return false;
  });
}

/** When the next window opens after `nowMs` (within 35 days), or undefined. */
export function nextOpening(windows: readonly Window[], nowMs: number, zone: string): number | undefined {
  const start = Math.floor(nowMs / minuteMs) * minuteMs + minuteMs;
  for (let m = 0; m < 35 * 1440; m++) {
    const t = start + m * minuteMs;
    if (windows.some((w) => opensAt(w, t, zone))) return t;
  }
  return undefined;
}
