// The reads behind the termination policy's ranking (termination-policy/): the candidates'
// pods (a field selector per node), the budgets of their namespaces, and the ready replicas of
// their ReplicaSets and StatefulSets (a GET each). What it reads grows with the candidates'
// pods, never with the cluster. And the deferral mark, a merge patch like every other mark.
import type { V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import type { PatchResult } from '../../cluster/model.js';
import type { ChoiceGateway, CostBudget, CostOwner, CostPod } from '../../cluster/ports/choice-gateway.js';
import { deferralAnnotation, ownerLabel } from '../../cluster/marks/mark-keys.js';
import { formatDeferral } from '../../cluster/marks/deferral-mark.js';
import { otherMarksOfOurs } from '../../cluster/marks/our-marks.js';
import { mapWithConcurrency } from '../../shared/concurrency.js';
import { classify, statusOf } from './api-errors.js';
import { isReady, selects } from './drainability.js';
import type { KubeHttp } from './kube-http.js';
import { toPodInfo, type WireList } from './object-codecs.js';

const mergePatch = 'application/merge-patch+json';
const deletionCostAnnotation = 'controller.kubernetes.io/pod-deletion-cost';
const ownerResources: Readonly<Record<string, string>> = { ReplicaSet: 'replicasets', StatefulSet: 'statefulsets' };

/** Node labels the pod's nodeSelector and required node affinity (In terms) demand. */
export function requiredNodeLabels(pod: V1Pod): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) out[k] = [v];
  for (const term of pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms ?? []) {
    for (const e of term.matchExpressions ?? [])
      if (e.operator === 'In') out[e.key] = [...(out[e.key] ?? []), ...(e.values ?? [])];
  }
  return out;
}

export function toCostPod(
  pod: V1Pod,
  budgets: readonly V1PodDisruptionBudget[],
  owners: ReadonlyMap<string, number | undefined>,
): CostPod {
  const info = toPodInfo(pod);
  const controller = pod.metadata?.ownerReferences?.find((o) => o.controller);
  const ownerKey = controller !== undefined ? `${info.namespace}/${controller.kind}/${controller.name}` : undefined;
  const owner: CostOwner | undefined =
    controller !== undefined
      ? { kind: controller.kind, name: controller.name, readyReplicas: owners.get(ownerKey!) }
      : undefined;
  const cost = Number(info.annotations[deletionCostAnnotation]);
  return {
    info,
    ready: isReady(pod),
    priority: pod.spec?.priority ?? 0,
    deletionCost: Number.isInteger(cost) ? cost : 0,
    localStorage: (pod.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined || v.hostPath !== undefined),
    requiredNodeLabels: requiredNodeLabels(pod),
    budgets: budgets
      .filter((b) => b.metadata?.namespace === info.namespace && selects(b.spec?.selector, pod.metadata?.labels ?? {}))
      .map((b): CostBudget => ({
        name: b.metadata?.name ?? '',
        disruptionsAllowed: b.status?.disruptionsAllowed ?? 0,
        currentHealthy: b.status?.currentHealthy ?? 0,
      })),
    owner,
  };
}

const ns = (n: string) => `/namespaces/${encodeURIComponent(n)}`;

async function get<T>(kube: KubeHttp, path: string, what: string, query?: Record<string, string>): Promise<T> {
  try {
    return await kube.request<T>('GET', path, { query, compressed: true });
  } catch (error) {
    throw classify(error, what);
  }
}

/** A workload that cannot be read (gone, refused) is left out of the rule, never guessed. */
async function readyReplicas(kube: KubeHttp, key: string): Promise<number | undefined> {
  const [namespace, kind, name] = key.split('/') as [string, string, string];
  try {
    const path = `/apis/apps/v1${ns(namespace)}/${ownerResources[kind]}/${encodeURIComponent(name)}`;
    const o = await kube.request<{ status?: { readyReplicas?: number } }>('GET', path, { retry: false });
    return o.status?.readyReplicas ?? 0;
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw classify(error, `get ${kind} ${namespace}/${name}`);
  }
}

/** The candidates' pods (a field selector each), their namespaces' budgets and their workloads' ready replicas. */
async function podsForChoice(
  kube: KubeHttp,
  nodes: readonly string[],
): Promise<ReadonlyMap<string, readonly CostPod[]>> {
  const perNode = await mapWithConcurrency(nodes, 8, (n) =>
    get<WireList<V1Pod>>(kube, '/api/v1/pods', `list pods on ${n}`, { fieldSelector: `spec.nodeName=${n}` }),
  );
  const pods = perNode.flatMap((l) => l.items);
  const namespaces = [...new Set(pods.map((p) => p.metadata?.namespace ?? ''))];
  const budgets = (
    await mapWithConcurrency(namespaces, 8, (n) =>
      get<WireList<V1PodDisruptionBudget>>(
        kube,
        `/apis/policy/v1${ns(n)}/poddisruptionbudgets`,
        `list poddisruptionbudgets in ${n}`,
      ),
    )
  ).flatMap((l) => l.items);
  const ownerKeys = new Set<string>();
  for (const p of pods) {
    const c = p.metadata?.ownerReferences?.find((o) => o.controller);
    if (c !== undefined && ownerResources[c.kind] !== undefined && p.status?.phase === 'Running')
      ownerKeys.add(`${p.metadata?.namespace}/${c.kind}/${c.name}`);
  }
  const owners = new Map(
    await mapWithConcurrency([...ownerKeys], 8, async (k) => [k, await readyReplicas(kube, k)] as const),
  );
  return new Map(nodes.map((n, i) => [n, perNode[i]!.items.map((p) => toCostPod(p, budgets, owners))]));
}

export function createChoiceApi(kube: KubeHttp): ChoiceGateway {
  return {
    podsForChoice: (nodes) => podsForChoice(kube, nodes),
    markDeferred: (node, mark, owner) =>
      patch(kube, node.name, {
        metadata: {
          ...(node.resourceVersion !== undefined ? { resourceVersion: node.resourceVersion } : {}),
          labels: { [ownerLabel]: owner },
          annotations: { [deferralAnnotation]: formatDeferral(mark) },
        },
      }),
    unmarkDeferred: (node) =>
      patch(kube, node.name, {
        metadata: {
          ...(node.resourceVersion !== undefined ? { resourceVersion: node.resourceVersion } : {}),
          // The owner label stays while another mark of ours is on the node.
          ...(otherMarksOfOurs(node, 'deferral') ? {} : { labels: { [ownerLabel]: null } }),
          annotations: { [deferralAnnotation]: null },
        },
      }),
  };
}

async function patch(kube: KubeHttp, name: string, body: object): Promise<PatchResult> {
  try {
    await kube.request('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}`, { body, contentType: mergePatch });
    return 'patched';
  } catch (error) {
    if (statusOf(error) === 404) return 'node-gone';
    if (statusOf(error) === 409) return 'changed';
    throw classify(error, `patch node ${name}`);
  }
}
