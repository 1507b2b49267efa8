// npm run termination-policy -- <enable|disable> <group> [--function-arn ARN] [--approve]
//   [-o table|json|yaml] [--region R] [--profile P]
//
// Puts the drainer first in a group's TerminationPolicies (enable), the group's own policies
// after it, so Auto Scaling asks the drainer which instance goes; disable takes it out again and
// leaves the rest as they were. Plan first; --approve (or "yes" on a terminal) changes it.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/lambda-custom-termination-policy.html
import {
  DescribeAutoScalingGroupsCommand,
  DescribeLifecycleHooksCommand,
  UpdateAutoScalingGroupCommand,
  type AutoScalingClient,
} from '@aws-sdk/client-auto-scaling';
import { resolveAwsAccess } from './aws-access.js';
import { exitCodes, outputFormat, parseCommand, UsageError } from './command-options.js';
import { atAws } from './failure.js';
import { lambdaArnPattern } from './maintenance-windows-note.js';
import { formatOutput } from './output.js';
import { runAsCommand } from './run-command.js';
import { askYes, deploymentsOfHooks } from './upgrade-plan.js';
import { terminationPolicyUsage } from './usage.js';

export interface PolicyPlan {
  readonly group: string;
  readonly action: 'enable' | 'disable';
  readonly before: readonly string[];
  readonly after: readonly string[];
  /** The deployments whose hooks are on the group (the drain path the policy relies on). */
  readonly deployments: readonly string[];
  readonly changes: boolean;
  readonly applied: boolean;
}

/** Enable: the function first, the group's other policies after it (a Lambda ARN already first is replaced only if it is ours). */
export function plannedPolicies(
  action: 'enable' | 'disable',
  before: readonly string[],
  functionArn: string | undefined,
): string[] {
  const rest = before.filter((p) => !lambdaArnPattern.test(p));
  if (action === 'disable') return rest.length > 0 ? rest : ['Default'];
  const other = before.find((p) => lambdaArnPattern.test(p) && p !== functionArn);
  if (other !== undefined)
    throw new UsageError(
      `the group already has another custom termination policy (${other}); a group takes one: disable it first`,
    );
  return [functionArn!, ...(rest.length > 0 ? rest : ['Default'])];
}

export async function planPolicy(
  autoScaling: AutoScalingClient,
  action: 'enable' | 'disable',
  group: string,
  functionArn: string | undefined,
): Promise<PolicyPlan> {
  const found = (await autoScaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group] })))
    .AutoScalingGroups?.[0];
  if (found === undefined) throw new UsageError(`no Auto Scaling group ${JSON.stringify(group)} in this region`);
  const before = found.TerminationPolicies ?? ['Default'];
  const after = plannedPolicies(action, before, functionArn);
  const deployments = deploymentsOfHooks(
    (await autoScaling.send(new DescribeLifecycleHooksCommand({ AutoScalingGroupName: group }))).LifecycleHooks ?? [],
  );
  return { group, action, before, after, deployments, changes: before.join() !== after.join(), applied: false };
}

export async function applyPolicy(autoScaling: AutoScalingClient, plan: PolicyPlan): Promise<PolicyPlan> {
  if (!plan.changes) return plan;
  await autoScaling.send(
    new UpdateAutoScalingGroupCommand({ AutoScalingGroupName: plan.group, TerminationPolicies: [...plan.after] }),
  );
  return { ...plan, applied: true };
}

export function renderPolicyPlan(plan: PolicyPlan): string {
  const lines = [
    `group ${plan.group}: TerminationPolicies`,
    `  now:   ${plan.before.join(', ')}`,
    `  after: ${plan.after.join(', ')}`,
  ];
  if (plan.action === 'enable' && plan.deployments.length === 0) {
    lines.push(
      '  warning: no deployment of ours has lifecycle hooks on this group: the policy chooses, but nothing drains the chosen node',
    );
  }
  if (!plan.changes) lines.push('nothing to change');
  return lines.join('\n');
}

const policyOptions = { approve: { type: 'boolean', default: false }, 'function-arn': { type: 'string' } } as const;

/** The command: `graceful-node-termination termination-policy`, `npm run termination-policy`. */
export async function main(args: readonly string[] = process.argv.slice(2)): Promise<number> {
  const { values, positionals } = parseCommand('termination-policy', args, policyOptions, [
    '<enable|disable>',
    '<auto-scaling-group>',
  ]);
  if (values.help) {
    console.log(terminationPolicyUsage);
    return exitCodes.ok;
  }
  const format = outputFormat(values);
  const [action, group] = positionals;
  if (action !== 'enable' && action !== 'disable')
    throw new UsageError(`say enable or disable, then the group (see termination-policy --help)`);
  if (group === undefined) throw new UsageError('name the Auto Scaling group (see termination-policy --help)');
  const arn = values['function-arn'];
  if (action === 'enable' && (arn === undefined || !lambdaArnPattern.test(arn))) {
    throw new UsageError(
      'enable needs --function-arn: the stack output TerminationPolicyFunctionArn (arn:aws:lambda:<region>:<account>:function:<name>)',
    );
  }
  const aws = await resolveAwsAccess(values);
  const where = { group, region: aws.region, profile: aws.profile };
  const plan = await atAws(where, 'Auto Scaling DescribeAutoScalingGroups', () =>
    planPolicy(aws.autoScaling, action, group, arn),
  );
  const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true && format === 'table';
  if (format === 'table') console.log(renderPolicyPlan(plan));
  const go =
    plan.changes &&
    (values.approve ||
      (interactive && (await askYes(`${action} the termination policy of ${group}? Type yes to go on: `))));
  const result = go
    ? await atAws(where, 'Auto Scaling UpdateAutoScalingGroup', () => applyPolicy(aws.autoScaling, plan))
    : plan;
  if (format !== 'table') console.log(formatOutput(format, result, () => renderPolicyPlan(result)));
  else if (result.applied) console.log(`changed: group ${group} TerminationPolicies are ${result.after.join(', ')}`);
  else if (result.changes) console.log('not changed: pass --approve to change it');
  return exitCodes.ok;
}

runAsCommand(import.meta.url, 'termination-policy', main);
