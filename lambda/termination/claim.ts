// The claim on the node that makes exactly one invocation carry a drain forward, from its first
// invocation (count 0) and through each hand-off.
// It names the action by its id (a hash of the token, never the token), the hand-off's number
// and the Lambda request id of the invocation that claimed it. Lambda retries a failed or
// timed-out asynchronous invocation with the same request id, so a retry after a crash between
// claiming and publishing recognises the claim as its own and carries on instead of orphaning
// the drain. https://repost.aws/knowledge-center/lambda-function-duplicate-invocations
import type { ActionId } from '../cluster/model.js';
import { actionIdOfToken, parseActionId } from '../cluster/marks/action-id.js';

/**
 * Count 0 is the first invocation's own claim, written with its marks: a second delivery of the
 * notification (SNS delivers at least once) finds it and stands down instead of draining the same
 * node side by side; Lambda's retry of the first invocation has its request id and carries on.
 */
export const firstInvocation = 0;

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
  if (!action || count === '' || !Number.isInteger(n) || n < firstInvocation) return undefined;
  return {
    // Claims of the versions before carried the token itself: read as its hash.
    actionId: parseActionId(action) ?? actionIdOfToken(action),
    count: n,
    requestId: rest.length > 0 ? rest.join('/') : undefined,
  };
}

/** Another invocation's claim on this action: a twin of this first invocation (a duplicated delivery) stands down. */
export function ownedByAnother(value: string | undefined, actionId: ActionId, requestId: string): boolean {
  const claim = parseClaim(value);
  return claim !== undefined && claim.actionId === actionId && claim.requestId !== requestId;
}
