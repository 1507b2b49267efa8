// The log lines the construct's alarms count (infra/metrics.ts reads these texts): what pages
// people is defined here, once.

/** Logged when a drain hits its deadline; the DrainsTimedOut alarm counts it. */
export const drainTimedOutMessage = 'drain deadline reached with pods still on the node; completing anyway';

/** Logged when DEADLINE_POLICY=retain abandons the action; the InstancesRetained alarm counts it. */
export const instanceRetainedMessage =
  'drain deadline reached: completing with ABANDON so the group retains the instance, cordoned ' +
  '(DEADLINE_POLICY=retain)';

/** Logged when a launch could not be checked; the LaunchesUnchecked alarm counts it. */
export const launchUncheckedMessage = 'could not reach the cluster to check the new node; admitting it unchecked';

/** Logged when a launch is abandoned (NodeCreationFailure); the LaunchesAbandoned alarm counts it. */
export const launchAbandonedMessage =
  'new node did not become healthy in time; abandoning the launch so the group replaces the instance';

/**
 * Logged when node auto repair holds back (storm control), with the RepairStorms metric the RepairsHeld alarm watches.
 */
export const repairHeldMessage = 'node auto repair held (storm control)';

/**
 * Logged when node auto repair holds a replacement Auto Scaling would not carry out (a process suspended on the group).
 */
export const repairSuspendedMessage = 'node auto repair held: a process a replacement needs is suspended on the group';
/** Logged when the cluster refused the drainer (RBAC, access entry); the FunctionErrors alarm fires with it. */
export const accessDeniedMessage = 'the cluster refused the drainer; check its access entry and ClusterRole';

// --- termination policy (termination-policy/) --------------------------------------------
/**
 * Logged when the termination policy answers Auto Scaling's own suggestion because it could not decide; counted by
 * TerminationPolicyFailedOpen.
 */
export const choiceFailedOpenMessage = "termination policy could not decide; answering Auto Scaling's own suggestion";
