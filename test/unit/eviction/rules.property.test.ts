// Properties of the drain's pure rules (lambda/eviction/rules.ts) at generated moments of a drain, each built as the
// drain builds it (pass-view.ts) from generated pods, drain rules, deadlines, windows and what was tried: no pod is
// forced inside its fair window, deadlines stay within the action's cap and only move out, and the next wake-up is
// never after the deadline, never later than something due, and never in the past when nothing is due.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { PodInfo } from '../../../lambda/cluster/model.js';
import type { PassView } from '../../../lambda/eviction/pass-view.js';
import {
  cannotLeave,
  forceAtMs,
  gracePeriodMs,
  isDue,
  isEligible,
  isForceCandidate,
  lastPodDeadlineMs,
  nextWakeMs,
  podDeadlineMs,
  podWindowEndMs,
  retryDelayMs,
  stuckTerminatingMarginMs,
  type DrainMoment,
} from '../../../lambda/eviction/rules.js';
import { drainArb } from '../../fakes/drain-arbitraries.js';

const minute = 60_000;

const deadlinesOf = (m: DrainMoment) => m.drainDeadlineMs;

function wake(view: PassView, bounds: { stopMs: number; reportAtMs?: (p: PodInfo) => number | undefined }): number {
  return nextWakeMs(view, view.moment, {
    lastPodDeadlineMs: view.lastPodDeadlineMs,
    stopMs: bounds.stopMs,
    batchUntilMs: view.waitEndsMs,
    reportAtMs: bounds.reportAtMs ?? (() => undefined),
  });
}

describe('the drain rules (properties)', () => {
  test.prop([drainArb])('no pod is forced inside its fair window, nor without the force policy', ({ view }) => {
    const m = view.moment;
    for (const pod of view.remaining) {
      const at = forceAtMs(pod, m);
      if (!m.force) expect(at).toBe(Number.POSITIVE_INFINITY);
      expect(at).toBeGreaterThanOrEqual(m.windowEndMs);
      expect(at).toBeGreaterThanOrEqual(podWindowEndMs(pod, m));
      // A pod outside the tier being evicted is asked only once its force time has come.
      if (isEligible(pod, m) && m.orderOf(pod) !== m.tier) expect(m.nowMs).toBeGreaterThanOrEqual(at);
    }
  });

  test.prop([drainArb])(
    "each pod's deadline lies between the drain deadline and the action's cap, and a forced pod keeps its grace",
    ({ view, options }) => {
      const m = view.moment;
      for (const pod of view.evictable) {
        const deadline = podDeadlineMs(pod, m);
        expect(deadline).toBeLessThanOrEqual(Math.max(m.drainDeadlineMs, options.latestDrainEndMs));
        expect(deadline).toBeLessThanOrEqual(options.latestDrainEndMs);
        expect(deadline).toBeGreaterThanOrEqual(Math.min(m.drainDeadlineMs, options.latestDrainEndMs));
        if (!m.force) expect(deadline).toBe(m.drainDeadlineMs);
        const at = forceAtMs(pod, m);
        if (Number.isFinite(at) && at > podWindowEndMs(pod, m))
          expect(deadline - at).toBeGreaterThanOrEqual(Math.min(gracePeriodMs(pod), 10_000));
      }
      expect(view.lastPodDeadlineMs).toBeGreaterThanOrEqual(m.drainDeadlineMs);
      expect(view.lastPodDeadlineMs).toBeLessThanOrEqual(Math.max(m.drainDeadlineMs, options.latestDrainEndMs));
    },
  );

  test.prop([drainArb, fc.nat(30 * minute), fc.nat(30 * minute), fc.nat(30 * minute)])(
    'deadlines only move out: a later drain deadline, cap, window end or moment never brings a pod deadline closer',
    ({ view }, laterDeadline, laterCap, laterNow) => {
      const m = view.moment;
      const moved: DrainMoment = {
        ...m,
        nowMs: m.nowMs + laterNow,
        drainDeadlineMs: deadlinesOf(m) + laterDeadline,
        latestDrainEndMs: m.latestDrainEndMs + laterDeadline + laterCap,
      };
      for (const pod of view.evictable) expect(podDeadlineMs(pod, moved)).toBeGreaterThanOrEqual(podDeadlineMs(pod, m));
      expect(lastPodDeadlineMs(view.evictable, moved)).toBeGreaterThanOrEqual(lastPodDeadlineMs(view.evictable, m));
    },
  );

  test.prop([drainArb, fc.integer({ min: -5 * minute, max: 60 * minute })])(
    'the next wake-up is never after the deadline or the stop, nor after anything it waits for',
    ({ view }, stopInMs) => {
      const m = view.moment;
      const stopMs = m.nowMs + stopInMs;
      const next = wake(view, { stopMs });
      expect(next).toBeLessThanOrEqual(Math.min(view.lastPodDeadlineMs, stopMs));
      for (const pod of view.evictable.filter((p) => isEligible(p, m)))
        expect(next).toBeLessThanOrEqual(m.attempts.get(pod.uid)?.nextAtMs ?? m.nowMs);
      for (const pod of view.remaining.filter((p) => isForceCandidate(p, m)))
        expect(next).toBeLessThanOrEqual(forceAtMs(pod, m));
      if (view.waiting.length > 0) expect(next).toBeLessThanOrEqual(view.waitEndsMs);
    },
  );

  test.prop([drainArb, fc.integer({ min: 1, max: 60 * minute })])(
    'the next wake-up is never in the past while nothing is due now',
    ({ view }, stopInMs) => {
      const m = view.moment;
      const dueNow =
        view.evictable.some((p) => isDue(p, m)) ||
        view.remaining.some((p) => isForceCandidate(p, m) && m.nowMs >= forceAtMs(p, m)) ||
        view.remaining.some((p) => cannotLeave(p, m.nowMs, false)) ||
        m.nowMs >= view.lastPodDeadlineMs;
      fc.pre(!dueNow);
      expect(wake(view, { stopMs: m.nowMs + stopInMs })).toBeGreaterThan(m.nowMs);
    },
  );

  test.prop([drainArb])('a pod waited for is waited for past now, and is not evicted meanwhile', ({ view }) => {
    if (view.waiting.length > 0) expect(view.waitEndsMs).toBeGreaterThan(view.moment.nowMs);
    for (const pod of view.waiting) expect(view.evictable).not.toContain(pod);
  });

  test.prop([fc.integer({ min: 1, max: 40 }), fc.option(fc.nat(600), { nil: undefined })])(
    "retries back off from 500 ms to 10 s, never sooner than the server's Retry-After",
    (attempt, retryAfterSeconds) => {
      const delay = retryDelayMs(attempt, retryAfterSeconds);
      expect(delay).toBeGreaterThanOrEqual(500);
      expect(delay).toBeGreaterThanOrEqual((retryAfterSeconds ?? 0) * 1000);
      expect(delay).toBeLessThanOrEqual(Math.max(10_000, (retryAfterSeconds ?? 0) * 1000));
      expect(retryDelayMs(attempt + 1, retryAfterSeconds)).toBeGreaterThanOrEqual(delay);
    },
  );

  test.prop([drainArb])('a terminating pod is given up on only past its deletion time and the margin', ({ view }) => {
    for (const pod of view.remaining)
      if (cannotLeave(pod, view.moment.nowMs, false))
        expect(view.moment.nowMs).toBeGreaterThanOrEqual(pod.deletionTimestamp!.getTime() + stuckTerminatingMarginMs);
  });
});
