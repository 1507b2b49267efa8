// Throttling is not a reason to fail while there is time. The SDK retries a throttled call
// within seconds (Auto Scaling's not at all, runtime.ts: in a wave its quick retries are only
// refused again); Auto Scaling's and EC2's per-account buckets can stay empty longer than that,
// and a failed invocation costs a Lambda retry (two, minutes apart) and, past them, the drain
// itself. So a throttled call is asked again with capped, jittered backoff for up to a minute
// before it fails; a transient failure (a reset connection, a 5xx) twice. Every call is also
// counted, per service, for the log line and the metric each record ends with.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/throttling.html
import type { Clock } from '../../shared/clock.js';
import { ServiceBusyError } from '../../shared/errors.js';
import { budgetUntilMs } from '../../shared/time-budget.js';

/** How long a throttled call keeps being asked, on top of the SDK's own retries. */
export const throttledPatienceMs = 60_000;

const throttlingNames = new Set([
  'Throttling',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'SlowDown',
  'RequestThrottled',
]);

/** An error code that says throttled (not busy, not failing). */
export const isThrottlingCode = (code: string | undefined): boolean => throttlingNames.has(code ?? '');

/** A throttled (or busy: 503) answer from an SDK client or our own Query client. */
export function isThrottled(error: unknown): boolean {
  if (error instanceof ServiceBusyError) return true;
  const e = error as
    { name?: string; $metadata?: { httpStatusCode?: number }; $retryable?: { throttling?: boolean } } | undefined;
  return (
    e !== undefined &&
    (throttlingNames.has(e.name ?? '') ||
      e.$retryable?.throttling === true ||
      e.$metadata?.httpStatusCode === 429 ||
      e.$metadata?.httpStatusCode === 503)
  );
}

const transientNames = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'InternalFailure',
  'ServiceUnavailable',
]);
/** Not ECONNREFUSED: nobody listening (a wrong endpoint, no route) does not pass in seconds. */
const transientCodes = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT']);
/** A transient failure is asked again this many times, seconds apart; throttling for the whole patience. */
export const transientRetries = 2;

/**
 * A failure that says nothing about the request (a reset connection, a 5xx): asking again is safe, every call we make
 * being idempotent.
 */
export function isTransient(error: unknown): boolean {
  const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  return (
    e !== undefined &&
    (transientNames.has(e.name ?? '') || transientCodes.has(e.code ?? '') || (e.$metadata?.httpStatusCode ?? 0) >= 500)
  );
}

function asBusy(error: unknown, what: string): Error {
  if (error instanceof ServiceBusyError) return error;
  return new ServiceBusyError(`${what} was throttled through every retry: ${(error as Error).message}`, {
    cause: error,
  });
}

/** AWS calls made, per service, since the last reset (one record at a time). */
export class AwsCallCount {
  private counts = new Map<string, number>();

  add(service: string): void {
    this.counts.set(service, (this.counts.get(service) ?? 0) + 1);
  }

  /** The counts so far, and a fresh start. */
  take(): Record<string, number> {
    const taken = Object.fromEntries(this.counts);
    this.counts = new Map();
    return taken;
  }
}

/**
 * The same port, each method counted under `service` and asked again while throttled (up to
 * throttledPatienceMs, and never past the time budget in force). Only methods: a port is an object of async functions.
 */
export function patient<T extends object>(
  port: T,
  service: string,
  o: { readonly clock: Clock; readonly count: AwsCallCount; readonly patienceMs?: number },
): T {
  const patienceMs = o.patienceMs ?? throttledPatienceMs;
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(port) as [string, unknown][]) {
    if (typeof fn !== 'function') continue;
    wrapped[name] = async (...args: unknown[]) => {
      // The patience, or less: what the invocation (or a best-effort step) has left (time-budget.ts).
      const giveUpMs = Math.min(o.clock.now() + patienceMs, budgetUntilMs());
      for (let attempt = 0; ; attempt++) {
        o.count.add(service);
        try {
          return await (fn as (...a: unknown[]) => Promise<unknown>).apply(port, args);
        } catch (error) {
          const throttled = isThrottled(error);
          // Throttled: the bucket is the account's and empty for seconds; asking sooner is only
          // refused, asking much later leaves its tokens to others (1-2 s, doubling, up to 4-8 s).
          const waitMs = Math.round(
            Math.min(8_000, (throttled ? 2_000 : 1_000) * 2 ** attempt) * (0.5 + Math.random() / 2),
          );
          if (!throttled && (!isTransient(error) || attempt >= transientRetries)) throw error;
          // Still throttled: the use cases see one kind of error for it, whatever the service.
          // Still failing otherwise: the error as it came (a transient infrastructure failure).
          if (o.clock.now() + waitMs > giveUpMs) throw throttled ? asBusy(error, `${service}:${name}`) : error;
          await o.clock.sleep(waitMs);
        }
      }
    };
  }
  return wrapped as T;
}
