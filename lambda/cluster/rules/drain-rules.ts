// Drain rules: what a drain does with each pod (Drain, Skip or WaitCompleted) and in which order,
// in the words of Cluster API's MachineDrainRule (behaviors, `order`, the pod label
// `cluster.x-k8s.io/drain`), with Karpenter's `karpenter.sh/do-not-disrupt` read as Karpenter
// reads it. One pure function decides per pod; the drain, observe mode and `check` all ask it.
// https://github.com/kubernetes-sigs/cluster-api/blob/main/api/core/v1beta2/machinedrainrules_types.go
import type { PodInfo } from '../model.js';
import { matchesSelector } from '../../shared/label-selector.js';
import { isCritical, isDaemonSetPod, isFinished, isMirrorPod } from './pods.js';
import { doNotDisruptAnnotation, doNotDisruptUntilMs } from './do-not-disrupt.js';
import {
  type DrainRuleSpec,
  drainBehaviors,
  namespaceNameLabel,
  type DrainRuleConfig,
} from '../../shared/drain-rule-variables.js';

/** Cluster API's pod label: `skip` or `wait-completed`; it wins over every rule. */
export const capiDrainLabel = 'cluster.x-k8s.io/drain';
/** Ours, for a pod (label or annotation): `drain`, `skip` or `wait-completed`. */
export const drainBehaviorKey = 'graceful-node-termination/drain';
/** Ours, for a pod (annotation "true"): waited for within BATCH_WAIT_SECONDS, as a Job's pod. */
export const waitForCompletionAnnotation = 'graceful-node-termination/wait-for-completion';
/** Ours, for a pod (label or annotation): its order, an integer (Drain only). */
export const drainOrderKey = 'graceful-node-termination/drain-order';

/**
 * The default orders: the node's other pods first, then DaemonSet pods, then critical pods, then critical DaemonSet
 * pods (Karpenter's order).
 */
export const defaultOrders = { pods: 0, daemonSetPods: 1000, criticalPods: 2000, criticalDaemonSetPods: 3000 } as const;

/** The deployment's drain rule settings, as the configuration holds them (DRAIN_RULES, EVICT_DAEMONSET_PODS). */
export type DrainRuleSettings = DrainRuleConfig;

export const defaultDrainRuleSettings: DrainRuleSettings = { drainRules: [], evictDaemonSetPods: false };

/**
 * What the drain does with one pod, and why (the source `check` and the Events name). Read through the plan
 * (drain-plan.ts): its named readings are the only places that branch on a behaviour.
 */
export type PodRule = EvictRule | WaitRule | LeaveRule;

interface RuleBase {
  readonly source: string;
  /** A built-in rule (static, finished and DaemonSet pods, the defaults), not one a user wrote: not told. */
  readonly builtIn?: true | undefined;
}

/** Drain: evicted; lower orders leave first, the next order begins once the pods of the lower ones are gone. */
export interface EvictRule extends RuleBase {
  readonly behavior: 'Drain';
  readonly order: number;
}

/** WaitCompleted: waited for to finish. */
export interface WaitRule extends RuleBase {
  readonly behavior: 'WaitCompleted';
  /**
   * 'batch-wait': waited for within BATCH_WAIT_SECONDS, then evicted (Jobs and do-not-disrupt pods, as before
   * drain rules). 'deadline': never evicted (Cluster API's WaitCompleted); the drain waits until the batch-extended
   * deadline.
   */
  readonly bound: 'batch-wait' | 'deadline';
  /** Waited for by a do-not-disrupt duration: evictable from then on. */
  readonly untilMs?: number | undefined;
}

/** Skip: left running; the node goes without it. */
export interface LeaveRule extends RuleBase {
  readonly behavior: 'Skip';
}

/** The rule for one pod now (a do-not-disrupt duration elapses). First that applies wins. */
export function podRule(pod: PodInfo, settings: DrainRuleSettings, nowMs: number): PodRule {
  if (isMirrorPod(pod)) return { behavior: 'Skip', source: 'static pod (the kubelet owns it)', builtIn: true };
  if (isFinished(pod)) return { behavior: 'Skip', source: 'finished', builtIn: true };
  if (isDaemonSetPod(pod) && !settings.evictDaemonSetPods)
    return { behavior: 'Skip', source: 'DaemonSet pod (EVICT_DAEMONSET_PODS off)', builtIn: true };
  return fromPod(pod) ?? fromBatchMarks(pod, nowMs) ?? fromRules(pod, settings.drainRules) ?? byDefault(pod);
}

