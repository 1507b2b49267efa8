// The node lifecycle conditions we set and take back (rules/lifecycle-conditions.ts builds them).
import type { NodeInfo, LifecycleCondition } from '../model.js';

export interface ConditionsGateway {
  /** Sets these conditions on the node's status (merged by type); best effort, never a reason to stop. */
  setConditions(nodeName: string, conditions: readonly LifecycleCondition[]): Promise<void>;
  /** Removes the lifecycle conditions of ours the node carries (by our reasons). */
  removeOurConditions(node: NodeInfo): Promise<void>;
}
