import { describe, expect, it } from 'vitest';
import { createEventQueue } from '../../../../lambda/adapters/kubernetes/event-queue.js';

describe('the Event queue', () => {
  it('returns at once, writes with bounded concurrency, and flush waits for the rest', async () => {
    let inFlight = 0;
    let peak = 0;
    const written: number[] = [];
    const queue = createEventQueue<number>(
      async (n) => {
        peak = Math.max(peak, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        written.push(n);
        inFlight--;
      },
      { capacity: 100, concurrency: 3, onDrop: () => {} },
    );
    for (let i = 0; i < 10; i++) queue.push(i);
    expect(written).toEqual([]);
    await queue.flush(5_000);
    expect(written.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(peak).toBe(3);
  });

  it('drops and counts on overload instead of growing or blocking', async () => {
    const dropped: number[] = [];
    let release: () => void = () => {};
    const blocked = new Promise<void>((resolve) => (release = resolve));
    const queue = createEventQueue<number>(() => blocked, {
      capacity: 2,
      concurrency: 1,
      onDrop: (n, count) => dropped.push(n * 100 + count),
    });
    for (let i = 0; i < 5; i++) queue.push(i);
    // One in flight, two queued, two dropped.
    expect(dropped).toEqual([301, 402]);
    release();
    await queue.flush(1_000);
  });

  it('stops waiting at the flush timeout when a write hangs', async () => {
    const queue = createEventQueue<number>(() => new Promise<void>(() => {}), {
      capacity: 5,
      concurrency: 1,
      onDrop: () => {},
    });
    queue.push(1);
    const started = Date.now();
    await queue.flush(50);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });
});
