// The one place action ids are built and recognised (ActionId, model.ts). A lifecycle token identifies the action,
// and whoever holds it can complete it: it is never written where `get nodes` can read it. Tokens are random
// UUIDs, so a hash names the action without revealing it; every action re-proves its authority by presenting the
// token (or its instance) to Auto Scaling, never by what the node says.
import { createHash } from 'node:crypto';
import type { ActionId } from '../model.js';

/** A lifecycle action, by a hash of its token. */
export function actionIdOfToken(token: string): ActionId {
  return `sha256:${createHash('sha256').update(token).digest('hex').slice(0, 32)}`;
}

/** The action of an instance addressed through the hook (a drain the reconciler resumed). */
export function actionIdOfInstance(instanceId: string): ActionId {
  return `instance:${instanceId}`;
}

/** A Spot interruption of an instance: no lifecycle action, the warning is the owner. */
export function spotActionId(instanceId: string): ActionId {
  return `spot:${instanceId}`;
}

/** An action id as written on a node or in a claim; undefined: not one of ours. */
export function parseActionId(value: string): ActionId | undefined {
  return /^(sha256|instance|spot):./.test(value) ? (value as ActionId) : undefined;
}
