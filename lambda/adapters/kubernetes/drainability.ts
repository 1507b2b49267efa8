// The drainability analysis (issue 14; `check`, `upgrade`, observe mode): before nodes go,
// which pods cannot leave now and why. A pure analysis over what the cluster says (pods,
// PodDisruptionBudgets, which nodes go), tested without a cluster, and the reads it needs: the
// nodes' pods, then the pods and budgets of their namespaces (budgets count healthy pods
// anywhere). Operators ask for exactly this: https://github.com/kubernetes-sigs/karpenter/issues/1599
import type { V1LabelSelector, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import type { PodInfo } from '../../cluster/model.js';
import type { DrainabilityGateway, Finding } from '../../cluster/ports/drainability-gateway.js';
import { matchesSelector } from '../../shared/label-selector.js';
import {
  defaultDrainRuleSettings,
  podRule,
  type DrainRuleSettings,
  type PodRule,
} from '../../cluster/rules/drain-rules.js';
import { type DrainBehavior } from '../../shared/drain-rule-variables.js';
import { isEvicted, isWaitedFor, mustLeave, planRank, waitsUntilDeadline } from '../../cluster/rules/drain-plan.js';
import { toleratesUnschedulable } from '../../cluster/rules/pods.js';
import { mapWithConcurrency } from '../../shared/concurrency.js';
import { classify } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { toPodInfo, type WireList } from './object-codecs.js';

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
  /** The deployment's drain rules (DRAIN_RULES, EVICT_DAEMONSET_PODS); the defaults when not given. */
  readonly rules?: DrainRuleSettings | undefined;
}

/** One pod's drain rule, as `check` shows it. */
export interface PodRuleRow {
  readonly node: string;
  readonly pod: string;
  readonly behavior: DrainBehavior;
  readonly order: number | undefined;
  readonly source: string;
}

/** The rule of every pod on the nodes, in the order the drain takes them (Skip last). */
export function podRules(input: PreflightInput, nowMs = Date.now()): PodRuleRow[] {
  const leaving = new Set(input.nodes);
  return input.pods
    .filter((p) => leaving.has(p.spec?.nodeName ?? '') && !p.metadata?.deletionTimestamp)
    .map((p) => ({
      node: p.spec?.nodeName ?? '',
      pod: key(p),
      rule: podRule(toPodInfo(p), input.rules ?? defaultDrainRuleSettings, nowMs),
    }))
    .filter(({ rule }) => rule.source !== 'finished')
    .sort(
      (a, b) =>
        a.node.localeCompare(b.node) ||
        planRank(a.rule) - planRank(b.rule) ||
        orderOf(a.rule) - orderOf(b.rule) ||
        a.pod.localeCompare(b.pod),
    )
    .map(({ node, pod, rule }) => ({
      node,
      pod,
      behavior: rule.behavior,
      order: 'order' in rule ? rule.order : undefined,
      source: rule.source,
    }));
}

/** A label selector as budgets use it (matchLabels and matchExpressions). */
export function selects(selector: V1LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  // policy/v1: a null selector selects nothing, an empty one every pod of the namespace.
  // https://kubernetes.io/docs/tasks/run-application/configure-pdb/#arbitrary-controllers-and-selectors
  return selector !== undefined && selector !== null && matchesSelector(selector, labels);
}

export const isReady = (pod: V1Pod) =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const key = (o: { metadata?: { namespace?: string; name?: string } }) => `${o.metadata?.namespace}/${o.metadata?.name}`;

export function analyseDrainability(input: PreflightInput): Finding[] {
  const leaving = new Set(input.nodes);
  const findings: Finding[] = [];
  const budgetsOf = (pod: V1Pod) =>
    input.budgets.filter(
      (b) => b.metadata?.namespace === pod.metadata?.namespace && selects(b.spec?.selector, pod.metadata?.labels ?? {}),
    );
  for (const pod of input.pods) {
    const node = pod.spec?.nodeName;
    if (node === undefined || !leaving.has(node) || pod.metadata?.deletionTimestamp) continue;
    const info = toPodInfo(pod);
    const rule = podRule(info, input.rules ?? defaultDrainRuleSettings, Date.now());
    if (!mustLeave(rule)) continue;
    const add = (f: Omit<Finding, 'node' | 'pod'>) => findings.push({ node, pod: key(pod), ...f });
    podFindings(info, rule, add);
    // Cluster API's WaitCompleted pods are never evicted: their budgets hold nothing up.
    if (isEvicted(rule)) budgetFindings(pod, input, leaving, budgetsOf, add);
  }
  if (input.terminateFirst) findings.push(...terminateFirstDeadlocks(input, leaving, budgetsOf));
  return findings;
}

type Add = (f: Omit<Finding, 'node' | 'pod'>) => void;

