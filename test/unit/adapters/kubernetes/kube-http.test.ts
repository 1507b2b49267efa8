import { describe, expect, it } from 'vitest';
import { backoffMs, isRetryable, KubeApiError } from '../../../../lambda/adapters/kubernetes/kube-api-error.js';

const apiError = (code: number, headers: Record<string, string> = {}) =>
  new KubeApiError(code, undefined, headers, 'GET /x');

describe('retry policy', () => {
  it('retries network failures, throttling, gateway errors and a 401 (after fresh credentials), never other client errors', () => {
    expect(isRetryable(new Error('socket hang up'), 'GET')).toBe(true);
    for (const code of [429, 502, 503, 504]) expect(isRetryable(apiError(code), 'GET')).toBe(true);
    expect(isRetryable(apiError(500), 'GET')).toBe(true);
    expect(isRetryable(apiError(500), 'POST')).toBe(false);
    for (const code of [400, 403, 404, 409, 422]) expect(isRetryable(apiError(code), 'GET')).toBe(false);
    expect(isRetryable(apiError(401), 'POST')).toBe(true);
  });

  it('backs off exponentially with full jitter, capped at 5 s, and honours Retry-After up to 10 s', () => {
    expect([1, 2, 3, 4, 5, 10].map((attempt) => backoffMs(attempt, new Error('x'), () => 1))).toEqual([
      400, 800, 1600, 3200, 5000, 5000,
    ]);
    expect(backoffMs(3, new Error('x'), () => 0)).toBe(0);
    expect(backoffMs(1, apiError(429, { 'retry-after': '3' }), () => 1)).toBe(3000);
    expect(backoffMs(1, apiError(503, { 'retry-after': '60' }), () => 1)).toBe(10_000);
  });
});
