// Pure pod predicates the drain rules (drain-rules.ts) build on: which pods a drain must see
// gone, which are critical, which tolerate the cordon. Mirrors `kubectl drain --ignore-daemonsets
// --delete-emptydir-data --force`, which is what EKS managed node groups do.
// https://github.com/kubernetes/kubectl/blob/master/pkg/drain/filters.go
import type { PodInfo } from '../model.js';
import { toleratesTaint } from './placement.js';

export const mirrorPodAnnotation = 'kubernetes.io/config.mirror';
export const unschedulableTaintKey = 'node.kubernetes.io/unschedulable';

const criticalPriorityClasses: ReadonlySet<string> = new Set(['system-cluster-critical', 'system-node-critical']);

export function isDaemonSetPod(pod: PodInfo): boolean {
  return pod.controllerKind === 'DaemonSet';
}

/** Static pods seen through the API: the kubelet owns them, eviction cannot remove them. */
export function isMirrorPod(pod: PodInfo): boolean {
  return mirrorPodAnnotation in pod.annotations;
}

export function isFinished(pod: PodInfo): boolean {
  return pod.phase === 'Succeeded' || pod.phase === 'Failed';
}

export function isTerminating(pod: PodInfo): boolean {
  return pod.deletionTimestamp !== undefined;
}

/** Pods the drain must see gone before the node may go: everything but DaemonSet, mirror and finished pods. */
export function isDrainable(pod: PodInfo): boolean {
  return !isDaemonSetPod(pod) && !isMirrorPod(pod) && !isFinished(pod);
}

export function isCritical(pod: PodInfo): boolean {
  return pod.priorityClassName !== undefined && criticalPriorityClasses.has(pod.priorityClassName);
}

/** True when a pod would be scheduled onto a cordoned node anyway. */
export function toleratesUnschedulable(pod: PodInfo): boolean {
  return pod.tolerations.some((t) => toleratesTaint(t, { key: unschedulableTaintKey, effect: 'NoSchedule' }));
}

export function podKey(pod: Pick<PodInfo, 'namespace' | 'name'>): string {
  return `${pod.namespace}/${pod.name}`;
}
