// npm run check -- <group> [-o table|json|yaml] [--strategy default|minimal] [--region R] [--profile P]
//   [--kubeconfig F] [--context C] [--nodes a,b]
//
// The drainability preflight: for each node of an Auto Scaling group, the pods that cannot
// leave now and why (preflight.ts). Run it before an upgrade or a scale-in. It reads the group
// with your AWS credentials and the cluster with your kubeconfig (KUBECONFIG, exec plugins such
// as `aws eks get-token` included). `--nodes` names the nodes directly instead of asking Auto
// Scaling (clusters outside AWS, the local plane). Exit code: 0, or 3 when there is a blocker.
import { AutoScalingClient, DescribeAutoScalingGroupsCommand } from '@aws-sdk/client-auto-scaling';
import { CoreV1Api, PolicyV1Api, type V1Pod, type V1PodDisruptionBudget } from '@kubernetes/client-node';
import { mapWithConcurrency } from '../lambda/shared/concurrency.js';
import { resolveAwsAccess, type AwsAccess } from './aws-access.js';
import { nodesOfInstances } from './cluster-access.js';
import { runAsCommand } from './run-command.js';
import { choice, exitCodes, outputFormat, parseCommand, UsageError } from './command-options.js';
import { atAws, atKubernetes } from './failure.js';
import { loadKubeAccess, type KubeAccess } from './kube-access.js';
import { formatOutput } from './output.js';
import { checkUsage } from './usage.js';
import { analyseDrainability, hasBlocker, renderFindings, type Finding } from './preflight.js';
import { renderRules, rulesFromOptions, rulesFromVariables } from './drain-rules-option.js';
import { podRules, type DrainRuleSettings, type PodRuleRow } from './preflight.js';
import { functionVariables } from './maintenance-windows-note.js';

export interface CheckResult {
  readonly nodes: readonly string[];
  readonly findings: readonly Finding[];
  /** Each pod's drain rule (what the drain does with it, in which order, and why). */
  readonly rules: readonly PodRuleRow[];
}

/** Pod lists in flight at once: a 1,000-node group is read a few nodes at a time, not all at once. */
export const podListConcurrency = 8;

/** Reads the pods and budgets of every namespace with a pod on the nodes, and analyses them. */
export async function checkNodes(
  core: CoreV1Api,
  policy: PolicyV1Api,
  nodes: readonly string[],
  o: { terminateFirst?: boolean; rules?: DrainRuleSettings } = {},
): Promise<CheckResult> {
  const lists = await mapWithConcurrency(nodes, podListConcurrency, (n) =>
    core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${n}` }),
  );
  const onNodes = lists.flatMap((l) => l.items);
  const namespaces = [...new Set(onNodes.map((p) => p.metadata?.namespace ?? ''))];
  const pods: V1Pod[] = [];
  const budgets: V1PodDisruptionBudget[] = [];
  for (const namespace of namespaces) {
    pods.push(...(await core.listNamespacedPod({ namespace })).items);
    budgets.push(...(await policy.listNamespacedPodDisruptionBudget({ namespace })).items);
  }
  const input = { nodes, pods, budgets, terminateFirst: o.terminateFirst, rules: o.rules };
  return { nodes, findings: analyseDrainability(input), rules: podRules(input) };
}

/** The instance ids of a group, as Auto Scaling lists them. */
export async function instancesOfGroup(autoScaling: AutoScalingClient, group: string): Promise<string[]> {
  const { AutoScalingGroups } = await autoScaling.send(
    new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group] }),
  );
  if (!AutoScalingGroups?.[0]) throw new Error(`no Auto Scaling group named ${group}`);
  return (AutoScalingGroups[0].Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
}

/** The nodes of a group: its instances from Auto Scaling, their Nodes found as the drainer finds them. */
export async function nodesOfGroup(group: string, aws: AwsAccess, kube: KubeAccess): Promise<string[]> {
  const where = { group, region: aws.region, profile: aws.profile, server: kube.server, context: kube.context };
  const instanceIds = await atAws(where, 'DescribeAutoScalingGroups', () => instancesOfGroup(aws.autoScaling, group));
  return atKubernetes(where, 'read the nodes', () => nodesOfInstances(instanceIds, kube.kc, aws.instances));
}

/** The command: `graceful-node-termination check`, `npm run check`. */
export async function main(args: readonly string[] = process.argv.slice(2)): Promise<number> {
  const options = {
    nodes: { type: 'string' },
    strategy: { type: 'string' },
    function: { type: 'string' },
    'drain-rules': { type: 'string' },
    'evict-daemonset-pods': { type: 'boolean' },
  } as const;
  const { values, positionals } = parseCommand('check', args, options, ['<auto-scaling-group>']);
  if (values.help) {
    console.log(checkUsage);
    return exitCodes.ok;
  }
  const format = outputFormat(values);
  const strategy = choice('--strategy', values.strategy, ['default', 'minimal'], 'default');
  const group = positionals[0];
  if (group === undefined && values.nodes === undefined)
    throw new UsageError('name an Auto Scaling group, or the nodes with --nodes a,b (see check --help)');
  if (
    values.function !== undefined &&
    (values['drain-rules'] !== undefined || values['evict-daemonset-pods'] !== undefined)
  ) {
    throw new UsageError(
      '--function reads the deployed rules: give it, or --drain-rules / --evict-daemonset-pods, not both',
    );
  }
  const kube = loadKubeAccess(values);
  const aws = values.nodes === undefined || values.function !== undefined ? await resolveAwsAccess(values) : undefined;
  const rules =
    values.function !== undefined ? await deployedRules(values.function, aws!, group) : rulesFromOptions(values);
  const nodes = values.nodes ? values.nodes.split(',').filter(Boolean) : await nodesOfGroup(group!, aws!, kube);
  const where = { group, server: kube.server, context: kube.context };
  const result = await atKubernetes(where, 'list pods and PodDisruptionBudgets', () =>
    checkNodes(kube.kc.makeApiClient(CoreV1Api), kube.kc.makeApiClient(PolicyV1Api), nodes, {
      terminateFirst: strategy === 'minimal',
      rules,
    }),
  );
  console.log(
    formatOutput(format, result, () =>
      [renderFindings(result.nodes, result.findings), renderRules(result.rules)].filter(Boolean).join('\n\n'),
    ),
  );
  return hasBlocker(result.findings) ? exitCodes.blocker : exitCodes.ok;
}

/** The rules the deployed function drains with (its DRAIN_RULES and EVICT_DAEMONSET_PODS). */
async function deployedRules(fn: string, aws: AwsAccess, group: string | undefined): Promise<DrainRuleSettings> {
  const endpoint = process.env['AWS_ENDPOINT_URL_LAMBDA'] ?? process.env['AWS_ENDPOINT_URL'];
  const read = await atAws({ group, region: aws.region, profile: aws.profile }, 'GetFunctionConfiguration', () =>
    functionVariables(fn, { region: aws.region, credentials: aws.autoScaling.config.credentials, endpoint }),
  );
  if ('unreadable' in read) throw new Error(`could not read the drain rules of function ${fn}: ${read.unreadable}`);
  return rulesFromVariables(read.variables);
}

runAsCommand(import.meta.url, 'check', main);
