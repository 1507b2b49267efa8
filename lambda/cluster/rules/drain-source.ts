// What a drain's source decides, in one switch over its kind (DrainSource, model.ts): whose action the drain
// carries, who owns its marks (the reconciler's rule), whether it can be resumed through the hook, and whether a
// deadline policy of retain can keep the instance. A new source is a compile error here until its case says.
import type { ActionId, DrainSource } from '../model.js';

/** Who keeps a drain's marks alive, as the reconciler judges it (reconcile/owners.ts). */
export type MarksOwner =
  /** The instance's terminate action: alive while the instance is leaving, retained or in the warm pool. */
  | 'terminate-action'
  /** A notice that the instance goes at a time (a Spot interruption): alive a while after it, then gone. */
  | 'notice';

export interface SourceTraits {
  /** The action whose drain this is; undefined for marks set ahead of the node's own drain. */
  readonly actionId: ActionId | undefined;
  /** The terminate hook through which the reconciler may heartbeat the action by instance id and resume it. */
  readonly resumableThrough: string | undefined;
  /** ABANDON can answer it: DEADLINE_POLICY=retain keeps the instance. */
  readonly canRetain: boolean;
  readonly owner: MarksOwner;
  /** How the record has always named it on the node, beside `action` and `hook` (drain-record.ts). */
  readonly legacy: 'spot' | undefined;
}

/** The one case per source. */
export function traitsOf(source: DrainSource): SourceTraits {
  switch (source.kind) {
    case 'lifecycle-action':
    case 'resumed':
      return {
        actionId: source.actionId,
        resumableThrough: source.hook,
        canRetain: true,
        owner: 'terminate-action',
        legacy: undefined,
      };
    case 'marked-ahead':
      return {
        actionId: undefined,
        resumableThrough: source.hook,
        canRetain: true,
        owner: 'terminate-action',
        legacy: undefined,
      };
    case 'spot-interruption':
      return {
        actionId: source.actionId,
        resumableThrough: undefined,
        canRetain: false,
        owner: 'notice',
        legacy: 'spot',
      };
    default:
      throw new Error(`a drain source this code does not know: ${JSON.stringify(source satisfies never)}`);
  }
}

/** The action whose drain this is; undefined for marks set ahead of the node's own drain. */
export const actionOf = (source: DrainSource): ActionId | undefined => traitsOf(source).actionId;

/** The hook through which the reconciler may resume the drain; undefined: no action waits on us, or not known. */
export const resumableThrough = (source: DrainSource): string | undefined => traitsOf(source).resumableThrough;

/** An action that ABANDON can answer: DEADLINE_POLICY=retain keeps the instance (Spot's cannot be kept). */
export const canRetain = (source: DrainSource): boolean => traitsOf(source).canRetain;

/** The same drain: the same action (marks set ahead are one whatever the hook). */
export function sameSource(a: DrainSource, b: DrainSource): boolean {
  return a.kind === b.kind && actionOf(a) === actionOf(b);
}
