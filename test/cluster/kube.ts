// Admin-side helpers for the cluster suite, the demo and the benchmark: kwok nodes,
// workloads, budgets, waiting, and reading the audit log.
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  KubeConfig,
  PolicyV1Api,
  StorageV1Api,
  Watch,
  type V1Pod,
  type V1PodSpec,
} from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { attachmentNameOf, csiVolumeName } from '../../lambda/cluster/rules/volume-names.js';
import type { PlaneInfo } from './plane/plane.js';
import { drainerGroup, testAws } from './plane/token-webhook.js';
import { mintEksToken } from '../../lambda/adapters/aws/eks-token.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const rbacFile = join(repo, 'infra', 'kubernetes', 'rbac.yaml');
/** Surge before evict's role, binding and admission policy (npm run rbac:yaml writes it beside rbac.yaml). */
export const surgeFile = join(repo, 'infra', 'kubernetes', 'surge.yaml');

export interface Admin {
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly policy: PolicyV1Api;
  readonly batch: BatchV1Api;
  kubectl(...args: string[]): string;
  /** kubectl apply of one object (server-side). */
  kubectlApply(object: Record<string, unknown>): string;
}

export function admin(plane: PlaneInfo): Admin {
  const kc = new KubeConfig();
  kc.loadFromFile(plane.adminKubeconfig);
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    policy: kc.makeApiClient(PolicyV1Api),
    batch: kc.makeApiClient(BatchV1Api),
    kubectl: (...args) =>
      execFileSync(plane.kubectl, ['--kubeconfig', plane.adminKubeconfig, ...args], { encoding: 'utf8' }),
    kubectlApply: (object) =>
      execFileSync(plane.kubectl, ['--kubeconfig', plane.adminKubeconfig, 'apply', '--server-side', '-f', '-'], {
        encoding: 'utf8',
        input: JSON.stringify(object),
      }),
  };
}

/**
 * The AWS Load Balancer Controller's TargetGroupBinding CRD, as much of it as the drainer reads
 * (no controller runs here: tests play it and ELB).
 *   https://github.com/kubernetes-sigs/aws-load-balancer-controller/blob/main/config/crd/bases/elbv2.k8s.aws_targetgroupbindings.yaml
 */
export async function installTargetGroupBindingCrd(a: Admin): Promise<void> {
  a.kubectlApply({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'targetgroupbindings.elbv2.k8s.aws' },
    spec: {
      group: 'elbv2.k8s.aws',
      names: {
        kind: 'TargetGroupBinding',
        listKind: 'TargetGroupBindingList',
        plural: 'targetgroupbindings',
        singular: 'targetgroupbinding',
      },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1beta1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  });
  await until('the TargetGroupBinding CRD established', 30_000, async () => {
    const out = a.kubectl(
      'get',
      'crd',
      'targetgroupbindings.elbv2.k8s.aws',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Established")].status}',
    );
    return out.trim() === 'True';
  });
}

/**
 * What the AWS Load Balancer Controller leaves for a Service it exposes through an instance target group: the
 * NodePort Service (port 80) and the TargetGroupBinding naming the group, with a nodeSelector when given. Returns the
 * Service's NodePort.
 */
export async function bindTargetGroup(
  a: Admin,
  o: {
    readonly namespace: string;
    /** The Service's name (its pods' app label). */
    readonly service: string;
    /** The binding's name: the Service's unless given. */
    readonly binding?: string;
    readonly targetGroupArn: string;
    readonly targetPort?: number;
    readonly nodeSelector?: object;
  },
): Promise<number> {
  const svc = await a.core.createNamespacedService({
    namespace: o.namespace,
    body: {
      metadata: { name: o.service },
      spec: {
        type: 'NodePort',
        selector: { app: o.service },
        ports: [{ port: 80, targetPort: o.targetPort ?? 8080 }],
      },
    },
  });
  a.kubectlApply({
    apiVersion: 'elbv2.k8s.aws/v1beta1',
    kind: 'TargetGroupBinding',
    metadata: { name: o.binding ?? o.service, namespace: o.namespace },
    spec: {
      targetGroupARN: o.targetGroupArn,
      targetType: 'instance',
      serviceRef: { name: o.service, port: 80 },
      ...(o.nodeSelector !== undefined ? { nodeSelector: o.nodeSelector } : {}),
    },
  });
  return svc.spec!.ports![0]!.nodePort!;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined | false>,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    await sleep(intervalMs);
  }
  throw new Error(
    `timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`,
  );
}