/** What the pod itself says: batch work waited for, no controller, a toleration of the cordon. */
function podFindings(info: PodInfo, rule: PodRule, add: Add): void {
  if (isWaitedFor(rule)) {
    add({
      kind: 'waits-for-completion',
      severity: 'info',
      why: waitsUntilDeadline(rule)
        ? `${rule.source}: never evicted; the drain waits for it to finish until its deadline`
        : `${rule.source}: the drain waits for it to finish (BATCH_WAIT_SECONDS${atMostUntil(rule.untilMs)}) ` +
          'before evicting it',
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
  // A DaemonSet pod (EVICT_DAEMONSET_PODS) tolerates the cordon by its controller's design; the one put back is not
  // chased.
  if (toleratesUnschedulable(info) && info.controllerKind !== 'DaemonSet') {
    add({
      kind: 'tolerates-cordon',
      severity: 'warning',
      why: 'it tolerates node.kubernetes.io/unschedulable: its replacement can land on a cordoned old node again',
      fix: 'narrow the toleration (operator: Exists without a key tolerates every taint)',
    });
  }
}

/** What its budgets say: two budgets, or one that allows no disruption now, and whether anything will free it. */
function budgetFindings(
  pod: V1Pod,
  input: PreflightInput,
  leaving: ReadonlySet<string>,
  budgetsOf: (pod: V1Pod) => V1PodDisruptionBudget[],
  add: Add,
): void {
  const budgets = budgetsOf(pod);
  if (budgets.length > 1) {
    add({
      kind: 'multiple-budgets',
      severity: 'blocker',
      why:
        `selected by ${budgets.length} PodDisruptionBudgets (${budgets.map((b) => b.metadata?.name).join(', ')}): ` +
        `the eviction API refuses every such pod`,
      fix: "make the budgets' selectors disjoint",
    });
    return;
  }
  const budget = budgets[0];
  if (budget === undefined || (budget.status?.disruptionsAllowed ?? 0) > 0) return;
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
      why:
        `budget ${name} allows no disruption (${status}) and ${unhealthy.length} of its pods are not Ready ` +
        `(${unhealthy.map(key).join(', ')}): they count against it and cannot be evicted either`,
      fix: `set unhealthyPodEvictionPolicy: AlwaysAllow on ${name}, or fix the unready pods`,
    });
  } else if (healthyElsewhere.length === 0) {
    add({
      kind: 'budget-allows-none',
      severity: 'blocker',
      budget: name,
      why:
        `budget ${name} allows no disruption (${status}) and every healthy pod it counts is on a node to be ` +
        `replaced: nothing will free one`,
      fix:
        `add a replica (or lower ${budget.spec?.minAvailable !== undefined ? 'minAvailable' : 'maxUnavailable'}) on ` +
        `${name} before the upgrade`,
    });
  } else {
    add({
      kind: 'budget-allows-none',
      severity: 'warning',
      budget: name,
      why:
        `budget ${name} allows no disruption right now (${status}): the drain waits until a pod elsewhere is ` +
        `healthy again`,
    });
  }
}

/**
 * With every outdated node cordoned and new nodes launched only after old ones are gone, a
 * node that runs more pods of a budget than it allows at a time cannot drain: the first
 * evictions' replacements stay Pending, so the budget never frees the rest, until the drain
 * deadline. Managed groups' MINIMAL has the same trap (PodEvictionFailure after 15 minutes).
 */
function terminateFirstDeadlocks(
  input: PreflightInput,
  leaving: ReadonlySet<string>,
  budgetsOf: (pod: V1Pod) => V1PodDisruptionBudget[],
): Finding[] {
  const count = new Map<string, { node: string; budget: V1PodDisruptionBudget; pods: V1Pod[] }>();
  for (const pod of input.pods) {
    const node = pod.spec?.nodeName;
    if (node === undefined || !leaving.has(node) || pod.metadata?.deletionTimestamp) continue;
    // Only pods the drain evicts count: not those its rules leave (Skip) or never evict (WaitCompleted until the
    // deadline).
    const rule = podRule(toPodInfo(pod), input.rules ?? defaultDrainRuleSettings, Date.now());
    if (!isEvicted(rule)) continue;
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
      why:
        `with --strategy minimal every outdated node is cordoned and new ones come only after this one is gone, but ` +
        `it runs ${e.pods.length} pods of budget ${e.budget.metadata?.name}, which allows ` +
        `${e.budget.status?.disruptionsAllowed ?? 0} at a time: the rest wait for replacements that cannot run`,
      fix: 'use --strategy default (launch before terminate), or spread those pods one per node',
    }));
}

/** Reads a few nodes' pods and their namespaces' pods and budgets (8 requests in flight at most), then analyses. */
export function createDrainabilityApi(kube: KubeHttp): DrainabilityGateway {
  const list = async <T>(path: string, what: string, query?: Record<string, string>): Promise<readonly T[]> => {
    try {
      return (await kube.request<WireList<T>>('GET', path, { query, compressed: true })).items;
    } catch (error) {
      throw classify(error, what);
    }
  };
  return {
    async drainability(nodes) {
      const onNodes = (
        await mapWithConcurrency(nodes, 8, (n) =>
          list<V1Pod>('/api/v1/pods', `list pods on ${n}`, { fieldSelector: `spec.nodeName=${n}` }),
        )
      ).flat();
      const namespaces = [...new Set(onNodes.map((p) => p.metadata?.namespace ?? ''))];
      const read = await mapWithConcurrency(namespaces, 8, async (ns) => ({
        pods: await list<V1Pod>(`/api/v1/namespaces/${encodeURIComponent(ns)}/pods`, `list pods in ${ns}`),
        budgets: await list<V1PodDisruptionBudget>(
          `/apis/policy/v1/namespaces/${encodeURIComponent(ns)}/poddisruptionbudgets`,
          `list poddisruptionbudgets in ${ns}`,
        ),
      }));
      return analyseDrainability({ nodes, pods: read.flatMap((r) => r.pods), budgets: read.flatMap((r) => r.budgets) });
    },
  };
}

const atMostUntil = (ms: number | undefined) =>
  ms !== undefined ? `, at most until ${new Date(ms).toISOString()}` : '';

/** A Drain rule's order, for sorting rows within a behaviour (0 for the others). */
const orderOf = (rule: PodRule): number => ('order' in rule ? rule.order : 0);
