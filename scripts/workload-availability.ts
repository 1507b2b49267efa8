// After a node group upgrade: every Deployment, StatefulSet and DaemonSet that was available
// before is available again (seed 002: pods running is not enough, the workload must be
// available), and every node of the group is Ready at the new version. Three lists before,
// the same three after (and again while waiting), over the whole cluster.
import type { AppsV1Api, V1DaemonSet, V1Deployment, V1StatefulSet } from '@kubernetes/client-node';
import { minorOf } from './ami-release.js';

/** kind/namespace/name -> available. */
export type Availability = ReadonlyMap<string, boolean>;

export function deploymentAvailable(d: V1Deployment): boolean {
  const want = d.spec?.replicas ?? 1;
  return (d.status?.availableReplicas ?? 0) >= want;
}

export function statefulSetAvailable(s: V1StatefulSet): boolean {
  const want = s.spec?.replicas ?? 1;
  return (s.status?.availableReplicas ?? s.status?.readyReplicas ?? 0) >= want;
}

export function daemonSetAvailable(d: V1DaemonSet): boolean {
  return (d.status?.numberAvailable ?? 0) >= (d.status?.desiredNumberScheduled ?? 0);
}

const key = (kind: string, o: { metadata?: { namespace?: string; name?: string } }) =>
  `${kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

export async function readAvailability(apps: AppsV1Api): Promise<Availability> {
  const [deployments, statefulSets, daemonSets] = await Promise.all([
    apps.listDeploymentForAllNamespaces(),
    apps.listStatefulSetForAllNamespaces(),
    apps.listDaemonSetForAllNamespaces(),
  ]);
  return new Map([
    ...deployments.items.map((d) => [key('Deployment', d), deploymentAvailable(d)] as const),
    ...statefulSets.items.map((s) => [key('StatefulSet', s), statefulSetAvailable(s)] as const),
    ...daemonSets.items.map((d) => [key('DaemonSet', d), daemonSetAvailable(d)] as const),
  ]);
}

/** Those available before that are not now (a workload deleted meanwhile is not counted). */
export function lostAvailability(before: Availability, after: Availability): string[] {
  return [...before].filter(([k, was]) => was && after.get(k) === false).map(([k]) => k);
}

export interface NodeVersion {
  readonly name: string;
  readonly ready: boolean;
  readonly kubeletVersion: string | undefined;
}

/** The group's nodes not Ready, or not at the target minor version, each said why. */
export function nodesBehind(nodes: readonly NodeVersion[], targetMinor: string): string[] {
  return nodes.flatMap((n) => {
    if (!n.ready) return [`${n.name}: not Ready`];
    if (minorOf(n.kubeletVersion) !== targetMinor)
      return [`${n.name}: kubelet ${n.kubeletVersion ?? 'unknown'}, not ${targetMinor}`];
    return [];
  });
}
