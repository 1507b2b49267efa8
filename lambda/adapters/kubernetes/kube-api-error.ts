// What the API server answered when it refused, and which refusals our client retries (and after how
// long): idempotent requests on throttling, timeouts and 5xx, with jittered exponential backoff.
import { type IncomingHttpHeaders } from 'node:http';

export interface StatusBody {
  readonly message?: string;
  readonly reason?: string;
  readonly details?: {
    readonly name?: string;
    readonly kind?: string;
    readonly retryAfterSeconds?: number;
    readonly causes?: readonly { readonly reason?: string; readonly type?: string; readonly message?: string }[];
  };
}

/** A non-2xx answer from the API server, with its Status body when it sent one. */
export class KubeApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly status: StatusBody | undefined,
    readonly headers: IncomingHttpHeaders,
    what: string,
  ) {
    super(`${what}: HTTP ${statusCode}${status?.message ? `: ${status.message}` : ''}`);
    this.name = 'KubeApiError';
  }
}

/**
 * Network failures, timeouts, throttling and server errors are worth another try; so is a
 * 401 once credentials are refreshed (the server did nothing with the request, POST or not).
 */
export function isRetryable(error: unknown, method: string): boolean {
  if (!(error instanceof KubeApiError)) return true;
  const code = error.statusCode;
  return (
    code === 401 || code === 429 || code === 502 || code === 503 || code === 504 || (code === 500 && method !== 'POST')
  );
}

/**
 * Capped exponential backoff with full jitter, honouring Retry-After (capped too).
 * https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/
 */
export function backoffMs(attempt: number, error: unknown, random: () => number): number {
  const retryAfter = error instanceof KubeApiError ? Number(error.headers['retry-after']) : Number.NaN;
  if (Number.isFinite(retryAfter) && retryAfter > 0) return Math.min(10_000, retryAfter * 1000);
  return Math.round(random() * Math.min(5_000, 200 * 2 ** attempt));
}
