// Surge before evict's first look at a pod, read-only: whether it takes part, whether its
// eviction would leave its Deployment with no Ready pod off the leaving nodes, and if so a
// restart or the named refusal. The drain's gate acts on it (surge-gate.ts); observe mode
// tells it without acting (termination/observe.ts).
import type { PodInfo, Placement } from '../cluster/model.js';

import { podKey } from '../cluster/rules/pods.js';
import type { DeploymentInfo, ReplicaPod, SurgeGateway } from '../cluster/ports/surge-gateway.js';
import type { SurgeSettings } from '../shared/surge-variables.js';
import { antiAffinityRoom, participation, readyElsewhere, refusalOf, type SurgeRefusal } from './surge-rules.js';
import type { DeploymentRef } from '../cluster/model.js';
import { deploymentKey } from '../cluster/marks/surge-marks.js';

export type SurgeVerdict =
  /** Not asked, not a Deployment's, or a replica is Ready on a node that stays: plain eviction. */
  | { readonly kind: 'pass' }
  /** A surge of its Deployment already started in this drain: wait with it. */
  | { readonly kind: 'join'; readonly d: DeploymentInfo }
  /** Restart the Deployment and hold the pod until a replacement is Ready elsewhere. */
  | { readonly kind: 'start'; readonly d: DeploymentInfo }
  | {
      readonly kind: 'refuse';
      readonly owner: string;
      readonly reason: SurgeRefusal;
      /** Undefined for a pod with no Deployment (a StatefulSet's). */
      readonly deployment: DeploymentRef | undefined;
    };

/** What the verdict reads; the gate caches them per invocation. */
export interface SurgeReads {
  deploymentOf(pod: PodInfo): Promise<DeploymentInfo | undefined>;
  replicaPods(d: DeploymentInfo): Promise<readonly ReplicaPod[]>;
  /** The node being drained and every node leaving with it. */
  leaving(): Promise<ReadonlySet<string>>;
  schedulableNodes(placement: Placement): Promise<readonly string[]>;
  /**
   * A surge of this Deployment was started in this drain and still waits, or the Deployment was restarted since the
   * drain began (by a twin invocation of the same drain): a restart is under way.
   */
  started(deployment: DeploymentInfo): boolean;
}

const pass: SurgeVerdict = { kind: 'pass' };

export async function surgeVerdict(pod: PodInfo, s: SurgeSettings, r: SurgeReads): Promise<SurgeVerdict> {
  // Only a ReplicaSet's pod can be a Deployment's (a StatefulSet's is refused by name when asked).
  if (pod.controllerKind !== 'ReplicaSet' && pod.controllerKind !== 'StatefulSet') return pass;
  if (pod.controllerKind === 'StatefulSet') {
    if (participation(pod, undefined, s) !== 'opted-in') return pass;
    return { kind: 'refuse', owner: `the StatefulSet of ${podKey(pod)}`, reason: 'statefulset', deployment: undefined };
  }
  const d = await r.deploymentOf(pod);
  const asked = d === undefined ? 'not-asked' : participation(pod, d, s);
  if (d === undefined || asked === 'not-asked') return pass;
  const refuse = (reason: SurgeRefusal): SurgeVerdict => ({
    kind: 'refuse',
    owner: `Deployment ${deploymentKey(d)}`,
    reason,
    deployment: d,
  });
  if (asked === 'opted-out') return refuse('untouchable-owner');
  const replicas = await r.replicaPods(d);
  const leaving = await r.leaving();
  if (readyElsewhere(replicas, pod.uid, leaving) !== undefined) return pass;
  // Another pod of the same Deployment, or another invocation of this drain, already restarted
  // it: its generation may not be observed yet, so the refusals would wrongly say not-settled.
  if (r.started(d)) return { kind: 'join', d };
  const room = d.selfAntiAffinityOnHostname
    ? antiAffinityRoom(await r.schedulableNodes(d.placement), leaving, replicas)
    : undefined;
  const refusal = refusalOf(d, s, room);
  return refusal === undefined ? { kind: 'start', d } : refuse(refusal);
}

/**
 * A pod's Deployment, read once per ReplicaSet: its pods share the reads. A failed read is not
 * kept, so the next pod of the ReplicaSet asks again.
 */
export function deploymentsByReplicaSet(
  api: Pick<SurgeGateway, 'deploymentOfPod'>,
): (pod: PodInfo) => Promise<DeploymentInfo | undefined> {
  const known = new Map<string, Promise<DeploymentInfo | undefined>>();
  return (pod) => {
    const uid = pod.controllerUid;
    if (uid === undefined) return api.deploymentOfPod(pod);
    let read = known.get(uid);
    if (read === undefined) {
      read = api.deploymentOfPod(pod);
      known.set(uid, read);
      read.catch(() => known.delete(uid));
    }
    return read;
  };
}
