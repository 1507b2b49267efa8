// What a drain's source decides, each by a switch over its kind (DrainSource, model.ts): whose action the drain
// carries, whether the reconciler can resume a lost hand-off chain through the hook, and whether a deadline
// policy of retain can keep the instance. A new source is a compile error here until it says.
import type { ActionId, DrainSource } from '../model.js';

/** The action whose drain this is; undefined for marks set ahead of the node's own drain. */
export function actionOf(source: DrainSource): ActionId | undefined {
  switch (source.kind) {
    case 'lifecycle-action':
    case 'resumed':
    case 'spot-interruption':
      return source.actionId;
    case 'marked-ahead':
      return undefined;
    default:
      return unknownSource(source);
  }
}

/**
 * The terminate hook through which the reconciler may heartbeat the instance's action by instance id and resume
 * a drain whose chain was lost; undefined when no action waits on us (a Spot interruption) or the hook is not known.
 */
export function resumableThrough(source: DrainSource): string | undefined {
  switch (source.kind) {
    case 'lifecycle-action':
    case 'resumed':
    case 'marked-ahead':
      return source.hook;
    case 'spot-interruption':
      return undefined;
    default:
      return unknownSource(source);
  }
}

/** An action that ABANDON can answer: DEADLINE_POLICY=retain keeps the instance (Spot's cannot be kept). */
export function canRetain(source: DrainSource): boolean {
  switch (source.kind) {
    case 'lifecycle-action':
    case 'resumed':
    case 'marked-ahead':
      return true;
    case 'spot-interruption':
      return false;
    default:
      return unknownSource(source);
  }
}

/** The same drain: the same action (marks set ahead are one whatever the hook). */
export function sameSource(a: DrainSource, b: DrainSource): boolean {
  return a.kind === b.kind && actionOf(a) === actionOf(b);
}

function unknownSource(source: never): never {
  throw new Error(`a drain source this code does not know: ${JSON.stringify(source)}`);
}
