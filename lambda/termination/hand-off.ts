// What travels from one invocation to the next when a termination outlasts one invocation,
// and the claim on the node that makes exactly one invocation carry it on.

/** The phase a handed-on termination resumes in, with what that phase needs. */
export type HandOffState =
  | { readonly phase: 'drain'; readonly count: number; readonly claim: string; readonly evicted: number }
  | {
      readonly phase: 'settle';
      readonly count: number;
      readonly claim: string;
      readonly evicted: number;
      /** When the load-balancer wait ends. */
      readonly loadBalancerWaitUntilMs: number;
      /** How the drain ended, for the completion's Event and metrics. */
      readonly drainOutcome: 'drained' | 'timed-out';
    };

/**
 * The node annotation value of a claim: the action's token, the hand-off's number and the
 * Lambda request id of the invocation that claimed it. Lambda retries a failed or timed-out
 * asynchronous invocation with the same request id, so a retry after a crash between claiming
 * and publishing recognises the claim as its own and carries on instead of orphaning the drain.
 * https://repost.aws/knowledge-center/lambda-function-duplicate-invocations
 */
export function claimValue(token: string, count: number, requestId: string): string {
  return `${token}/${count}/${requestId}`;
}

export interface Claim {
  readonly token: string;
  readonly count: number;
  /** Absent in claims written before request ids were recorded. */
  readonly requestId: string | undefined;
}

export function parseClaim(value: string | undefined): Claim | undefined {
  if (value === undefined) return undefined;
  const [token, count, ...rest] = value.split('/');
  const n = Number(count);
  if (!token || !Number.isInteger(n) || n < 1) return undefined;
  return { token, count: n, requestId: rest.length > 0 ? rest.join('/') : undefined };
}