/** A fresh EC2-shaped instance id (17 hex digits, like current instances). */
export function newInstanceId(): string {
  return `i-0${randomBytes(8).toString('hex')}`;
}

/** A node that kwok keeps Ready and whose pods kwok runs; its providerID names the instance. */
export async function createKwokNode(
  a: Admin,
  name: string,
  instanceId: string,
  labels: Record<string, string> = {},
  taints: { key: string; effect: string; value?: string }[] = [],
): Promise<void> {
  await a.core.createNode({
    body: {
      metadata: {
        name,
        annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
        labels: {
          'kubernetes.io/hostname': name,
          'kubernetes.io/os': 'linux',
          type: 'kwok',
          'topology.kubernetes.io/zone': 'eu-west-1a',
          ...labels,
        },
      },
      spec: { providerID: `aws:///eu-west-1a/${instanceId}`, taints: taints.length ? taints : undefined },
      status: {
        allocatable: { cpu: '32', memory: '256Gi', pods: '250' },
        capacity: { cpu: '32', memory: '256Gi', pods: '250' },
      },
    },
  });
}

/**
 * Ready as the scheduler sees it: the Ready condition True and the node lifecycle controller's
 * not-ready/unreachable taints gone. The controller takes its taint off asynchronously after the
 * condition turns True, so a test that compares a node's taints right after the condition alone
 * can see `node.kubernetes.io/not-ready` (it did, once, in CI).
 * https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-nodes-by-condition
 */
export async function waitNodeReady(a: Admin, name: string, timeoutMs = 30_000): Promise<void> {
  const controllerTaints = new Set(['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']);
  await until(`node ${name} Ready`, timeoutMs, async () => {
    const node = await a.core.readNode({ name });
    const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    return ready && !(node.spec?.taints ?? []).some((t) => controllerTaints.has(t.key));
  });
}

export async function ensureNamespace(a: Admin, name: string): Promise<void> {
  try {
    await a.core.createNamespace({ body: { metadata: { name } } });
  } catch (error) {
    if ((error as { code?: number }).code !== 409) throw error;
  }
  await until(`default ServiceAccount in ${name}`, 30_000, async () => {
    await a.core.readNamespacedServiceAccount({ namespace: name, name: 'default' });
    return true;
  });
}

export interface PodTemplateOptions {
  readonly nodeName?: string;
  readonly nodeSelector?: Record<string, string>;
  readonly priorityClassName?: string;
  readonly terminationGracePeriodSeconds?: number;
  /** kwok deletes the pod this long after its deletion starts (a slow shutdown). */
  readonly deleteDelay?: string;
  /** kwok marks the pod Ready only this long after it is scheduled (a slow start). */
  readonly readyDelay?: string;
  readonly tolerations?: V1PodSpec['tolerations'];
  readonly emptyDir?: boolean;
  readonly annotations?: Record<string, string>;
  /** Spread the app's pods over nodes (topology spread on hostname, maxSkew 1, ScheduleAnyway), as HA apps do. */
  readonly spreadOverNodes?: boolean;
  /** The app label the spread counts (createDeployment sets it). */
  readonly app?: string;
  /** More pod labels (drain rules select by them). */
  readonly labels?: Record<string, string>;
  /** A readiness probe on the container (kwok does not run it; surge before evict asks for one). */
  readonly readinessProbe?: boolean;
  /** Required anti-affinity on the hostname against the app's own pods (one per node). */
  readonly onePerNode?: boolean;
}

/** A Deployment's own settings, beside its pod template's. */
export interface DeploymentOptions extends PodTemplateOptions {
  readonly maxSurge?: number | string;
  readonly maxUnavailable?: number | string;
  /** On the Deployment itself (graceful-node-termination/surge-before-evict, say). */
  readonly deploymentAnnotations?: Record<string, string>;
}

export function podSpec(o: PodTemplateOptions): V1PodSpec {
  return {
    containers: [
      {
        name: 'app',
        image: 'registry.k8s.io/pause:3.10',
        ...(o.readinessProbe
          ? { readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 } }
          : {}),
      },
    ],
    nodeName: o.nodeName,
    nodeSelector: o.nodeSelector,
    priorityClassName: o.priorityClassName,
    terminationGracePeriodSeconds: o.terminationGracePeriodSeconds ?? 30,
    tolerations: o.tolerations,
    volumes: o.emptyDir ? [{ name: 'scratch', emptyDir: {} }] : undefined,
    topologySpreadConstraints:
      o.spreadOverNodes && o.app
        ? [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'ScheduleAnyway',
              labelSelector: { matchLabels: { app: o.app } },
            },
          ]
        : undefined,
    affinity:
      o.onePerNode && o.app
        ? {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: o.app } } },
              ],
            },
          }
        : undefined,
    automountServiceAccountToken: false,
  };
}

