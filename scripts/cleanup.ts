// npm run cleanup -- --deployment NAME [--dry-run] [--group G ...] [-o table|json|yaml]
//   [--region R] [--profile P] [--kubeconfig F] [--context C]
//
// Takes back every mark a deployment of ours left (docs/marks.md): on its nodes (found by the
// owner label: one label-selected list) a drain's marks exactly as its record says (the
// load-balancer label restored, only our cordon lifted), a refresh's (taint, labels, its
// cordon), a migration's (taint, label, record, its cordon), the hand-off claim and the owner
// label; on Auto Scaling groups the refresh-strategy tag. The writes are the gateway's own
// unmark, unmarkOutdated and unmarkMigrating, the reconciler's; nothing else on a node is
// touched. Run it after the stack is deleted (docs/deploy.md#uninstall).
import {
  DeleteTagsCommand,
  DescribeLifecycleHooksCommand,
  DescribeTagsCommand,
  type AutoScalingClient,
} from '@aws-sdk/client-auto-scaling';
import { statusOf } from '../lambda/adapters/kubernetes/api-errors.js';
import { createKubeHttp, type KubeHttp } from '../lambda/adapters/kubernetes/kube-http.js';
import type { OutOfServiceGateway } from '../lambda/cluster/ports/out-of-service-gateway.js';
import type { NodeGateway } from '../lambda/cluster/ports/node-gateway.js';
import type { NodeInfo, PatchResult } from '../lambda/cluster/model.js';
import { marksOnNode } from '../lambda/cluster/marks/mark-inventory.js';
import {
  deferralAnnotation,
  drainAnnotation,
  handOffAnnotation,
  migrationLabel,
  ownerLabel,
  refreshLabel,
} from '../lambda/cluster/marks/mark-keys.js';
import { refreshStrategyTag } from '../lambda/shared/group-tags.js';
import { endpointFromKubeConfig, kubeconfigGateway } from './cluster-access.js';
import { runAsCommand } from './run-command.js';
import { resolveAwsAccess } from './aws-access.js';
import { exitCodes, outputFormat, parseCommand, UsageError } from './command-options.js';
import { atAws, atKubernetes, guardKubernetes, type Where } from './failure.js';
import { loadKubeAccess } from './kube-access.js';
import { formatOutput } from './output.js';
import { cleanupUsage } from './usage.js';
import { deploymentsOfHooks } from './upgrade-plan.js';

export interface CleanupResult {
  readonly deployment: string;
  readonly dryRun: boolean;
  /** Per node: the marks found (and taken back unless a dry run). */
  readonly nodes: readonly { readonly node: string; readonly marks: readonly string[] }[];
  /** Groups whose refresh-strategy tag is (or would be) removed. */
  readonly groups: readonly string[];
  /** Groups carrying the tag that this deployment cannot be shown to own: left alone. */
  readonly groupsLeft: readonly string[];
}

export interface CleanupDeps {
  readonly nodes: Pick<NodeGateway, 'listMarked' | 'unmark' | 'unmarkOutdated' | 'unmarkMigrating'> &
    Partial<Pick<OutOfServiceGateway, 'untaintOutOfService'>>;
  /** Removes the owner label, a stray hand-off claim and an unreadable record, conditional on the node as read. */
  readonly removeLeftovers: (node: NodeInfo) => Promise<PatchResult>;
  /** Absent: the nodes only (no AWS access asked for). */
  readonly groups?: GroupTags | undefined;
}

export interface GroupTags {
  /** Groups carrying the refresh-strategy tag. */
  tagged(): Promise<string[]>;
  /** The deployments whose hooks are on the group. */
  deploymentsOf(group: string): Promise<string[]>;
  untag(group: string): Promise<void>;
}

/** Four passes over the owner's nodes: drains' marks, refreshes' marks, migrations' marks, what is left. */
async function cleanNodes(deployment: string, deps: CleanupDeps): Promise<void> {
  for (const node of await deps.nodes.listMarked(deployment))
    if (node.drain !== undefined) await deps.nodes.unmark(node, node.drain);
  for (const node of await deps.nodes.listMarked(deployment)) {
    if (node.labels[refreshLabel] !== undefined)
      await deps.nodes.unmarkOutdated(node.refreshGroup ?? '', { nodes: [node] });
  }
  for (const node of await deps.nodes.listMarked(deployment))
    if (node.outOfService !== undefined) await deps.nodes.untaintOutOfService?.(node);
  for (const node of await deps.nodes.listMarked(deployment)) {
    if (node.labels[migrationLabel] !== undefined) await deps.nodes.unmarkMigrating(node);
  }
  for (const node of await deps.nodes.listMarked(deployment)) await deps.removeLeftovers(node);
}

export async function runCleanup(
  o: { deployment: string; dryRun: boolean; groups: readonly string[] },
  deps: CleanupDeps,
): Promise<CleanupResult> {
  const found = (await deps.nodes.listMarked(o.deployment)).map((n) => ({ node: n.name, marks: marksOnNode(n) }));
  const groups: string[] = [];
  const groupsLeft: string[] = [];
  for (const group of (await deps.groups?.tagged()) ?? []) {
    const ours = o.groups.includes(group) || (await deps.groups!.deploymentsOf(group)).includes(o.deployment);
    (ours ? groups : groupsLeft).push(group);
  }
  if (!o.dryRun) {
    await cleanNodes(o.deployment, deps);
    for (const group of groups) await deps.groups!.untag(group);
  }
  return { deployment: o.deployment, dryRun: o.dryRun, nodes: found, groups, groupsLeft };
}