function fromPod(pod: PodInfo): PodRule | undefined {
  const capi = pod.labels?.[capiDrainLabel];
  if (capi !== undefined) {
    // Cluster API compares case-insensitively and also takes `waitcompleted`; any other value drains.
    const value = capi.toLowerCase().replace('-', '');
    if (value === 'skip') return { behavior: 'Skip', source: `label ${capiDrainLabel}=${capi}` };
    if (value === 'waitcompleted')
      return { behavior: 'WaitCompleted', source: `label ${capiDrainLabel}=${capi}`, bound: 'deadline' };
  }
  const ours = pod.labels?.[drainBehaviorKey] ?? pod.annotations[drainBehaviorKey];
  const order = parseOrder(pod.labels?.[drainOrderKey] ?? pod.annotations[drainOrderKey]);
  const behavior =
    ours === undefined
      ? undefined
      : drainBehaviors.find((b) => b.toLowerCase() === ours.toLowerCase().replace('-', ''));
  const source = `${drainBehaviorKey}=${ours}`;
  switch (behavior) {
    case 'Skip':
      return { behavior, source };
    case 'WaitCompleted':
      return { behavior, source, bound: 'deadline' };
    case 'Drain':
      return {
        behavior,
        order: order ?? 0,
        source: `${source}${order !== undefined ? `, ${drainOrderKey}=${order}` : ''}`,
      };
    case undefined:
      return order !== undefined ? { behavior: 'Drain', order, source: `${drainOrderKey}=${order}` } : undefined;
  }
}

function fromBatchMarks(pod: PodInfo, nowMs: number): PodRule | undefined {
  if (pod.annotations[waitForCompletionAnnotation] === 'true')
    return { behavior: 'WaitCompleted', source: `${waitForCompletionAnnotation}=true`, bound: 'batch-wait' };
  const value = pod.annotations[doNotDisruptAnnotation];
  if (value === undefined) return undefined;
  const untilMs = doNotDisruptUntilMs(pod, value, nowMs);
  if (untilMs === undefined || untilMs <= nowMs) return undefined; // invalid (Karpenter ignores it) or elapsed
  return {
    behavior: 'WaitCompleted',
    source: `${doNotDisruptAnnotation}=${value}`,
    bound: 'batch-wait',
    ...(Number.isFinite(untilMs) ? { untilMs } : {}),
  };
}

function fromRules(pod: PodInfo, rules: readonly DrainRuleSpec[]): PodRule | undefined {
  const rule = rules.find((r) => appliesTo(r, pod));
  if (rule === undefined) return undefined;
  const source = `rule ${rule.name}`;
  switch (rule.behavior) {
    case 'Drain':
      return { behavior: 'Drain', order: rule.order ?? 0, source };
    case 'WaitCompleted':
      return { behavior: 'WaitCompleted', source, bound: 'deadline' };
    case 'Skip':
      return { behavior: 'Skip', source };
  }
}

function appliesTo(rule: DrainRuleSpec, pod: PodInfo): boolean {
  if (rule.pods === undefined || rule.pods.length === 0) return true;
  const labels = pod.labels ?? {};
  const namespaceLabels = { [namespaceNameLabel]: pod.namespace };
  return rule.pods.some(
    (p) => matchesSelector(p.selector ?? {}, labels) && matchesSelector(p.namespaceSelector ?? {}, namespaceLabels),
  );
}

function byDefault(pod: PodInfo): PodRule {
  if (pod.controllerKind === 'Job')
    return { behavior: 'WaitCompleted', source: 'Job pod', bound: 'batch-wait', builtIn: true };
  const daemon = isDaemonSetPod(pod);
  const [order, source] = isCritical(pod)
    ? daemon
      ? [defaultOrders.criticalDaemonSetPods, 'critical DaemonSet pod']
      : [defaultOrders.criticalPods, `critical (${pod.priorityClassName})`]
    : daemon
      ? [defaultOrders.daemonSetPods, 'DaemonSet pod']
      : [defaultOrders.pods, 'default'];
  return { behavior: 'Drain', order, source, builtIn: true };
}

function parseOrder(raw: string | undefined): number | undefined {
  if (raw === undefined || !/^-?\d{1,10}$/.test(raw.trim())) return undefined;
  const n = Number(raw.trim());
  return n >= -2_147_483_648 && n <= 2_147_483_647 ? n : undefined;
}
