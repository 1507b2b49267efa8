// The drain rules' variables (cluster/rules/drain-rules.ts): defined here, spread into the one list
// (config-variables.ts), so the construct, the handler and the docs' table share them.

import { selectorProblems, type LabelSelector } from './label-selector.js';
import { variable, flag } from './variable.js';

export const drainRuleVariables = {
  drainRules: variable<readonly DrainRuleSpec[]>({
    name: 'DRAIN_RULES',
    description:
      "What the drain does with the pods a rule selects, as Cluster API's MachineDrainRule: `Drain` (in `order`: " +
      'lower orders leave first, the next once they are gone), `Skip` (left running; the node goes without them) ' +
      'or `WaitCompleted` (never evicted; waited for until the drain deadline). The first rule that selects a pod ' +
      "applies; a pod's own `cluster.x-k8s.io/drain` label or `graceful-node-termination/drain` mark wins over " +
      'every rule. namespaceSelector may only use kubernetes.io/metadata.name.',
    accepts: 'a JSON list of {"name", "behavior", "order"?, "pods"?: [{"selector"?, "namespaceSelector"?}]}',
    default: [],
    parse: parseDrainRules,
    format: (rules) => JSON.stringify(rules),
  }),
  evictDaemonSetPods: variable<boolean>({
    name: 'EVICT_DAEMONSET_PODS',
    description:
      'Evict DaemonSet pods too, after every other pod has left (critical ones last, as Karpenter orders them), ' +
      'so node agents keep working until the end and still shut down gracefully. Off: left running, as `kubectl ' +
      'drain --ignore-daemonsets` does.',
    accepts: 'true or false',
    default: false,
    parse: flag,
    format: String,
  }),
} as const;

export interface DrainRuleConfig {
  /** Deployment-wide drain rules (DRAIN_RULES); a pod's own label or mark wins. */
  readonly drainRules: readonly DrainRuleSpec[];
  /** DaemonSet pods are evicted too, last. */
  readonly evictDaemonSetPods: boolean;
}

export interface DrainRuleConfigInput {
  readonly drainRules?: readonly DrainRuleSpec[];
  readonly evictDaemonSetPods?: boolean;
}

/** The rules, or undefined when anything in them is wrong (parseConfig names the variable). */
export function parseDrainRules(raw: string): readonly DrainRuleSpec[] | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  return drainRuleProblems(value).length === 0 ? (value as DrainRuleSpec[]) : undefined;
}

/** Everything wrong with a list of rules, each said where it is. */
export function drainRuleProblems(value: unknown): string[] {
  if (!Array.isArray(value)) return ['DRAIN_RULES must be a JSON list'];
  const names = new Set<string>();
  return value.flatMap((rule: unknown, i) => {
    const at = `rule ${i}`;
    if (typeof rule !== 'object' || rule === null) return [`${at} must be an object`];
    const r = rule as Record<string, unknown>;
    const problems: string[] = [];
    if (typeof r['name'] !== 'string' || r['name'] === '' || names.has(r['name']))
      problems.push(`${at} needs a unique non-empty name`);
    else names.add(r['name']);
    if (!drainBehaviors.includes(r['behavior'] as never))
      problems.push(`${at}.behavior must be one of ${drainBehaviors.join(', ')}`);
    // As Cluster API's webhook: order only with Drain.
    if (
      r['order'] !== undefined &&
      (r['behavior'] !== 'Drain' ||
        !Number.isInteger(r['order']) ||
        (r['order'] as number) < -2_147_483_648 ||
        (r['order'] as number) > 2_147_483_647)
    ) {
      problems.push(`${at}.order must be an int32, and only with behavior Drain`);
    }
    for (const key of Object.keys(r))
      if (!['name', 'behavior', 'order', 'pods'].includes(key)) problems.push(`${at}.${key} is not a rule field`);
    return [...problems, ...podSelectorProblems(r['pods'], at)];
  });
}

function podSelectorProblems(pods: unknown, at: string): string[] {
  if (pods === undefined) return [];
  // As Cluster API's schema (MinItems=1, MinProperties=1): an empty list or entry would select every pod.
  if (!Array.isArray(pods) || pods.length === 0)
    return [`${at}.pods must be a non-empty list (leave it out for every pod)`];
  return pods.flatMap((p: unknown, j) => {
    const where = `${at}.pods[${j}]`;
    if (typeof p !== 'object' || p === null || Object.keys(p).length === 0)
      return [`${where} must be an object with a selector and/or a namespaceSelector`];
    const entry = p as Record<string, unknown>;
    const problems = Object.keys(entry)
      .filter((k) => k !== 'selector' && k !== 'namespaceSelector')
      .map((k) => `${where}.${k} is not a pod selector field`);
    if (entry['selector'] !== undefined) problems.push(...selectorProblems(entry['selector'], `${where}.selector`));
    const ns = entry['namespaceSelector'];
    if (ns !== undefined) {
      problems.push(...selectorProblems(ns, `${where}.namespaceSelector`));
      const s = ns as { matchLabels?: object; matchExpressions?: { key?: unknown }[] };
      const keys = [
        ...Object.keys(s.matchLabels ?? {}),
        ...(Array.isArray(s.matchExpressions) ? s.matchExpressions.map((e) => e?.key) : []),
      ];
      if (keys.some((k) => k !== namespaceNameLabel))
        problems.push(
          `${where}.namespaceSelector may only use ${namespaceNameLabel} (the drainer reads no Namespaces)`,
        );
    }
    return problems;
  });
}

export type DrainBehavior = 'Drain' | 'Skip' | 'WaitCompleted';

export const drainBehaviors: readonly DrainBehavior[] = ['Drain', 'Skip', 'WaitCompleted'];

/** One deployment-wide rule (DRAIN_RULES), as Cluster API's MachineDrainRule spec reads. */
export interface DrainRuleSpec {
  readonly name: string;
  readonly behavior: DrainBehavior;
  /** Drain only: lower orders leave first (default 0). */
  readonly order?: number | undefined;
  /** The pods it applies to: any of these (none: every pod). Within one, pod and namespace selectors both hold. */
  readonly pods?: readonly DrainRulePods[] | undefined;
}

export interface DrainRulePods {
  readonly selector?: LabelSelector | undefined;
  /**
   * Matched against the namespace's `kubernetes.io/metadata.name` label only (the API server sets it
   * on every namespace), so the drainer needs no read on Namespaces: Cluster API examples that select
   * namespaces by name paste as they are; other namespace labels are refused at configuration.
   */
  readonly namespaceSelector?: LabelSelector | undefined;
}

export const namespaceNameLabel = 'kubernetes.io/metadata.name';
