// MODE: enforce, or observe (verify and say what would be done, change nothing).
/**
 * How a deployment acts on what it verified.
 * - ENFORCE: drain, admit, mark and take back, as documented.
 * - OBSERVE: verify as usual, say what it would do (Events on the node and the pods, a log
 *   line), change nothing else, and complete each lifecycle action CONTINUE at once: a careful
 *   first rollout (docs/observe-mode.md).
 */
export enum Mode {
  ENFORCE = 'enforce',
  OBSERVE = 'observe',
}
