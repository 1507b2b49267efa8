// Auto Scaling's lifecycle states that decide what we may do to an instance's node.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-lifecycle.html
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/warm-pool-instance-lifecycle.html

/**
 * On the way out of the group: terminating (before, in and past its terminate hook) or
 * returning to the warm pool on scale-in (which pauses in Warmed:Pending:Wait for the
 * terminate hook). Their nodes are doomed or about to stop.
 */
export const leavingStates: ReadonlySet<string> = new Set([
  'Terminating',
  'Terminating:Wait',
  'Terminating:Proceed',
  'Warmed:Pending',
  'Warmed:Pending:Wait',
  'Warmed:Pending:Proceed',
]);

/**
 * States in which a drain's marks still have their owner: the instance is leaving, was
 * retained (DEADLINE_POLICY=retain keeps it cordoned on purpose), or sits in the warm pool
 * (its node comes back through the launch hook, which takes the marks back).
 */
export function keepsDrainMarks(lifecycleState: string): boolean {
  return (
    leavingStates.has(lifecycleState) || lifecycleState.startsWith('Warmed:') || lifecycleState.endsWith(':Retained')
  );
}

/** A terminate hook may be holding the instance: a heartbeat by instance id can tell. */
export function mayHoldTerminateAction(lifecycleState: string): boolean {
  return lifecycleState === 'Terminating:Wait' || lifecycleState === 'Warmed:Pending:Wait';
}
