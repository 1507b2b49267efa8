// npm run check -- <group> [--json] [--strategy default|minimal] [--region R] [--context C] [--nodes a,b]
//
// The drainability preflight: for each node of an Auto Scaling group, the pods that cannot
// leave now and why (preflight.ts). Run it before an upgrade or a scale-in. It reads the group
// with your AWS credentials and the cluster with your kubeconfig (KUBECONFIG, exec plugins such
// as `aws eks get-token` included). `--nodes` names the nodes directly instead of asking Auto
// Scaling (clusters outside AWS, the local plane). Exit code: 0, or 3 when there is a blocker.
import { AutoScalingClient, DescribeAutoScalingGroupsCommand } from '@aws-sdk/client-auto-scaling';
import { CoreV1Api, KubeConfig, PolicyV1Api, type V1Pod, type V1PodDisruptionBudget } from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import { createEc2Instances } from '../lambda/adapters/aws/ec2-instances.js';
import { mapWithConcurrency } from '../lambda/shared/concurrency.js';
import { nodesOfInstances, runAsCommand } from './cluster-access.js';
import { analyseDrainability, hasBlocker, renderFindings, type Finding } from './preflight.js';

export interface CheckResult {
  readonly nodes: readonly string[];
  readonly findings: readonly Finding[];
}

/** Pod lists in flight at once: a 1,000-node group is read a few nodes at a time, not all at once. */
export const podListConcurrency = 8;

/** Reads the pods and budgets of every namespace with a pod on the nodes, and analyses them. */
export async function checkNodes(core: CoreV1Api, policy: PolicyV1Api, nodes: readonly string[], o: { terminateFirst?: boolean } = {}): Promise<CheckResult> {
  const lists = await mapWithConcurrency(nodes, podListConcurrency, (n) => core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${n}` }));
  const onNodes = lists.flatMap((l) => l.items);
  const namespaces = [...new Set(onNodes.map((p) => p.metadata?.namespace ?? ''))];
  const pods: V1Pod[] = [];
  const budgets: V1PodDisruptionBudget[] = [];
  for (const namespace of namespaces) {
    pods.push(...(await core.listNamespacedPod({ namespace })).items);
    budgets.push(...(await policy.listNamespacedPodDisruptionBudget({ namespace })).items);
  }
  return { nodes, findings: analyseDrainability({ nodes, pods, budgets, terminateFirst: o.terminateFirst }) };
}

/** The instance ids of a group, as Auto Scaling lists them. */
export async function instancesOfGroup(autoScaling: AutoScalingClient, group: string): Promise<string[]> {
  const { AutoScalingGroups } = await autoScaling.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group] }));
  if (!AutoScalingGroups?.[0]) throw new Error(`no Auto Scaling group named ${group}`);
  return (AutoScalingGroups[0].Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
}

export const checkUsage = `usage: graceful-node-termination check <auto-scaling-group> [options]   (npm run check -- <group> [options])

The drainability preflight: for each node of the group, the pods that cannot leave now and why.
Reads the group with your AWS credentials and the cluster with your kubeconfig.

options:
  --json                   the findings as JSON
  --strategy S             default or minimal (minimal: the node is terminated before its replacement is up)
  --region R               the group's region (default: AWS_REGION, AWS_DEFAULT_REGION, us-east-1)
  --context C              the kubeconfig context
  --nodes a,b              these nodes instead of the group's (no AWS call)
  -h, --help               this text

exit code: 0, 3 when a node has a certain blocker, 2 on bad usage`;

/** The command: `graceful-node-termination check`, `npm run check`. */
export async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      json: { type: 'boolean', default: false },
      region: { type: 'string' },
      context: { type: 'string' },
      nodes: { type: 'string' },
      strategy: { type: 'string', default: 'default' },
    },
  });
  if (values.help) {
    console.log(checkUsage);
    return 0;
  }
  const group = positionals[0];
  if (group === undefined && values.nodes === undefined) {
    console.error(checkUsage);
    return 2;
  }
  const kc = new KubeConfig();
  kc.loadFromDefault();
  if (values.context) kc.setCurrentContext(values.context);
  const core = kc.makeApiClient(CoreV1Api);
  const policy = kc.makeApiClient(PolicyV1Api);
  const region = values.region ?? process.env['AWS_REGION'] ?? process.env['AWS_DEFAULT_REGION'] ?? 'us-east-1';
  const autoScaling = new AutoScalingClient({ region });
  const nodes = values.nodes
    ? values.nodes.split(',').filter(Boolean)
    : await nodesOfInstances(await instancesOfGroup(autoScaling, group!), kc, createEc2Instances({ region, credentials: autoScaling.config.credentials }));
  const result = await checkNodes(core, policy, nodes, { terminateFirst: values.strategy === 'minimal' });
  console.log(values.json ? JSON.stringify(result, null, 2) : renderFindings(result.nodes, result.findings));
  return hasBlocker(result.findings) ? 3 : 0;
}

runAsCommand(import.meta.url, 'check', main);