export function podAnnotations(o: PodTemplateOptions): Record<string, string> {
  return {
    ...(o.deleteDelay ? { 'pod-delete.stage.kwok.x-k8s.io/delay': o.deleteDelay } : {}),
    ...(o.readyDelay ? { 'pod-ready.stage.kwok.x-k8s.io/delay': o.readyDelay } : {}),
    ...o.annotations,
  };
}

export async function createDeployment(
  a: Admin,
  namespace: string,
  name: string,
  replicas: number,
  o: DeploymentOptions = {},
): Promise<void> {
  const rollingUpdate =
    o.maxSurge !== undefined || o.maxUnavailable !== undefined
      ? { maxSurge: o.maxSurge ?? '25%', maxUnavailable: o.maxUnavailable ?? '25%' }
      : undefined;
  await a.apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name, ...(o.deploymentAnnotations ? { annotations: o.deploymentAnnotations } : {}) },
      spec: {
        replicas,
        ...(rollingUpdate ? { strategy: { type: 'RollingUpdate', rollingUpdate } } : {}),
        selector: { matchLabels: { app: name } },
        // Replace evicted pods at once, like a real rollout would not: we want surge capacity.
        template: {
          metadata: { labels: { ...o.labels, app: name }, annotations: podAnnotations(o) },
          spec: podSpec({ ...o, app: name }),
        },
      },
    },
  });
}

export async function createDaemonSet(
  a: Admin,
  namespace: string,
  name: string,
  o: PodTemplateOptions = {},
): Promise<void> {
  await a.apps.createNamespacedDaemonSet({
    namespace,
    body: {
      metadata: { name },
      spec: {
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { ...o.labels, app: name }, annotations: podAnnotations(o) },
          spec: { ...podSpec(o), tolerations: o.tolerations ?? [{ operator: 'Exists' }] },
        },
      },
    },
  });
}

export async function createPod(a: Admin, namespace: string, name: string, o: PodTemplateOptions = {}): Promise<V1Pod> {
  return a.core.createNamespacedPod({
    namespace,
    body: { metadata: { name, labels: { ...o.labels, app: name }, annotations: podAnnotations(o) }, spec: podSpec(o) },
  });
}

/**
 * A PersistentVolume and its claim, bound ahead by claimRef and volumeName as a provisioner
 * leaves them (the binder confirms it). hostPath: nothing local attaches or detaches it.
 */
export async function createBoundClaim(
  a: Admin,
  namespace: string,
  claim: string,
  pv: string,
  storage = '1Gi',
): Promise<void> {
  await a.core.createPersistentVolume({
    body: {
      metadata: { name: pv },
      spec: {
        capacity: { storage },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        hostPath: { path: `/data/${pv}` },
        claimRef: { namespace, name: claim },
      },
    },
  });
  await a.core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: {
      metadata: { name: claim },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage } },
        volumeName: pv,
        storageClassName: '',
      },
    },
  });
}

/**
 * What the attach-detach controller and a CSI driver leave while a volume is attached to a
 * node: the VolumeAttachment, named as the CSI attacher names it (the volume handle is the PV's
 * name here), and the volume in the node's status.volumesAttached. `inTree`: a volume that is
 * not CSI (no name can be derived): only the cluster's list finds its attachment.
 */
export async function attachVolume(
  a: Admin,
  pv: string,
  node: string,
  attacher = 'ebs.csi.aws.com',
  o: { inTree?: boolean } = {},
): Promise<string> {
  const unique = o.inTree ? `kubernetes.io/aws-ebs/aws://eu-west-1a/vol-${pv}` : csiVolumeName(attacher, pv);
  const name = o.inTree ? `in-tree-${pv}-${node}` : attachmentNameOf(unique, node)!;
  await a.kc.makeApiClient(StorageV1Api).createVolumeAttachment({
    body: { metadata: { name }, spec: { attacher, nodeName: node, source: { persistentVolumeName: pv } } },
  });
  await setVolumesAttached(a, node, (names) => [...names, unique]);
  return name;
}

