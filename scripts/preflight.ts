// The drainability preflight (issue 14, `npm run check`): before a group's nodes are replaced,
// which pods cannot leave now and why. A pure analysis over what the cluster says (pods,
// PodDisruptionBudgets, which nodes go), so it is tested without a cluster; check.ts reads the
// cluster and prints the result. The pod rules are the drainer's own (lambda/pods.ts).
// Operators ask for exactly this: https://github.com/kubernetes-sigs/karpenter/issues/1599
import type { V1LabelSelector, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { toPodInfo } from '../lambda/adapters/kubernetes/object-codecs.js';
import { isBatchPod, isDaemonSetPod, isFinished, isMirrorPod, toleratesUnschedulable } from '../lambda/cluster/pods.js';

export type Severity =
  /** The drain cannot finish without a change: the upgrade refuses without --force. */
  | 'blocker'
  /** The drain will wait, or the pod will not come back as it was. */
  | 'warning'
  /** Worth knowing (batch work waited for). */
  | 'info';

export type FindingKind =
  'budget-allows-none' | 'budget-pinned-by-unhealthy-pods' | 'multiple-budgets' | 'tolerates-cordon' | 'waits-for-completion' | 'no-controller' | 'budget-deadlock-terminate-first';

export interface Finding {
  readonly node: string;
  readonly pod: string;
  readonly kind: FindingKind;
  readonly severity: Severity;
  readonly why: string;
  readonly budget?: string | undefined;
  /** What would unblock it. */
  readonly fix?: string | undefined;
}

export interface PreflightInput {
  /** The nodes to be replaced (the group's outdated nodes). */
  readonly nodes: readonly string[];
  /** Every pod of the namespaces concerned (not only those on the nodes: budgets count healthy pods anywhere). */
  readonly pods: readonly V1Pod[];
  readonly budgets: readonly V1PodDisruptionBudget[];
  /**
   * The upgrade terminates before it launches and cordons every outdated node first (strategy
   * minimal): an evicted pod's replacement has nowhere to run until this node is gone.
   */
  readonly terminateFirst?: boolean;
}

/** A label selector as budgets use it (matchLabels and matchExpressions). */
export function selects(selector: V1LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  // policy/v1: a null selector selects nothing, an empty one every pod of the namespace.
  // https://kubernetes.io/docs/tasks/run-application/configure-pdb/#arbitrary-controllers-and-selectors
  if (selector === undefined || selector === null) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const value = labels[e.key];
    const values = e.values ?? [];
    if (e.operator === 'In' && (value === undefined || !values.includes(value))) return false;
    if (e.operator === 'NotIn' && value !== undefined && values.includes(value)) return false;
    if (e.operator === 'Exists' && value === undefined) return false;
    if (e.operator === 'DoesNotExist' && value !== undefined) return false;
  }
  return true;
}

const isReady = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const key = (o: { metadata?: { namespace?: string; name?: string } }) => `${o.metadata?.namespace}/${o.metadata?.name}`;

export function analyseDrainability(input: PreflightInput): Finding[] {
  const leaving = new Set(input.nodes);
  const findings: Finding[] = [];
  const budgetsOf = (pod: V1Pod) => input.budgets.filter((b) => b.metadata?.namespace === pod.metadata?.namespace && selects(b.spec?.selector, pod.metadata?.labels ?? {}));

  for (const pod of input.pods) {
    const node = pod.spec?.nodeName;
    if (node === undefined || !leaving.has(node) || pod.metadata?.deletionTimestamp) continue;
    const info = toPodInfo(pod);
    if (isDaemonSetPod(info) || isMirrorPod(info) || isFinished(info)) continue;
    const add = (f: Omit<Finding, 'node' | 'pod'>) => findings.push({ node, pod: key(pod), ...f });

    if (isBatchPod(info)) {
      add({
        kind: 'waits-for-completion',
        severity: 'info',
        why: `${info.controllerKind === 'Job' ? 'a Job pod' : 'annotated to finish first'}: the drain waits for it to finish (BATCH_WAIT_SECONDS) before evicting it`,
      });
    }
    if (info.controllerKind === undefined) {
      add({
        kind: 'no-controller',
        severity: 'warning',
        why: 'no controller owns it: evicted, it is gone for good (nothing recreates it)',
        fix: 'run it under a Deployment, StatefulSet or Job',
      });
    }
    if (toleratesUnschedulable(info)) {
      add({
        kind: 'tolerates-cordon',
        severity: 'warning',
        why: 'it tolerates node.kubernetes.io/unschedulable: its replacement can land on a cordoned old node again',
        fix: 'narrow the toleration (operator: Exists without a key tolerates every taint)',
      });
    }

    const budgets = budgetsOf(pod);
    if (budgets.length > 1) {
      add({
        kind: 'multiple-budgets',
        severity: 'blocker',
        why: `selected by ${budgets.length} PodDisruptionBudgets (${budgets.map((b) => b.metadata?.name).join(', ')}): the eviction API refuses every such pod`,
        fix: "make the budgets' selectors disjoint",
      });
      continue;
    }
    const budget = budgets[0];
    if (budget === undefined || (budget.status?.disruptionsAllowed ?? 0) > 0) continue;
    const selected = input.pods.filter((p) => !p.metadata?.deletionTimestamp && budgetsOf(p).includes(budget));
    const unhealthy = selected.filter((p) => !isReady(p));
    const healthyElsewhere = selected.filter((p) => isReady(p) && !leaving.has(p.spec?.nodeName ?? ''));
    const name = budget.metadata?.name;
    const status = `${budget.status?.currentHealthy ?? 0} healthy, ${budget.status?.desiredHealthy ?? 0} required`;
    if (unhealthy.length > 0 && budget.spec?.unhealthyPodEvictionPolicy !== 'AlwaysAllow') {
      add({
        kind: 'budget-pinned-by-unhealthy-pods',
        severity: 'blocker',
        budget: name,
        why: `budget ${name} allows no disruption (${status}) and ${unhealthy.length} of its pods are not Ready (${unhealthy.map(key).join(', ')}): they count against it and cannot be evicted either`,
        fix: `set unhealthyPodEvictionPolicy: AlwaysAllow on ${name}, or fix the unready pods`,
      });
    } else if (healthyElsewhere.length === 0) {
      add({
        kind: 'budget-allows-none',
        severity: 'blocker',
        budget: name,
        why: `budget ${name} allows no disruption (${status}) and every healthy pod it counts is on a node to be replaced: nothing will free one`,
        fix: `add a replica (or lower ${budget.spec?.minAvailable !== undefined ? 'minAvailable' : 'maxUnavailable'}) on ${name} before the upgrade`,
      });
    } else {
      add({
        kind: 'budget-allows-none',
        severity: 'warning',
        budget: name,
        why: `budget ${name} allows no disruption right now (${status}): the drain waits until a pod elsewhere is healthy again`,
      });
    }
  }
  if (input.terminateFirst) findings.push(...terminateFirstDeadlocks(input, leaving, budgetsOf));
  return findings;
}

