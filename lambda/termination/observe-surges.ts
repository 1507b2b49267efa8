// Observe mode with SURGE_BEFORE_EVICT on: for each pod the drain would evict, whether its
// Deployment would be restarted first or the surge refused, and why (eviction/surge-verdict.ts,
// the drain's own first look). Read and told only: no restart, no record.
import type { ClusterGateway, PodInfo } from '../cluster/cluster-ports.js';
import { podKey } from '../cluster/pods.js';
import type { SurgeGateway } from '../cluster/surge-ports.js';
import type { SurgeRefusal } from '../eviction/surge-decide.js';
import { surgeVerdict } from '../eviction/surge-verdict.js';
import { asError, type Log } from '../shared/log.js';
import type { SurgeSettings } from '../shared/surge-variables.js';

export interface ObservedSurge {
  readonly pod: string;
  readonly deployment: string;
  /** 'surge': restarted first, the pod held until a replacement is Ready on a node that stays. */
  readonly verdict: 'surge' | SurgeRefusal;
}

export interface SurgeLook {
  readonly settings: SurgeSettings | undefined;
  /** The node and those leaving with it: marked by our drains, the group's other leaving instances'. */
  readonly leaving: () => Promise<ReadonlySet<string>>;
  readonly log: Log;
}

export async function observeSurges(cluster: ClusterGateway & Partial<SurgeGateway>, pods: readonly PodInfo[], look: SurgeLook): Promise<readonly ObservedSurge[]> {
  if (look.settings === undefined || cluster.restartDeployment === undefined) return [];
  const api = cluster as SurgeGateway;
  const surged = new Set<string>();
  let leaving: Promise<ReadonlySet<string>> | undefined;
  const reads = {
    deploymentOf: (pod: PodInfo) => api.deploymentOfPod(pod),
    replicaPods: api.replicaPods.bind(api),
    leaving: () => (leaving ??= look.leaving()),
    schedulableNodes: api.schedulableNodes.bind(api),
    started: (deployment: string) => surged.has(deployment),
  };
  const out: ObservedSurge[] = [];
  for (const pod of pods) {
    try {
      const v = await surgeVerdict(pod, look.settings, reads);
      if (v.kind === 'refuse') out.push({ pod: podKey(pod), deployment: v.deployment, verdict: v.reason });
      if (v.kind !== 'start' && v.kind !== 'join') continue;
      const deployment = `${v.d.namespace}/${v.d.name}`;
      surged.add(deployment);
      out.push({ pod: podKey(pod), deployment, verdict: 'surge' });
    } catch (error) {
      look.log.warn('observe mode: could not work out whether a pod would be surged', { pod: podKey(pod), error: asError(error) });
    }
  }
  return out;
}

/** The surges as the TerminationObserved Event says them. */
export function describeSurges(surges: readonly ObservedSurge[]): string | undefined {
  if (surges.length === 0) return undefined;
  const told = surges.map((s) =>
    s.verdict === 'surge' ? `restart Deployment ${s.deployment} and hold ${s.pod} until a replacement is Ready elsewhere` : `not surge ${s.pod} (${s.verdict})`,
  );
  return `surge before evict: ${told.join(', ')}`;
}

/** The node, the nodes our drains marked, and the nodes of the group's other leaving instances (cordoned first). */
export async function leavingWith(cluster: ClusterGateway, nodeName: string, siblings: readonly string[], owner: string): Promise<ReadonlySet<string>> {
  const names = new Set(await cluster.drainMarkedNames(owner));
  names.add(nodeName);
  for (const id of siblings) {
    const node = await cluster.findNodeByInstanceId(id);
    if (node !== undefined) names.add(node.name);
  }
  return names;
}