/** The attacher detached it: the controller drops the volume from the node's status first, then the object goes. */
export async function detachVolume(
  a: Admin,
  pv: string,
  node: string,
  attacher = 'ebs.csi.aws.com',
  o: { inTree?: boolean } = {},
): Promise<void> {
  const unique = o.inTree ? `kubernetes.io/aws-ebs/aws://eu-west-1a/vol-${pv}` : csiVolumeName(attacher, pv);
  await setVolumesAttached(a, node, (names) => names.filter((n) => n !== unique));
  await a.kc
    .makeApiClient(StorageV1Api)
    .deleteVolumeAttachment({ name: o.inTree ? `in-tree-${pv}-${node}` : attachmentNameOf(unique, node)! });
}

async function setVolumesAttached(a: Admin, node: string, change: (names: string[]) => string[]): Promise<void> {
  const current = ((await a.core.readNodeStatus({ name: node })).status?.volumesAttached ?? []).map((v) => v.name);
  const volumesAttached = change(current).map((name) => ({ name, devicePath: '' }));
  a.kubectl(
    'patch',
    'node',
    node,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status: { volumesAttached } }),
  );
}

export async function createPdb(
  a: Admin,
  namespace: string,
  name: string,
  app: string,
  minAvailable: number,
): Promise<void> {
  await a.policy.createNamespacedPodDisruptionBudget({
    namespace,
    body: { metadata: { name }, spec: { minAvailable, selector: { matchLabels: { app } } } },
  });
  // Until the disruption controller has processed it, every eviction is refused (429).
  await until(`PDB ${namespace}/${name} observed`, 30_000, async () => {
    const pdb = await a.policy.readNamespacedPodDisruptionBudget({ namespace, name });
    return pdb.status?.observedGeneration === pdb.metadata?.generation;
  });
}

export async function podsOn(a: Admin, nodeName: string): Promise<V1Pod[]> {
  return (await a.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` })).items;
}

export async function readyReplicas(a: Admin, namespace: string, name: string): Promise<number> {
  return (await a.apps.readNamespacedDeployment({ namespace, name })).status?.readyReplicas ?? 0;
}

export async function waitDeploymentReady(
  a: Admin,
  namespace: string,
  name: string,
  replicas: number,
  timeoutMs = 60_000,
): Promise<void> {
  await until(
    `${namespace}/${name} ${replicas} ready`,
    timeoutMs,
    async () => (await readyReplicas(a, namespace, name)) >= replicas,
  );
}

/** The drainer's Events about an object, in the order they were written. */
export async function eventsFor(
  a: Admin,
  kind: 'Node' | 'Pod',
  name: string,
  namespace = 'default',
): Promise<{ reason: string; message: string; type: string }[]> {
  const list = await a.core.listNamespacedEvent({
    namespace,
    fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}`,
  });
  // Timestamps have second resolution; the resourceVersion (etcd revision) orders exactly.
  return list.items
    .filter((e) => e.source?.component === 'graceful-node-termination')
    .sort((x, y) => Number(x.metadata?.resourceVersion) - Number(y.metadata?.resourceVersion))
    .map((e) => ({ reason: e.reason ?? '', message: e.message ?? '', type: e.type ?? '' }));
}

export interface AuditEntry {
  readonly verb: string;
  readonly user: string;
  readonly groups: readonly string[];
  readonly userAgent: string;
  readonly code: number;
  /** responseStatus.message: why a request failed (a budget's 429 or APF's). */
  readonly message: string;
  readonly resource: string;
  readonly subresource: string | undefined;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly requestURI: string;
  readonly requestObject: unknown;
  /** When the server received the request. */
  readonly receivedMs: number;
  /** When it finished answering (ResponseComplete). */
  readonly atMs: number;
}

