// The pods of a draining node: a live view, evictions through the eviction API (budgets
// hold), the budget that refused one, the force policy's DELETE, and the pending replacements
// a long block is told with.
import type { V1Eviction, V1Pod } from '@kubernetes/client-node';
import type { PodInfo } from '../../cluster/model.js';
import type { PodGateway } from '../../cluster/ports/pod-gateway.js';
import type { Log } from '../../shared/log.js';
import { call, classify, mapEvictionError, statusOf } from './api-errors.js';
import { openBudgetWatch } from './budget-watch.js';
import type { KubeHttp } from './kube-http.js';
import { openPodWatch } from './list-watch.js';
import type { WireList } from './object-codecs.js';

const podPath = (namespace: string, name: string) =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;

export function createPodApi(kube: KubeHttp, log: Log): PodGateway {
  return {
    watchPodsOnNode: (nodeName) => openPodWatch(kube, nodeName, log),

    async evictPod(pod) {
      const body: V1Eviction = {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: pod.name, namespace: pod.namespace },
        // Never evict a same-named replacement: the server answers 409 if the UID moved on.
        deleteOptions: { preconditions: { uid: pod.uid } },
      };
      try {
        await kube.request('POST', `${podPath(pod.namespace, pod.name)}/eviction`, { body });
        return { kind: 'evicted' };
      } catch (error) {
        return mapEvictionError(error, `${pod.namespace}/${pod.name}`);
      }
    },

    deletePod: (pod, gracePeriodSeconds) => deletePod(kube, pod, gracePeriodSeconds),

    watchBudgets: (namespace) => openBudgetWatch(kube, namespace, log),

    async pendingReplacements(pod) {
      if (!pod.controllerUid) return [];
      const list = await call(`list pending pods in ${pod.namespace}`, () =>
        kube.request<WireList<V1Pod>>('GET', `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods`, {
          query: { fieldSelector: 'status.phase=Pending', limit: 500 },
        }),
      );
      return list.items
        .filter((p) => p.metadata?.ownerReferences?.some((o) => o.controller && o.uid === pod.controllerUid))
        .map((p) => {
          const scheduled = p.status?.conditions?.find((c) => c.type === 'PodScheduled');
          const reason =
            scheduled?.status === 'False'
              ? `${scheduled.reason ?? 'Unschedulable'}: ${scheduled.message ?? ''}`.trim()
              : 'scheduled, not running yet';
          return { pod: `${p.metadata?.namespace}/${p.metadata?.name}`, reason };
        });
    },
  };
}

/**
 * The force policy's DELETE, with a UID precondition and the grace period; 'unchanged' when the
 * pod was already terminating and the DELETE moved nothing earlier.
 */
async function deletePod(
  kube: KubeHttp,
  pod: PodInfo,
  gracePeriodSeconds: number,
): Promise<'deleted' | 'unchanged' | 'gone'> {
  const body = { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds, preconditions: { uid: pod.uid } };
  let answer: V1Pod | undefined;
  try {
    // The grace period also goes in the query, where the audit log shows it.
    answer = await kube.request<V1Pod>('DELETE', podPath(pod.namespace, pod.name), {
      body,
      query: { gracePeriodSeconds },
    });
  } catch (error) {
    const code = statusOf(error);
    // 404: already gone; 409: the name now belongs to a replacement (UID precondition).
    if (code === 404 || code === 409) return 'gone';
    throw classify(error, `delete pod ${pod.namespace}/${pod.name}`);
  }
  // The server answers the pod as it now is (or a Status when it removed it at once). A
  // DELETE of a pod already terminating only ever moves its deletionTimestamp earlier.
  const after = answer?.metadata?.deletionTimestamp;
  if (pod.deletionTimestamp === undefined || after === undefined) return 'deleted';
  return new Date(after).getTime() < pod.deletionTimestamp.getTime() ? 'deleted' : 'unchanged';
}
