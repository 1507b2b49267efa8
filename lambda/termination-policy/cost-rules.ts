// What one node's departure costs, by named rules: the blockers (a node with one is never
// chosen while the deferral lasts) and the weights the rest are ranked by. The pod rules are
// the drainer's own (cluster/rules/drain-rules.ts): what it waits for, what it evicts, what it leaves.
// Karpenter ranks its disruption candidates the same way (pod-deletion-cost, priority):
// https://github.com/kubernetes-sigs/karpenter/blob/main/pkg/utils/disruption/disruption.go
import type { CostPod } from '../cluster/ports/choice-gateway.js';
import type { PodInfo } from '../cluster/model.js';
import { defaultDrainRuleSettings, podRule, type PodRule } from '../cluster/rules/drain-rules.js';
import { isWaitedFor, mustLeave } from '../cluster/rules/drain-plan.js';
import { isDrainable, isTerminating, podKey } from '../cluster/rules/pods.js';

/** Each pod's drain rule, as the deployment's drains would apply it. */
export type RuleOf = (pod: PodInfo) => PodRule;
const byDefaultRules: RuleOf = (pod) => podRule(pod, defaultDrainRuleSettings, Date.now());

export type BlockerRule = 'runs-batch-work' | 'budget-leaves-none' | 'only-ready-replica';

export interface Blocker {
  readonly rule: BlockerRule;
  readonly pod: string;
  readonly why: string;
}

export interface NodeCost {
  readonly blockers: readonly Blocker[];
  /** Cost points: 1 per pod evicted plus the weights below. */
  readonly points: number;
  /** What the points are made of, for the Event. */
  readonly reasons: readonly string[];
  /** Pods the drain would evict. */
  readonly evicted: number;
  /** No node of the cluster was found for the instance: nothing known to drain, ranked after known cheap nodes. */
  readonly unknown?: boolean;
}

/** The pods the drain would evict or wait for (not DaemonSet, mirror, finished, skipped or already leaving pods). */
export const departing = (pods: readonly CostPod[], ruleOf: RuleOf = byDefaultRules): CostPod[] =>
  pods.filter((p) => isDrainable(p.info) && !isTerminating(p.info) && mustLeave(ruleOf(p.info)));

/** A pod the drain waits for (WaitCompleted: a Job's, a do-not-disrupt pod, one a drain rule says so of). */
export function runsBatchWork(pod: CostPod, ruleOf: RuleOf = byDefaultRules): Blocker | undefined {
  if (!isWaitedFor(ruleOf(pod.info))) return undefined;
  return {
    rule: 'runs-batch-work',
    pod: podKey(pod.info),
    why:
      `${podKey(pod.info)} ` +
      `${pod.info.controllerKind === 'Job' ? 'is a running Job pod' : 'asks not to be disrupted'}: its drain would ` +
      `wait for it`,
  };
}

/** A budget that allows no disruption now, with every healthy pod it counts on this node: nothing will free it. */
export function budgetLeavesNone(pod: CostPod, onNode: readonly CostPod[]): Blocker | undefined {
  for (const b of pod.budgets) {
    if (b.disruptionsAllowed > 0) continue;
    const here = onNode.filter((p) => p.ready && p.budgets.some((o) => o.name === b.name)).length;
    if (b.currentHealthy - here <= 0) {
      return {
        rule: 'budget-leaves-none',
        pod: podKey(pod.info),
        why: `budget ${b.name} allows no disruption and every healthy pod it counts is on this node`,
      };
    }
  }
  return undefined;
}

/** The node holds every ready replica of the pod's workload: its service would stop. */
export function holdsOnlyReadyReplica(pod: CostPod, onNode: readonly CostPod[]): Blocker | undefined {
  const o = pod.owner;
  if (o === undefined || o.readyReplicas === undefined || !pod.ready) return undefined;
  const here = onNode.filter((p) => p.ready && p.owner?.kind === o.kind && p.owner.name === o.name).length;
  if (here < o.readyReplicas) return undefined;
  return {
    rule: 'only-ready-replica',
    pod: podKey(pod.info),
    why:
      `${o.kind} ${pod.info.namespace}/${o.name} has no ready replica elsewhere (${o.readyReplicas} ready, all ` +
      `here)`,
  };
}

