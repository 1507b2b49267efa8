// Storm control and pacing, per group, as managed node groups' NodeRepairConfig defines them:
// repair stops above the unhealthy threshold (a count, or a percentage of the group's nodes;
// by default more than 5 nodes and more than 20 % unhealthy), and at most so many nodes are
// repaired at once (a count, or a percentage of the unhealthy nodes; at least one).
// https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-eks-nodegroup-noderepairconfig.html
import type { Limit } from '../shared/repair-settings.js';

/** Why repair is held in a group of `total` nodes with `unhealthy` bad ones, or undefined. */
export function stormOf(total: number, unhealthy: number, max: Limit | undefined): string | undefined {
  if (max === undefined) {
    return total > 5 && unhealthy * 100 > total * 20
      ? `${unhealthy} of its ${total} nodes are unhealthy (more than 20 % of more than 5 nodes)`
      : undefined;
  }
  if ('count' in max)
    return unhealthy > max.count
      ? `${unhealthy} of its ${total} nodes are unhealthy (more than ${max.count})`
      : undefined;
  return unhealthy * 100 > total * max.percentage
    ? `${unhealthy} of its ${total} nodes are unhealthy (more than ${max.percentage} %)`
    : undefined;
}

/** How many nodes may be repaired at once in a group with `unhealthy` bad nodes. */
export function parallelLimit(unhealthy: number, max: Limit): number {
  return 'count' in max ? max.count : Math.max(1, Math.floor((unhealthy * max.percentage) / 100));
}

/** The processes a replacement (SetInstanceHealth Unhealthy) needs: ReplaceUnhealthy terminates, Launch replaces. */
const replacementProcesses = ['ReplaceUnhealthy', 'Terminate', 'Launch'] as const;

/**
 * Why Auto Scaling would not carry out a replacement in this group now, from its suspended processes, or undefined:
 * with ReplaceUnhealthy or Terminate suspended an instance marked Unhealthy stays (and is replaced whenever the
 * process resumes, however healthy by then); with Launch suspended it is terminated and nothing launches in its place.
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/understand-how-suspending-processes-affects-other-processes.html
 */
export function replacementHeld(suspendedProcesses: readonly string[]): string | undefined {
  const held = replacementProcesses.filter((p) => suspendedProcesses.includes(p));
  if (held.length === 0) return undefined;
  const what =
    held.length === 1 && held[0] === 'Launch'
      ? 'it would terminate the instance and launch none in its place'
      : 'an instance marked Unhealthy would not be replaced';
  return (
    `Auto Scaling's ${held.join(', ')} ${held.length === 1 ? 'process is' : 'processes are'} suspended on the ` +
    `group: ${what}`
  );
}
