// The shared reader's pace (reader-pace.ts): at most elbReadsPerSecond, halved by each throttle
// down to minReadsPerSecond with a back-off of 2 s doubling to 30 s, a call a second given back
// each 10 s without a throttle.
import { describe, expect, it } from 'vitest';
import {
  ReaderPace,
  elbReadsPerSecond,
  maxBackoffMs,
  minReadsPerSecond,
  recoverEveryMs,
} from '../../../lambda/termination/reader-pace.js';
import { FakeClock } from '../../fakes/fake-world.js';

describe('reader pace', () => {
  it('spaces calls at elbReadsPerSecond and says when a call would come too late', async () => {
    const clock = new FakeClock();
    const pace = new ReaderPace(clock);
    const t0 = clock.now();
    const at: number[] = [];
    while (await pace.slot(t0 + 1_000)) at.push(clock.now() - t0);
    expect(at).toEqual([0, 200, 400, 600, 800]);
    expect(elbReadsPerSecond).toBe(5);
  });

  it('halves its rate at each throttle, never below the floor, and backs off 2 s doubling to 30 s', () => {
    const clock = new FakeClock();
    const pace = new ReaderPace(clock);
    const backoffs = Array.from({ length: 6 }, () => pace.throttled());
    expect(backoffs).toEqual([2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(maxBackoffMs).toBe(30_000);
    expect(pace.perSecond).toBe(minReadsPerSecond);
    expect(pace.nextAtMs).toBe(clock.now() + 30_000);
  });

  it('gives a call a second back each 10 s without a throttle, up to elbReadsPerSecond', () => {
    const clock = new FakeClock();
    const pace = new ReaderPace(clock);
    pace.throttled();
    pace.throttled();
    expect(pace.perSecond).toBe(1.25);
    pace.answered();
    expect(pace.perSecond).toBe(1.25);
    const rates: number[] = [];
    for (let i = 0; i < 6; i++) {
      clock.advanceTo(clock.now() + recoverEveryMs);
      pace.answered();
      pace.answered();
      rates.push(pace.perSecond);
    }
    expect(rates).toEqual([2, 3, 4, 5, 5, 5]);
  });

  it('a throttle after an answer starts the back-off again from 2 s', () => {
    const clock = new FakeClock();
    const pace = new ReaderPace(clock);
    pace.throttled();
    pace.throttled();
    pace.answered();
    expect(pace.throttled()).toBe(2_000);
  });
});
