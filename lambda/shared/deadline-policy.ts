// What happens at the drain deadline (DEADLINE_POLICY): force, leave or retain.
/**
 * What happens to pods still on the node at the drain deadline.
 * - FORCE: delete each at the deadline minus its grace period (PodDisruptionBudgets
 *   bypassed), as managed node groups and Karpenter do.
 * - LEAVE: delete nothing; they die with the instance.
 * - RETAIN: delete nothing and complete the action with ABANDON, so a group whose instance
 *   lifecycle policy retains on ABANDON keeps the instance (Terminating:Retained), cordoned,
 *   until someone fixes what held it. Every path fails towards keeping the instance.
 */
export enum DeadlinePolicy {
  FORCE = 'force',
  LEAVE = 'leave',
  RETAIN = 'retain',
}

/** The verdict a termination ends with when it could not drain: ABANDON retains under RETAIN. */
export function undrainedVerdict(policy: DeadlinePolicy): 'CONTINUE' | 'ABANDON' {
  return policy === DeadlinePolicy.RETAIN ? 'ABANDON' : 'CONTINUE';
}
