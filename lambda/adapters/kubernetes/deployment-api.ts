// Surge before evict's requests (cluster/ports/surge-gateway.ts): a pod's Deployment through its
// ReplicaSet (by name, each checked by UID), the Deployment's pods by its selector, the restart
// exactly as `kubectl rollout restart` patches it.
// https://github.com/kubernetes/kubectl/blob/master/pkg/polymorphichelpers/objectrestarter.go
import type { V1Deployment, V1LabelSelector, V1Node, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import type { Placement } from '../../cluster/model.js';
import { restartedAtAnnotation } from '../../cluster/marks/mark-keys.js';

import { matchesSelector } from '../../shared/label-selector.js';
import { admits, nodeSelectorQuery, type CandidateNode } from '../../cluster/rules/placement.js';

import {
  type DeploymentInfo,
  type ReplicaPod,
  type RestartResult,
  type SurgeGateway,
} from '../../cluster/ports/surge-gateway.js';
import { classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import type { WireList } from './object-codecs.js';

const ns = (namespace: string) => `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}`;
const hostname = 'kubernetes.io/hostname';

export function createDeploymentApi(kube: KubeHttp): SurgeGateway {
  const r = new DeploymentRequests(kube);
  return {
    readDeployment: (namespace, name) => r.readDeployment(namespace, name),
    deploymentOfPod: (pod) => r.deploymentOfPod(pod),
    replicaPods: (d) => r.replicaPods(d),
    restartDeployment: (d, restartedAt) => r.restartDeployment(d, restartedAt),
    schedulableNodes: (placement) => r.schedulableNodes(placement),
  };
}

class DeploymentRequests {
  constructor(private readonly kube: KubeHttp) {}

  async readDeployment(namespace: string, name: string): Promise<DeploymentInfo | undefined> {
    const d = await this.get<V1Deployment>(
      `${ns(namespace)}/deployments/${encodeURIComponent(name)}`,
      `get deployment ${namespace}/${name}`,
    );
    return d === undefined ? undefined : toDeploymentInfo(d);
  }

  async deploymentOfPod(pod: {
    namespace: string;
    name: string;
    controllerUid?: string | undefined;
  }): Promise<DeploymentInfo | undefined> {
    const rs = await this.replicaSetOf(pod);
    const owner = rs?.metadata?.ownerReferences?.find((o) => o.controller && o.kind === 'Deployment');
    if (owner === undefined) return undefined;
    const d = await this.readDeployment(pod.namespace, owner.name);
    return d?.uid === owner.uid ? d : undefined;
  }

  async replicaPods(d: Pick<DeploymentInfo, 'namespace' | 'selector'>): Promise<readonly ReplicaPod[]> {
    const pods = await this.list<V1Pod>(
      `/api/v1/namespaces/${encodeURIComponent(d.namespace)}/pods`,
      { labelSelector: d.selector, limit: 500 },
      `list pods of ${d.namespace}`,
    );
    return pods.map(toReplicaPod);
  }

  async restartDeployment(
    d: Pick<DeploymentInfo, 'namespace' | 'name' | 'resourceVersion'>,
    restartedAt: string,
  ): Promise<RestartResult> {
    // A strategic merge patch of the template's annotation, as kubectl sends it; never retried
    // by the client (the value is the same either way, but one restart is one request). The
    // resourceVersion in the body is a precondition: the server answers 409 when the object
    // changed since it was read, so two invocations of one drain never both restart it.
    // https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions
    const body = {
      ...(d.resourceVersion !== '' ? { metadata: { resourceVersion: d.resourceVersion } } : {}),
      spec: { template: { metadata: { annotations: { [restartedAtAnnotation]: restartedAt } } } },
    };
    try {
      await this.kube.request('PATCH', `${ns(d.namespace)}/deployments/${encodeURIComponent(d.name)}`, {
        body,
        contentType: 'application/strategic-merge-patch+json',
        retry: false,
      });
      return 'patched';
    } catch (error) {
      if (statusOf(error) === 404) return 'gone';
      if (statusOf(error) === 409) return 'conflict';
      throw classify(error, `restart deployment ${d.namespace}/${d.name}`);
    }
  }

  async schedulableNodes(placement: Placement): Promise<readonly string[]> {
    // The nodeSelector filters on the server: a node group's nodes, not the whole cluster's.
    const selector = nodeSelectorQuery(placement);
    const nodes = await this.list<V1Node>(
      '/api/v1/nodes',
      { limit: 5000, ...(selector === '' ? {} : { labelSelector: selector }) },
      'list nodes',
    );
    const candidates = nodes.filter((n) => n.spec?.unschedulable !== true).map(toCandidate);
    return candidates.filter((n) => admits(placement, n)).map((n) => n.name);
  }

  /** The pod's controller by name: its ReplicaSet is named after the pod's generateName, else the pod says. */
  private async replicaSetOf(pod: {
    namespace: string;
    name: string;
    controllerUid?: string | undefined;
  }): Promise<V1ReplicaSet | undefined> {
    const guess = pod.name.replace(/-[a-z0-9]{5}$/, '');
    const rs = guess !== pod.name ? await this.replicaSet(pod.namespace, guess) : undefined;
    if (rs !== undefined && (pod.controllerUid === undefined || rs.metadata?.uid === pod.controllerUid)) return rs;
    const query = { fieldSelector: `metadata.name=${pod.name}` };
    const [self] = await this.list<V1Pod>(
      `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods`,
      query,
      `list pod ${pod.namespace}/${pod.name}`,
    );
    const owner = self?.metadata?.ownerReferences?.find((o) => o.controller && o.kind === 'ReplicaSet');
    if (owner === undefined) return undefined;
    const named = await this.replicaSet(pod.namespace, owner.name);
    return named?.metadata?.uid === owner.uid ? named : undefined;
  }

  private replicaSet(namespace: string, name: string): Promise<V1ReplicaSet | undefined> {
    return this.get<V1ReplicaSet>(
      `${ns(namespace)}/replicasets/${encodeURIComponent(name)}`,
      `get replicaset ${namespace}/${name}`,
    );
  }

  /** undefined on 404. */
  private async get<T>(path: string, what: string): Promise<T | undefined> {
    try {
      return await this.kube.request<T>('GET', path);
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw classify(error, what);
    }
  }

  private async list<T>(path: string, query: Record<string, string | number>, what: string): Promise<readonly T[]> {
    try {
      return (await this.kube.request<WireList<T>>('GET', path, { query })).items;
    } catch (error) {
      throw classify(error, what);
    }
  }
}

export function toDeploymentInfo(d: V1Deployment): DeploymentInfo {
  const spec = d.spec;
  const template = spec?.template;
  const labels = template?.metadata?.labels ?? {};
  const containers = template?.spec?.containers ?? [];
  const terms = template?.spec?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
  return {
    namespace: d.metadata?.namespace ?? '',
    name: d.metadata?.name ?? '',
    uid: d.metadata?.uid ?? '',
    resourceVersion: d.metadata?.resourceVersion ?? '',
    generation: d.metadata?.generation ?? 0,
    observedGeneration: d.status?.observedGeneration ?? 0,
    paused: spec?.paused === true,
    replicas: spec?.replicas ?? 1,
    strategy: spec?.strategy?.type === 'Recreate' ? 'Recreate' : 'RollingUpdate',
    maxSurge: (spec?.strategy?.rollingUpdate?.maxSurge as number | string | undefined) ?? '25%',
    annotations: d.metadata?.annotations ?? {},
    templateLabels: labels,
    restartedAt: template?.metadata?.annotations?.[restartedAtAnnotation],
    readinessProbe: containers.length > 0 && containers.every((c) => c.readinessProbe !== undefined),
    selfAntiAffinityOnHostname: terms.some(
      (t) => t.topologyKey === hostname && t.labelSelector !== undefined && matchesSelector(t.labelSelector, labels),
    ),
    placement: {
      nodeSelector: template?.spec?.nodeSelector ?? {},
      tolerations: (template?.spec?.tolerations ?? []).map((t) => ({
        key: t.key,
        operator: t.operator,
        value: t.value,
        effect: t.effect,
      })),
    },
    managers: (d.metadata?.managedFields ?? []).map((f) => ({
      manager: f.manager ?? '',
      subresource: f.subresource ?? '',
    })),
    selector: selectorString(spec?.selector),
  };
}

function toCandidate(n: V1Node): CandidateNode {
  const taints = (n.spec?.taints ?? []).map((t) => ({ key: t.key, value: t.value, effect: t.effect }));
  return { name: n.metadata?.name ?? '', labels: n.metadata?.labels ?? {}, taints };
}

export function toReplicaPod(p: V1Pod): ReplicaPod {
  const conditions = p.status?.conditions ?? [];
  const scheduled = conditions.find((c) => c.type === 'PodScheduled');
  return {
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid ?? '',
    nodeName: p.spec?.nodeName,
    ready: conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    terminating: p.metadata?.deletionTimestamp !== undefined,
    unschedulable:
      p.status?.phase === 'Pending' && scheduled?.status === 'False' && scheduled.reason === 'Unschedulable',
  };
}

/** A label selector as the list's labelSelector query takes it. */
export function selectorString(s: V1LabelSelector | undefined): string {
  const parts = Object.entries(s?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of s?.matchExpressions ?? []) {
    const values = `(${(e.values ?? []).join(',')})`;
    if (e.operator === 'In') parts.push(`${e.key} in ${values}`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin ${values}`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parts.join(',');
}
