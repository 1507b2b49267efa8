// What each alarm says when it fires: what it means and the first steps to take, so the page is
// useful without any runbook link (docs/operations.md has the same rows, with more). A runbook
// URL, when given, is linked after them.
import { runbookAnchor } from './runbook.js';

export const alarmTexts = {
  FunctionErrors:
    'The drainer failed on a notification (it retries twice, then keeps it in the failed-notifications queue). ' +
    "First steps: read the function's log line 'record failed; it is retried', 'unsupported event shape' or " +
    "'unsupported record'; on an RBAC denial (a DrainerAccessDenied Event) the action was completed without a drain: " +
    "fix the drainer's access entry or ClusterRole.",
  FailedNotificationsVisible:
    'Lifecycle notifications the drainer could not process are waiting in the failed-notifications queue. ' +
    "First steps: Auto Scaling applied the hook's DefaultResult meanwhile; read the messages (the " +
    "FailedNotificationsQueueUrl output), fix the cause from the function's logs, then redrive or delete them.",
  DrainsTimedOut:
    "A drain reached its deadline with pods still on the node. First steps: the node's DrainTimedOut Event lists " +
    'each pod left and what held it, usually a PodDisruptionBudget whose minAvailable equals its replicas; ' +
    'the check command (graceful-node-termination check <group>) shows such budgets before the next scale-in.',
  LaunchesUnchecked:
    'A launch was admitted without a health check: the cluster could not be reached or its requests kept failing. ' +
    "First steps: check the drainer's access entry and ClusterRole binding, and that its network reaches the " +
    "cluster endpoint (the cluster's security group admits it on 443).",
  LaunchesAbandoned:
    'A new node did not join Ready in time and its launch was abandoned (NodeCreationFailure); the group replaces ' +
    'the instance. First steps: the LaunchAbandoned Event says what was missing; check the AMI, the user data and ' +
    'the bootstrap.',
  InstancesRetained:
    'A drain reached its deadline and the instance was retained (DEADLINE_POLICY=retain): it stays cordoned, ' +
    'outside desired capacity. First steps: fix what held its pods (its DrainTimedOut Event), drain it ' +
    '(kubectl drain <node>), then aws autoscaling terminate-instance-in-auto-scaling-group --instance-id <id> ' +
    '--no-should-decrement-desired-capacity.',
  RepairsHeld:
    'Node auto repair held back: too many unhealthy nodes in a group (storm control), Auto Scaling already ' +
    'replacing instances, or a process a replacement needs suspended on the group (ReplaceUnhealthy, Terminate, ' +
    'Launch). First steps: the RepairHeld Events name the nodes and why; resume a suspended process if nobody ' +
    "needs it suspended; many bad at once is rarely the nodes' fault (a CNI, an AMI, a zone): fix the cause, or " +
    'repair by hand.',
} as const;

export type AlarmId = keyof typeof alarmTexts;

/** The alarm's description: its text, then `Runbook: <runbookUrl>#alarm-<id>` when a runbook is given. */
export function alarmDescription(id: AlarmId, runbookUrl: string | undefined): string {
  return runbookUrl === undefined ? alarmTexts[id] : `${alarmTexts[id]} Runbook: ${runbookUrl}#${runbookAnchor(id)}`;
}
