// Properties of the resume window (lambda/shared/resume-window.ts) over every heartbeat timeout Auto Scaling accepts
// and every invocation margin: the longest schedule resumes in time and one minute more does not, the shortest
// heartbeat for a schedule is the first that fits, the lost signal never fires on a live chain, and the cold-start
// check refuses exactly the schedules that would resume too late.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { timeoutProblems } from '../../../lambda/shared/config-checks.js';
import {
  defaultInterval,
  defaultIntervalMinutes,
  handOffShare,
  heartbeatRangeSeconds,
  invocationSeconds,
  latestResumeSeconds,
  longestIntervalMinutes,
  shortestHeartbeatSeconds,
  staleAfterSeconds,
  stretchSeconds,
} from '../../../lambda/shared/resume-window.js';

const timesArb = fc.record({
  heartbeatTimeoutSeconds: fc.integer({ min: heartbeatRangeSeconds.min, max: heartbeatRangeSeconds.max }),
  invocationMarginSeconds: fc.integer({ min: 1, max: 300 }),
});
const intervalArb = fc.integer({ min: 1, max: 1440 });

describe('the resume window (properties)', () => {
  test.prop([timesArb])(
    'a live chain writes at least once a stretch, within the heartbeat timeout and one invocation',
    (t) => {
      const s = stretchSeconds(t);
      expect(s).toBeLessThanOrEqual(t.heartbeatTimeoutSeconds * handOffShare);
      expect(s).toBeLessThanOrEqual(invocationSeconds - t.invocationMarginSeconds);
      // The lost signal comes only after a live chain's longest silence.
      expect(staleAfterSeconds(t)).toBeGreaterThan(s);
    },
  );

  test.prop([timesArb])('the longest schedule resumes in time, and one minute more does not', (t) => {
    const longest = longestIntervalMinutes(t);
    expect(longest).toBeGreaterThanOrEqual(0);
    if (longest >= 1) expect(latestResumeSeconds(t, longest)).toBeLessThanOrEqual(t.heartbeatTimeoutSeconds);
    expect(latestResumeSeconds(t, longest + 1)).toBeGreaterThan(t.heartbeatTimeoutSeconds);
    const chosen = defaultInterval(t);
    expect(chosen).toBeLessThanOrEqual(Math.min(defaultIntervalMinutes, longest));
    if (longest >= 1) expect(chosen).toBeGreaterThanOrEqual(1);
  });

  test.prop([intervalArb, fc.integer({ min: 1, max: 300 })])(
    'the shortest heartbeat for a schedule is the first that fits, and every longer one fits too',
    (interval, margin) => {
      const fits = (h: number) =>
        latestResumeSeconds({ heartbeatTimeoutSeconds: h, invocationMarginSeconds: margin }, interval) <= h;
      const h = shortestHeartbeatSeconds(interval, margin);
      if (h === undefined) {
        expect(fits(heartbeatRangeSeconds.max)).toBe(false);
        return;
      }
      expect(fits(h)).toBe(true);
      if (h > heartbeatRangeSeconds.min) expect(fits(h - 1)).toBe(false);
      for (const longer of [h + 1, h + 97, heartbeatRangeSeconds.max])
        if (longer <= 7200) expect(fits(longer)).toBe(true);
    },
  );

  test.prop([timesArb, fc.integer({ min: 1, max: 600 })])(
    'a longer heartbeat timeout never shortens the longest schedule (H less the stretch never falls)',
    (t, more) => {
      const longer = { ...t, heartbeatTimeoutSeconds: Math.min(7200, t.heartbeatTimeoutSeconds + more) };
      expect(longestIntervalMinutes(longer)).toBeGreaterThanOrEqual(longestIntervalMinutes(t));
      expect(longer.heartbeatTimeoutSeconds - stretchSeconds(longer)).toBeGreaterThanOrEqual(
        t.heartbeatTimeoutSeconds - stretchSeconds(t),
      );
    },
  );

  test.prop([timesArb, fc.option(intervalArb, { nil: undefined })])(
    'the cold-start check refuses exactly the schedules that resume after Auto Scaling gave up',
    (t, interval) => {
      const problems = timeoutProblems({
        ...t,
        reconcileMarks: true,
        handOffTopicArn: 'arn:aws:sns:eu-west-1:123456789012:lifecycle',
        reconcileIntervalMinutes: interval,
      });
      const chosen = interval ?? defaultInterval(t);
      const inTime = chosen >= 1 && latestResumeSeconds(t, chosen) <= t.heartbeatTimeoutSeconds;
      expect(problems.length === 0).toBe(inTime);
      for (const p of problems) expect(p).toMatch(/HEARTBEAT_TIMEOUT_SECONDS \(\d+\)/);
    },
  );
});