export function renderCleanup(r: CleanupResult): string {
  const verb = r.dryRun ? 'would take back' : 'took back';
  const lines = r.nodes.flatMap((n) => [`node ${n.node}:`, ...n.marks.map((m) => `  ${m}`)]);
  for (const g of r.groups) lines.push(`group ${g}: tag ${refreshStrategyTag}: removed`);
  for (const g of r.groupsLeft)
    lines.push(
      `group ${g}: tag ${refreshStrategyTag} left alone (its hooks do not name ${r.deployment}; pass --group ${g} to include it)`,
    );
  const marks = r.nodes.reduce((n, x) => n + x.marks.length, 0);
  lines.push(
    `${r.dryRun ? 'dry run: ' : ''}${verb} ${marks} mark(s) on ${r.nodes.length} node(s) and ${r.groups.length} group tag(s) of deployment ${r.deployment}${r.dryRun ? '; nothing was changed' : ''}`,
  );
  return lines.join('\n');
}

/** The group tags over Auto Scaling: DescribeTags by key, the hooks, DeleteTags. */
export function autoScalingGroupTags(autoScaling: AutoScalingClient): GroupTags {
  return {
    async tagged() {
      const groups: string[] = [];
      let NextToken: string | undefined;
      do {
        const page = await autoScaling.send(
          new DescribeTagsCommand({ Filters: [{ Name: 'key', Values: [refreshStrategyTag] }], NextToken }),
        );
        groups.push(...(page.Tags ?? []).flatMap((t) => (t.ResourceId ? [t.ResourceId] : [])));
        NextToken = page.NextToken;
      } while (NextToken);
      return groups;
    },
    deploymentsOf: async (group) =>
      deploymentsOfHooks(
        (await autoScaling.send(new DescribeLifecycleHooksCommand({ AutoScalingGroupName: group }))).LifecycleHooks ??
          [],
      ),
    untag: async (group) => {
      await autoScaling.send(
        new DeleteTagsCommand({
          Tags: [{ ResourceId: group, ResourceType: 'auto-scaling-group', Key: refreshStrategyTag }],
        }),
      );
    },
  };
}

/** The group tags with each call's failure said as atAws says it, by its Auto Scaling action. */
export function guardedGroupTags(tags: GroupTags, where: Where): GroupTags {
  return {
    tagged: () => atAws(where, 'Auto Scaling DescribeTags', () => tags.tagged()),
    deploymentsOf: (group) =>
      atAws({ ...where, group }, 'Auto Scaling DescribeLifecycleHooks', () => tags.deploymentsOf(group)),
    untag: (group) => atAws({ ...where, group }, 'Auto Scaling DeleteTags', () => tags.untag(group)),
  };
}

const cleanupOptions = {
  deployment: { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
  group: { type: 'string', multiple: true },
  'nodes-only': { type: 'boolean', default: false },
} as const;

/** The command: `graceful-node-termination cleanup`, `npm run cleanup`. */
export async function main(args: readonly string[] = process.argv.slice(2)): Promise<number> {
  const { values } = parseCommand('cleanup', args, cleanupOptions, []);
  if (values.help) {
    console.log(cleanupUsage);
    return exitCodes.ok;
  }
  const format = outputFormat(values);
  const deployment = values.deployment;
  if (!deployment)
    throw new UsageError('name the deployment with --deployment (the stack output DeploymentName; see cleanup --help)');
  const kube = loadKubeAccess(values);
  const aws = values['nodes-only'] ? undefined : await resolveAwsAccess(values);
  const where = { server: kube.server, context: kube.context, region: aws?.region, profile: aws?.profile };
  const kubeHttp = createKubeHttp(endpointFromKubeConfig(kube.kc), {
    userAgent: 'graceful-node-termination-cli',
    timeoutMs: 15_000,
  });
  // Each call is said by its own service: a failure of Auto Scaling names Auto Scaling, the
  // region and the profile, one of the API server names the server and the context.
  const result = await runCleanup(
    { deployment, dryRun: values['dry-run'], groups: values.group ?? [] },
    {
      nodes: guardKubernetes(kubeconfigGateway(kube.kc), where, 'read and patch nodes'),
      removeLeftovers: (node) => atKubernetes(where, 'patch nodes', () => removeLeftovers(kubeHttp, node)),
      groups: aws ? guardedGroupTags(autoScalingGroupTags(aws.autoScaling), where) : undefined,
    },
  );
  console.log(formatOutput(format, result, () => renderCleanup(result)));
  return exitCodes.ok;
}

/** A merge patch conditional on the node as read: the owner label, a stray claim or record. */
export async function removeLeftovers(kube: KubeHttp, node: NodeInfo): Promise<PatchResult> {
  const body = {
    metadata: {
      resourceVersion: node.resourceVersion,
      labels: { [ownerLabel]: null },
      annotations: { [handOffAnnotation]: null, [drainAnnotation]: null, [deferralAnnotation]: null },
    },
  };
  try {
    await kube.request('PATCH', `/api/v1/nodes/${encodeURIComponent(node.name)}`, {
      body,
      contentType: 'application/merge-patch+json',
    });
    return 'patched';
  } catch (error) {
    if (statusOf(error) === 404) return 'node-gone';
    if (statusOf(error) === 409) return 'changed';
    throw error;
  }
}

runAsCommand(import.meta.url, 'cleanup', main);
