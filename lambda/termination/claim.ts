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

/** The invocation about to mark the node, as the claims see it. */
export interface Carrier {
  readonly actionId: ActionId;
  readonly requestId: string;
  /** The hand-off it carries on (its number and the claim it was published under); none for a first invocation. */
  readonly handOff: { readonly count: number; readonly claim: string | undefined } | undefined;
  /** Its own claim, left by an earlier attempt of it that crashed between claiming and publishing. */
  readonly ownPendingClaim: string | undefined;
}

/**
 * The claim an invocation writes with its marks, taking up the drain: the first invocation's (count 0, when it
 * starts the drain's record) and a hand-off's recipient's (the hand-off's count, its own request id), so a second
 * delivery of the same notification or hand-off finds the drain taken and stands down.
 */
export function claimToWrite(c: Carrier, onNode: string | undefined, newDrain: boolean): string | undefined {
  if (c.ownPendingClaim !== undefined) return undefined;
  if (c.handOff === undefined) return newDrain ? claimValue(c.actionId, firstInvocation, c.requestId) : undefined;
  const mine = claimValue(c.actionId, c.handOff.count, c.requestId);
  return onNode === mine ? undefined : mine;
}

/** Logged when carriedByAnother: a second delivery (of the notification, of a hand-off) leaves the drain to it. */
export const standsDownMessage =
  'another invocation carries this termination (a notification or hand-off delivered twice); this one stands down';

/** The claim on the node is not one this invocation may carry on from: another delivery took the drain up. */
export function carriedByAnother(c: Carrier, onNode: string | undefined): boolean {
  if (c.ownPendingClaim !== undefined) return onNode !== c.ownPendingClaim;
  if (c.handOff === undefined) {
    const claim = parseClaim(onNode);
    return claim !== undefined && claim.actionId === c.actionId && claim.requestId !== c.requestId;
  }
  return onNode !== c.handOff.claim && onNode !== claimValue(c.actionId, c.handOff.count, c.requestId);
}
