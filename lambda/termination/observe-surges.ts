// Observe mode with SURGE_BEFORE_EVICT on: for each pod the drain would evict, whether its
// Deployment would be restarted first or the surge refused, and why (eviction/surge-verdict.ts,
// the drain's own first look). Read and told only: no restart, no record. Best effort: a read
// that fails, or a look past its budget, is told as such for its pod and never stops the rest
// or the lifecycle action's completion.
import type { ClusterGateway } from '../cluster/ports/cluster-gateway.js';
import type { PodInfo } from '../cluster/model.js';
import { podKey } from '../cluster/rules/pods.js';
import type { SurgeGateway } from '../cluster/ports/surge-gateway.js';
import type { SurgeRefusal } from '../eviction/surge-rules.js';
import type { DeploymentRef } from '../cluster/model.js';
import { deploymentKey } from '../cluster/marks/surge-marks.js';
import { deploymentsByReplicaSet, surgeVerdict, type SurgeReads } from '../eviction/surge-verdict.js';
import type { Clock } from '../shared/clock.js';
import { asError, type Log } from '../shared/log.js';
import type { SurgeSettings } from '../shared/surge-variables.js';

export interface ObservedSurge {
  readonly pod: string;
  /** namespace/name; undefined: none (a StatefulSet's pod, or not told). */
  readonly deployment: string | undefined;
  /** 'surge': restarted first, the pod held until a replacement is Ready on a node that stays. */
  readonly verdict: 'surge' | SurgeRefusal | 'could-not-tell';
}

export interface SurgeLook {
  readonly settings: SurgeSettings | undefined;
  /** The node and those leaving with it: marked by our drains, the group's other leaving instances'. */
  readonly leaving: () => Promise<ReadonlySet<string>>;
  readonly clock: Clock;
  readonly log: Log;
}

/** The look stops here, so the lifecycle action completes without waiting on a slow API server. */
export const surgeLookBudgetMs = 30_000;

export async function observeSurges(
  cluster: ClusterGateway & Partial<SurgeGateway>,
  pods: readonly PodInfo[],
  look: SurgeLook,
): Promise<readonly ObservedSurge[]> {
  if (look.settings === undefined || cluster.restartDeployment === undefined) return [];
  const surged = new Set<string>();
  const reads = cachedReads(cluster as SurgeGateway, look.leaving, surged);
  const untilMs = look.clock.now() + surgeLookBudgetMs;
  const out: ObservedSurge[] = [];
  for (const pod of pods) {
    if (look.clock.now() > untilMs) {
      out.push({ pod: podKey(pod), deployment: undefined, verdict: 'could-not-tell' });
      continue;
    }
    try {
      const v = await surgeVerdict(pod, look.settings, reads);
      if (v.kind === 'refuse') out.push({ pod: podKey(pod), deployment: keyOf(v.deployment), verdict: v.reason });
      if (v.kind !== 'start' && v.kind !== 'join') continue;
      const deployment = deploymentKey(v.d);
      surged.add(deployment);
      out.push({ pod: podKey(pod), deployment, verdict: 'surge' });
    } catch (error) {
      look.log.warn('observe mode: could not work out whether a pod would be surged', {
        pod: podKey(pod),
        error: asError(error),
      });
      out.push({ pod: podKey(pod), deployment: undefined, verdict: 'could-not-tell' });
    }
  }
  return out;
}

/** The pods of one ReplicaSet share their Deployment's reads, as in the drain's gate. */
function cachedReads(
  api: SurgeGateway,
  leavingNodes: () => Promise<ReadonlySet<string>>,
  surged: ReadonlySet<string>,
): SurgeReads {
  let leaving: Promise<ReadonlySet<string>> | undefined;
  return {
    deploymentOf: deploymentsByReplicaSet(api),
    replicaPods: (d) => api.replicaPods(d),
    leaving: () => (leaving ??= leavingNodes()),
    schedulableNodes: (placement) => api.schedulableNodes(placement),
    started: (deployment) => surged.has(deploymentKey(deployment)),
  };
}

/** The surges as the TerminationObserved Event says them: one restart per Deployment, with the pods it holds. */
export function describeSurges(surges: readonly ObservedSurge[]): string | undefined {
  if (surges.length === 0) return undefined;
  const held = new Map<string, string[]>();
  for (const s of surges)
    if (s.verdict === 'surge' && s.deployment) held.set(s.deployment, [...(held.get(s.deployment) ?? []), s.pod]);
  const restarts = [...held].map(
    ([d, pods]) => `restart Deployment ${d} and hold ${pods.join(', ')} until a replacement is Ready elsewhere`,
  );
  const refused = surges
    .filter((s) => s.verdict !== 'surge')
    .map((s) => (s.verdict === 'could-not-tell' ? `could not tell for ${s.pod}` : `not surge ${s.pod} (${s.verdict})`));
  return `surge before evict: ${[...restarts, ...refused].join(', ')}`;
}

/**
 * The node, the nodes our drains marked, and the nodes of the group's other leaving instances
 * (cordoned first). Each read is best effort: what cannot be read leaves the set smaller, so a
 * surge may be told as not needed that the drain would make (logged).
 */
export async function leavingWith(
  cluster: ClusterGateway,
  nodeName: string,
  siblings: readonly string[],
  owner: string,
  log: Log,
): Promise<ReadonlySet<string>> {
  const names = new Set<string>([nodeName]);
  const tolerant = async <T>(what: string, read: () => Promise<T>): Promise<T | undefined> =>
    read().catch((error: unknown) => {
      log.warn(`observe mode: could not read ${what}; the surge look counts fewer nodes as leaving`, asError(error));
      return undefined;
    });
  for (const name of (await tolerant('the nodes our drains marked', () => cluster.drainMarkedNames(owner))) ?? [])
    names.add(name);
  for (const id of siblings) {
    const node = await tolerant(`the node of ${id}`, () => cluster.findNodeByInstanceId(id));
    if (node !== undefined) names.add(node.name);
  }
  return names;
}

const keyOf = (ref: DeploymentRef | undefined) => (ref !== undefined ? deploymentKey(ref) : undefined);
