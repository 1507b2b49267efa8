// Token buckets for the local AWS endpoint (local-aws.ts), so a wave of terminations meets
// AWS's throttling as it would in an account: a bucket holds `capacity` tokens, each call takes
// one, `refillPerSecond` come back; a call that finds the bucket empty is answered as the real
// service answers it. EC2 throttles each API on its own (request rate limiting: a
// non-mutating Describe* action has a bucket of 100 that refills at 20 a second); every
// Amazon EC2 Auto Scaling action shares one bucket per account and Region, whose size AWS
// does not publish.
// https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html
// https://repost.aws/knowledge-center/autoscaling-api-calls-throttled

export type ThrottledService = 'ec2' | 'autoscaling';

export interface RateLimit {
  /** The name calls and throttles are reported under (with the action, when perAction). */
  readonly family: string;
  readonly service: ThrottledService;
  readonly matches: (action: string) => boolean;
  readonly capacity: number;
  readonly refillPerSecond: number;
  /** One bucket per action (EC2's request rate limiting), or one for the whole family. */
  readonly perAction: boolean;
}

/**
 * EC2 as documented (non-mutating actions: 100 tokens, 20 a second, each API its own bucket).
 * Auto Scaling conservatively: 40 tokens, 10 a second, one bucket for every action. AWS does
 * not publish the number; the bucket is the account's, shared with Cluster Autoscaler or
 * Karpenter, the console and every other tool, so the drainer is assumed to get half of EC2's
 * documented Describe rate, with a burst of four seconds of it.
 */
export const awsLikeRateLimits: readonly RateLimit[] = [
  {
    family: 'ec2 Describe*',
    service: 'ec2',
    matches: (a) => a.startsWith('Describe'),
    capacity: 100,
    refillPerSecond: 20,
    perAction: true,
  },
  {
    family: 'autoscaling (all actions, one bucket)',
    service: 'autoscaling',
    matches: () => true,
    capacity: 40,
    refillPerSecond: 10,
    perAction: false,
  },
];

interface Bucket {
  tokens: number;
  atMs: number;
}

export interface RateLimiter {
  /** Takes a token for the call; false: throttled. */
  admit(service: ThrottledService, action: string, nowMs?: number): boolean;
}

export function createRateLimiter(limits: readonly RateLimit[]): RateLimiter {
  const buckets = new Map<string, Bucket>();
  return {
    admit(service, action, nowMs = Date.now()) {
      const limit = limits.find((l) => l.service === service && l.matches(action));
      if (limit === undefined) return true;
      const key = limit.perAction ? `${limit.family}/${action}` : limit.family;
      const bucket = buckets.get(key) ?? { tokens: limit.capacity, atMs: nowMs };
      bucket.tokens = Math.min(limit.capacity, bucket.tokens + ((nowMs - bucket.atMs) / 1000) * limit.refillPerSecond);
      bucket.atMs = nowMs;
      buckets.set(key, bucket);
      if (bucket.tokens < 1) return false;
      bucket.tokens -= 1;
      return true;
    },
  };
}

/** The throttled answer as each service writes it: EC2 503 RequestLimitExceeded, Auto Scaling 400 Throttling. */
export function throttledAnswer(service: ThrottledService, requestId: string): { status: number; body: string } {
  if (service === 'ec2') {
    return {
      status: 503,
      body: `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>${requestId}</RequestID></Response>`,
    };
  }
  return {
    status: 400,
    body: `<ErrorResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
  };
}
