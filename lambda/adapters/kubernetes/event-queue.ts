// A bounded queue in front of Event writes. Events are how people watch a drain, but writing
// one can be slow (API priority and fairness, 429 with Retry-After): it must never hold an
// eviction worker or a phase up. A few writers drain the queue; past its capacity new Events
// are dropped and counted (the log still has every line), and flush waits a bounded time
// for the rest before an invocation returns.

export interface EventQueue<T> {
  /** Returns at once. */
  push(item: T): void;
  /** Resolves when the queue is empty or after timeoutMs, whichever comes first. */
  flush(timeoutMs: number): Promise<void>;
}

export interface EventQueueOptions<T> {
  readonly capacity: number;
  readonly concurrency: number;
  readonly onDrop: (item: T, droppedSoFar: number) => void;
}

export function createEventQueue<T>(write: (item: T) => Promise<void>, options: EventQueueOptions<T>): EventQueue<T> {
  const queue: T[] = [];
  let writing = 0;
  let dropped = 0;
  let idle: (() => void)[] = [];

  const pump = (): void => {
    while (writing < options.concurrency && queue.length > 0) {
      const item = queue.shift()!;
      writing++;
      // write() is best effort and never throws; the catch is a seat belt.
      void write(item)
        .catch(() => undefined)
        .finally(() => {
          writing--;
          pump();
          if (writing === 0 && queue.length === 0) {
            const waiting = idle;
            idle = [];
            for (const resolve of waiting) resolve();
          }
        });
    }
  };

  return {
    push(item) {
      if (queue.length >= options.capacity) {
        dropped++;
        options.onDrop(item, dropped);
        return;
      }
      queue.push(item);
      pump();
    },
    flush(timeoutMs) {
      if (writing === 0 && queue.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref?.();
        idle.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
