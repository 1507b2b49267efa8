// Time, injected: the use cases never read Date.now() themselves, so the fake world's
// discrete-event clock can run a 40-minute drain in milliseconds.

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};
