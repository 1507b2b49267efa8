// The claim on the node that makes exactly one invocation carry a handed-on drain forward.
// It names the action by its id (a hash of the token, never the token), the hand-off's number
// and the Lambda request id of the invocation that claimed it. Lambda retries a failed or
// timed-out asynchronous invocation with the same request id, so a retry after a crash between
// claiming and publishing recognises the claim as its own and carries on instead of orphaning
// the drain. https://repost.aws/knowledge-center/lambda-function-duplicate-invocations
import type { ActionId } from '../cluster/model.js';
import { actionIdOfToken, parseActionId } from '../cluster/marks/action-id.js';

export function claimValue(actionId: ActionId, count: number, requestId: string): string {
  return `${actionId}/${count}/${requestId}`;
}

export interface Claim {
  readonly actionId: ActionId;
  readonly count: number;
  /** Absent in claims written before request ids were recorded. */
  readonly requestId: string | undefined;
}

export function parseClaim(value: string | undefined): Claim | undefined {
  if (value === undefined) return undefined;
  const [action, count, ...rest] = value.split('/');
  const n = Number(count);
  if (!action || !Number.isInteger(n) || n < 1) return undefined;
  return {
    // Claims of the versions before carried the token itself: read as its hash.
    actionId: parseActionId(action) ?? actionIdOfToken(action),
    count: n,
    requestId: rest.length > 0 ? rest.join('/') : undefined,
  };
}