/** Audit log entries (ResponseComplete stage) in the order the server finished them. */
export function readAudit(plane: PlaneInfo, filter: (e: AuditEntry) => boolean = () => true): AuditEntry[] {
  let text = '';
  try {
    text = readFileSync(plane.auditLog, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((e) => e.stage === 'ResponseComplete')
    .map((e): AuditEntry => ({
      verb: e.verb,
      user: e.user?.username ?? '',
      groups: e.user?.groups ?? [],
      userAgent: e.userAgent ?? '',
      code: e.responseStatus?.code ?? 0,
      message: e.responseStatus?.message ?? '',
      resource: e.objectRef?.resource ?? '',
      subresource: e.objectRef?.subresource,
      namespace: e.objectRef?.namespace,
      name: e.objectRef?.name,
      requestURI: e.requestURI,
      requestObject: e.requestObject,
      receivedMs: Date.parse(e.requestReceivedTimestamp),
      atMs: Date.parse(e.stageTimestamp),
    }))
    .filter(filter);
}

export const byDrainer = (e: AuditEntry) => e.groups.includes(drainerGroup);

/**
 * A node `<name>-1` (its instance returned) running `replicas` pods of Deployment `name`, and
 * a spare node `<name>-2` for their replacements, cordoned while the pods start so they all
 * land on the first. Both carry the label scenario=<name>; the first also `labels`/`taints`.
 */
export async function nodeWithDeployment(
  a: Admin,
  namespace: string,
  name: string,
  replicas: number,
  o: PodTemplateOptions & {
    labels?: Record<string, string>;
    taints?: { key: string; effect: string; value?: string }[];
  } = {},
): Promise<{ instanceId: string; node: string }> {
  const { labels = {}, taints = [], ...pod } = o;
  await ensureNamespace(a, namespace);
  const instanceId = newInstanceId();
  await createKwokNode(a, `${name}-1`, instanceId, { scenario: name, ...labels }, taints);
  await createKwokNode(a, `${name}-2`, newInstanceId(), { scenario: name });
  await waitNodeReady(a, `${name}-1`);
  await waitNodeReady(a, `${name}-2`);
  a.kubectl('cordon', `${name}-2`);
  await createDeployment(a, namespace, name, replicas, { nodeSelector: { scenario: name }, ...pod });
  await waitDeploymentReady(a, namespace, name, replicas);
  a.kubectl('uncordon', `${name}-2`);
  return { instanceId, node: `${name}-1` };
}

/**
 * Follows an app's pods with a watch and keeps the fewest Ready (and not terminating) pods seen
 * at any instant, and when each pod became Ready or started terminating.
 */
export async function watchReady(
  a: Admin,
  namespace: string,
  app: string,
): Promise<{ min(): number; ready(): number; stop(): void; onChange(listener: (line: string) => void): void }> {
  const pods = new Map<string, V1Pod>();
  const told = new Map<string, string>();
  const listeners: ((line: string) => void)[] = [];
  let min = Number.POSITIVE_INFINITY;
  const isReady = (p: V1Pod) =>
    !p.metadata?.deletionTimestamp &&
    (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);
  const count = () => [...pods.values()].filter(isReady).length;
  const request = await new Watch(a.kc).watch(
    `/api/v1/namespaces/${namespace}/pods`,
    { labelSelector: `app=${app}` },
    (type: string, pod: V1Pod) => {
      const uid = pod.metadata!.uid!;
      if (type === 'DELETED') pods.delete(uid);
      else pods.set(uid, pod);
      const state =
        type === 'DELETED'
          ? 'gone'
          : pod.metadata?.deletionTimestamp
            ? 'terminating'
            : isReady(pod)
              ? `Ready on ${pod.spec?.nodeName}`
              : pod.spec?.nodeName
                ? `starting on ${pod.spec.nodeName}`
                : 'Pending';
      if (told.get(uid) !== state) {
        told.set(uid, state);
        for (const l of listeners) l(`pod ${pod.metadata?.name} ${state} (Ready pods: ${count()})`);
      }
      min = Math.min(min, count());
    },
    () => {},
  );
  await until(`the watch of ${app} sees its pods`, 10_000, async () => pods.size > 0);
  return { min: () => min, ready: count, stop: () => request.abort(), onChange: (l) => void listeners.push(l) };
}

/** A kubeconfig as the drainer: a token minted as the handler mints it (for this cluster unless told), checked by the plane's webhook. */
export async function drainerKubeConfig(
  plane: Pick<PlaneInfo, 'server' | 'caPem'>,
  clusterName: string = testAws.clusterName,
): Promise<KubeConfig> {
  const token = await mintEksToken({
    clusterName,
    region: testAws.region,
    credentials: { accessKeyId: testAws.accessKeyId, secretAccessKey: testAws.secretAccessKey },
  });
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'plane', server: plane.server, caData: Buffer.from(plane.caPem).toString('base64') }],
    users: [{ name: 'drainer', token }],
    contexts: [{ name: 'plane', cluster: 'plane', user: 'drainer' }],
    currentContext: 'plane',
  });
  return kc;
}