/**
 * With every outdated node cordoned and new nodes launched only after old ones are gone, a
 * node that runs more pods of a budget than it allows at a time cannot drain: the first
 * evictions' replacements stay Pending, so the budget never frees the rest, until the drain
 * deadline. Managed groups' MINIMAL has the same trap (PodEvictionFailure after 15 minutes).
 */
function terminateFirstDeadlocks(input: PreflightInput, leaving: ReadonlySet<string>, budgetsOf: (pod: V1Pod) => V1PodDisruptionBudget[]): Finding[] {
  const count = new Map<string, { node: string; budget: V1PodDisruptionBudget; pods: V1Pod[] }>();
  for (const pod of input.pods) {
    const node = pod.spec?.nodeName;
    if (node === undefined || !leaving.has(node) || pod.metadata?.deletionTimestamp) continue;
    const budgets = budgetsOf(pod);
    if (budgets.length !== 1) continue;
    const k = `${node}/${budgets[0]!.metadata?.name}`;
    const entry = count.get(k) ?? { node, budget: budgets[0]!, pods: [] };
    entry.pods.push(pod);
    count.set(k, entry);
  }
  return [...count.values()]
    .filter((e) => e.pods.length > (e.budget.status?.disruptionsAllowed ?? 0))
    .map((e) => ({
      node: e.node,
      pod: e.pods.map(key).join(', '),
      kind: 'budget-deadlock-terminate-first' as const,
      severity: 'blocker' as const,
      budget: e.budget.metadata?.name,
      why: `with --strategy minimal every outdated node is cordoned and new ones come only after this one is gone, but it runs ${e.pods.length} pods of budget ${e.budget.metadata?.name}, which allows ${e.budget.status?.disruptionsAllowed ?? 0} at a time: the rest wait for replacements that cannot run`,
      fix: 'use --strategy default (launch before terminate), or spread those pods one per node',
    }));
}

/** True when the upgrade must not start without --force. */
export const hasBlocker = (findings: readonly Finding[]) => findings.some((f) => f.severity === 'blocker');

/** A table a person reads at a glance: one line per finding, blockers first. */
export function renderFindings(nodes: readonly string[], findings: readonly Finding[]): string {
  if (findings.length === 0) return `${nodes.length} node(s) checked: every pod can leave now.`;
  const order: Record<Severity, number> = { blocker: 0, warning: 1, info: 2 };
  const rows = [...findings].sort((a, b) => order[a.severity] - order[b.severity] || a.node.localeCompare(b.node) || a.pod.localeCompare(b.pod));
  const header = ['SEVERITY', 'NODE', 'POD', 'WHY'];
  const cells = rows.map((f) => [f.severity.toUpperCase(), f.node, f.pod, f.why + (f.fix ? `; fix: ${f.fix}` : '')]);
  const widths = header.slice(0, 3).map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => (i < 3 ? v.padEnd(widths[i]!) : v)).join('  ');
  const blockers = findings.filter((f) => f.severity === 'blocker').length;
  return [line(header), ...cells.map(line), '', `${nodes.length} node(s) checked: ${blockers} blocker(s), ${findings.length - blockers} other finding(s).`].join('\n');
}