/** A budget allows no disruption now but healthy pods elsewhere will free it: the drain will wait. */
export function budgetAllowsNoneNow(pod: CostPod): boolean {
  return pod.budgets.some((b) => b.disruptionsAllowed <= 0);
}

/** Node-group labels a pod can be pinned by (EKS, eksctl, Karpenter). */
const groupLabelKeys: ReadonlySet<string> = new Set([
  'eks.amazonaws.com/nodegroup',
  'alpha.eksctl.io/nodegroup-name',
  'karpenter.sh/nodepool',
]);

/**
 * Pinned to the shrinking group: its required placement names this group's label (or the
 * group's name), so its replacement can only land on this group's other nodes, which this
 * scale-in is removing too: it may move twice.
 */
export function pinnedToGroup(pod: CostPod, group: string, nodeLabels: Readonly<Record<string, string>>): boolean {
  return Object.entries(pod.requiredNodeLabels).some(
    ([key, values]) =>
      nodeLabels[key] !== undefined &&
      values.includes(nodeLabels[key]!) &&
      (groupLabelKeys.has(key) || values.includes(group)),
  );
}

/**
 * The weights: deletion cost 0..10, priority 0..10, local storage 2, a budget that makes the drain wait 5, pinned 1.
 */
export function podPoints(pod: CostPod, pinned: boolean): { readonly points: number; readonly reasons: string[] } {
  const reasons: string[] = [];
  let points = 1;
  const deletion = Math.max(-50, Math.min(1000, pod.deletionCost)) / 100;
  if (deletion !== 0) reasons.push(`pod-deletion-cost ${pod.deletionCost}`);
  const priority = Math.max(0, Math.min(2_000_000_000, pod.priority)) / 200_000_000;
  if (priority > 0) reasons.push(`priority ${pod.priority}`);
  points += deletion + priority;
  const weights: readonly [boolean, number, string][] = [
    [pod.localStorage, 2, 'local storage'],
    [budgetAllowsNoneNow(pod), 5, 'a budget that allows no disruption now'],
    [pinned, 1, 'pinned to this group'],
  ];
  for (const [applies, weight, reason] of weights) {
    if (!applies) continue;
    points += weight;
    reasons.push(reason);
  }
  return { points, reasons };
}

/** Every rule over one node's pods. */
export function nodeCost(
  pods: readonly CostPod[],
  group: string,
  nodeLabels: Readonly<Record<string, string>>,
  ruleOf: RuleOf = byDefaultRules,
): NodeCost {
  const leaving = departing(pods, ruleOf);
  const blockers: Blocker[] = [];
  let points = 0;
  const reasons = new Map<string, number>();
  for (const pod of leaving) {
    const found = runsBatchWork(pod, ruleOf) ?? budgetLeavesNone(pod, leaving) ?? holdsOnlyReadyReplica(pod, leaving);
    // One blocker per workload or budget: its second pod says nothing new.
    if (found !== undefined && !blockers.some((b) => b.rule !== 'runs-batch-work' && b.why === found.why))
      blockers.push(found);
    const p = podPoints(pod, pinnedToGroup(pod, group, nodeLabels));
    points += p.points;
    for (const r of p.reasons) reasons.set(r, (reasons.get(r) ?? 0) + 1);
  }
  const told = [
    `${leaving.length} pod${leaving.length === 1 ? '' : 's'} to evict`,
    ...[...reasons].map(([r, n]) => `${n} with ${r}`),
  ];
  return { blockers, points: Math.round(points * 100) / 100, reasons: told, evicted: leaving.length };
}
