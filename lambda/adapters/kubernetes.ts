// Kubernetes side effects behind the ports: node lookup and patches, a live pod view per
// node (one list, then one watch), evictions, Events.
import type { CoreV1Event, V1Eviction, V1Node, V1Pod } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { AccessDeniedError, TransientError } from '../errors.js';
import { drainAnnotation, excludeFromLoadBalancersLabel, handOffAnnotation, outdatedTaintKey, refreshCordonedLabel, refreshLabel } from '../ports.js';
import type {
  ClusterEvent,
  DrainRecord,
  EventRecorder,
  EvictionResult,
  Log,
  NodeGateway,
  NodeInfo,
  PatchResult,
  PodGateway,
  PodInfo,
  PodWatch,
} from '../ports.js';
import { createEventQueue } from './event-queue.js';
import { instanceMatches, type NodeLookup, type NodeReader } from '../node-lookup.js';
import { KubeApiError, createKubeHttp, type KubeEndpoint, type KubeHttp, type StatusBody } from './kube-http.js';

export const reportingComponent = 'graceful-node-termination';
/** Shows in the API server's audit log, as EKS's own drainer shows as vpcLambda. */
export const userAgent = `${reportingComponent}/0.1`;
const mergePatch = 'application/merge-patch+json';
const jsonPatch = 'application/json-patch+json';
/** A key as a JSON pointer segment (RFC 6901: "~" is "~0", "/" is "~1"). */
const pointer = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * Lists as they come over the wire. client-node's model types are used for the items, but
 * its list metadata names `continue` as `_continue` (it renames reserved words when it
 * deserializes, which this client does not do).
 */
interface WireList<T> {
  readonly metadata?: { readonly continue?: string; readonly resourceVersion?: string };
  readonly items: readonly T[];
}

export interface KubernetesOptions {
  /** Every request is aborted after this long (watches excepted: they idle-timeout). */
  readonly requestTimeoutMs: number;
  readonly log: Log;
}

/** What the Kubernetes adapter offers for nodes; node-lookup.ts turns it into the NodeGateway. */
export type KubernetesGateway = NodeReader & Omit<NodeGateway, keyof NodeLookup> & PodGateway & Required<EventRecorder>;

/** Nodes per page when a lookup must scan: one page in memory at a time (~1.5 MB of JSON). */
export const scanPageSize = 100;
/** A launch watches its node this long per request: one watch covers a typical join. */
export const nodeWatchTimeoutSeconds = 240;

export function createKubernetesGateway(endpoint: KubeEndpoint, options: KubernetesOptions): KubernetesGateway {
  const kube = createKubeHttp(endpoint, {
    userAgent,
    timeoutMs: options.requestTimeoutMs,
    onRetry: (what, attempt, error, delayMs) => options.log.info('retrying Kubernetes request', { request: what, attempt, error: describe(error), delayMs }),
  });
  // Events go through a bounded queue with one writer (so they land in the order they were
  // made): writing one (and retrying it under 429) never holds
  // an eviction worker or a phase up; on overload the oldest wait and new ones are dropped.
  const events = createEventQueue(
    async (event: ClusterEvent) => {
      const namespace = event.regarding.namespace ?? 'default';
      try {
        // Each Event has a unique name, so a retried create is at worst a 409.
        await kube.request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, { body: toCoreEvent(event), retry: true });
      } catch (error) {
        options.log.warn('could not write Kubernetes Event', { reason: event.reason, error: describe(error) });
      }
    },
    { capacity: 200, concurrency: 1, onDrop: (event, dropped) => options.log.warn('Kubernetes Event dropped: too many queued', { reason: event.reason, dropped }) },
  );

  const patchNode = async (name: string, body: object): Promise<PatchResult> => {
    try {
      // A JSON merge patch: it sets one label or field and leaves the rest alone.
      await kube.request<V1Node>('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}`, { body, contentType: mergePatch });
      return 'patched';
    } catch (error) {
      if (statusOf(error) === 404) return 'node-gone';
      // Only a patch that names a resourceVersion can conflict: the node changed since it was read.
      if (statusOf(error) === 409) return 'changed';
      throw classify(error, `patch node ${name}`);
    }
  };

  /** Every page of a node list, handed over one page at a time (stops when onPage says so). */
  const listNodes = async (query: Record<string, string | number | boolean>, what: string, onPage: (items: readonly V1Node[]) => boolean | void, compressed = false): Promise<void> => {
    let cont: string | undefined;
    do {
      const page = await call(what, () => kube.request<WireList<V1Node>>('GET', '/api/v1/nodes', { query: { ...query, continue: cont }, compressed }));
      if (onPage(page.items) === true) return;
      cont = page.metadata?.continue || undefined;
    } while (cont);
  };

  return {
    async getNode(name) {
      try {
        return toNodeInfo(await kube.request<V1Node>('GET', `/api/v1/nodes/${encodeURIComponent(name)}`));
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw classify(error, `get node ${name}`);
      }
    },

    async scanForInstance(instanceId) {
      // Nodes can be field-selected only by name and spec.unschedulable, so this lists and
      // matches spec.providerID (aws:///<az>/<instance-id>). Only when the node is not under
      // its EC2 name (node-lookup.ts). Small pages, so memory holds one page and not the
      // cluster; gzip (kube-http) cuts the bytes on the wire ~5x for node objects.
      let found: V1Node | undefined;
      await listNodes({ limit: scanPageSize }, 'list nodes', (items) => {
        found = items.find((n) => n.spec?.providerID !== undefined && instanceMatches(n.spec.providerID, instanceId));
        return found !== undefined;
      }, true);
      return found === undefined ? undefined : toNodeInfo(found);
    },

    async watchNodeNamed(name) {
      const watch = await openListWatch(kube, {
        what: `node ${name}`,
        path: '/api/v1/nodes',
        fieldSelector: `metadata.name=${name}`,
        timeoutSeconds: nodeWatchTimeoutSeconds,
        toInfo: toNodeInfo,
        log: options.log,
      });
      return { current: () => watch.current()[0], changed: watch.changed, close: watch.close };
    },

    mark: (name, marks, ifResourceVersion) =>
      patchNode(name, {
        metadata: {
          ...(ifResourceVersion !== undefined ? { resourceVersion: ifResourceVersion } : {}),
          ...(marks.excludeFromLoadBalancers ? { labels: { [excludeFromLoadBalancersLabel]: 'true' } } : {}),
          annotations: { [drainAnnotation]: formatDrainRecord(marks.drain) },
        },
        ...(marks.cordon ? { spec: { unschedulable: true } } : {}),
      }),

    unmark: (name, record) =>
      patchNode(name, {
        metadata: {
          ...(record.set.includes('exclude-from-load-balancers') ? { labels: { [excludeFromLoadBalancersLabel]: null } } : {}),
          annotations: { [drainAnnotation]: null, [handOffAnnotation]: null },
        },
        // null removes the field: unschedulable as if never set, as `kubectl uncordon` leaves it.
        ...(record.set.includes('cordon') ? { spec: { unschedulable: null } } : {}),
      }),

    async claimHandOff(name, expected, next) {
      // Read, compare, then write with the resourceVersion read: the server refuses (409) a
      // write based on a stale read, and we compare again. Unrelated changes to the node
      // (status updates) only cost a retry.
      for (let attempt = 0; attempt < 8; attempt++) {
        let node: V1Node;
        try {
          node = await kube.request<V1Node>('GET', `/api/v1/nodes/${encodeURIComponent(name)}`);
        } catch (error) {
          if (statusOf(error) === 404) return 'node-gone';
          throw classify(error, `get node ${name}`);
        }
        if (node.metadata?.annotations?.[handOffAnnotation] !== expected) return 'lost';
        const body = { metadata: { resourceVersion: node.metadata?.resourceVersion, annotations: { [handOffAnnotation]: next ?? null } } };
        try {
          await kube.request<V1Node>('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}`, { body, contentType: mergePatch });
          return 'claimed';
        } catch (error) {
          if (statusOf(error) === 404) return 'node-gone';
          if (statusOf(error) !== 409) throw classify(error, `annotate node ${name}`);
        }
      }
      throw new TransientError(`annotate node ${name}: the node kept changing; giving up for now`);
    },

    async markOutdated(node, marks) {
      // A JSON patch, so our taint is appended to the node's taints (a merge patch would replace
      // them all), conditional on the node as read (the replaced resourceVersion: 409 if it
      // moved on). What we set is readable from the node itself: the taint is ours by its key
      // and value (the refresh id), the cordon by the cordoned label beside the refresh label.
      const labels = { [refreshLabel]: marks.refreshId, ...(marks.cordon ? { [refreshCordonedLabel]: 'true' } : {}) };
      const ops: object[] = [
        { op: 'replace', path: '/metadata/resourceVersion', value: node.resourceVersion },
        ...(Object.keys(node.labels).length > 0
          ? Object.entries(labels).map(([k, v]) => ({ op: 'add', path: `/metadata/labels/${pointer(k)}`, value: v }))
          : [{ op: 'add', path: '/metadata/labels', value: labels }]),
      ];
      if (marks.taint) {
        const taint = { key: outdatedTaintKey, value: marks.refreshId, effect: 'PreferNoSchedule' };
        ops.push(node.taints.length > 0 ? { op: 'add', path: '/spec/taints/-', value: taint } : { op: 'add', path: '/spec/taints', value: [taint] });
      }
      if (marks.cordon) ops.push({ op: 'add', path: '/spec/unschedulable', value: true });
      try {
        await kube.request('PATCH', `/api/v1/nodes/${encodeURIComponent(node.name)}`, { body: ops, contentType: jsonPatch });
        return 'patched';
      } catch (error) {
        if (statusOf(error) === 404) return 'node-gone';
        if (statusOf(error) === 409) return 'changed';
        throw classify(error, `mark node ${node.name} outdated`);
      }
    },

    async unmarkOutdated(refreshId) {
      const undone: { node: string; uid: string; removed: string[] }[] = [];
      const marked: V1Node[] = [];
      await listNodes({ labelSelector: `${refreshLabel}=${refreshId}`, limit: 500 }, 'list nodes of the refresh', (items) => void marked.push(...items));
      for (const listed of marked) {
        const name = listed.metadata?.name ?? '';
        // The listed object first; after a conflict (the node moved on), a fresh read.
        let node: V1Node | undefined = listed;
        for (let attempt = 0; node !== undefined && attempt < 5; attempt++) {
          const removed: string[] = [];
          const ops: object[] = [
            { op: 'replace', path: '/metadata/resourceVersion', value: node.metadata?.resourceVersion },
            { op: 'remove', path: `/metadata/labels/${pointer(refreshLabel)}` },
          ];
          // Only our taint, as this refresh set it (tested in place: indexes are positional).
          const index = (node.spec?.taints ?? []).findIndex((t) => t.key === outdatedTaintKey && t.value === refreshId);
          if (index >= 0) {
            ops.push({ op: 'test', path: `/spec/taints/${index}/key`, value: outdatedTaintKey }, { op: 'remove', path: `/spec/taints/${index}` });
            removed.push(`taint ${outdatedTaintKey}:PreferNoSchedule`);
          }
          if (node.metadata?.labels?.[refreshCordonedLabel] !== undefined) {
            ops.push({ op: 'remove', path: `/metadata/labels/${pointer(refreshCordonedLabel)}` });
            // A node a drain of ours is taking down keeps its cordon: the drain owns it now.
            if (node.spec?.unschedulable === true && node.metadata?.annotations?.[drainAnnotation] === undefined) {
              ops.push({ op: 'remove', path: '/spec/unschedulable' });
              removed.push('cordon');
            }
          }
          try {
            await kube.request('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}`, { body: ops, contentType: jsonPatch });
            undone.push({ node: name, uid: node.metadata?.uid ?? '', removed });
            break;
          } catch (error) {
            if (statusOf(error) === 404) break;
            if (statusOf(error) !== 409) throw classify(error, `unmark node ${name}`);
          }
          node = await kube.request<V1Node>('GET', `/api/v1/nodes/${encodeURIComponent(name)}`).catch((error: unknown) => {
            if (statusOf(error) === 404) return undefined;
            throw classify(error, `get node ${name}`);
          });
        }
      }
      return undone;
    },

    watchPodsOnNode: (nodeName) => openPodWatch(kube, nodeName, options.log),

    async evictPod(pod) {
      const body: V1Eviction = {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: pod.name, namespace: pod.namespace },
        // Never evict a same-named replacement: the server answers 409 if the UID moved on.
        deleteOptions: { preconditions: { uid: pod.uid } },
      };
      try {
        await kube.request('POST', `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}/eviction`, { body });
        return { kind: 'evicted' };
      } catch (error) {
        return mapEvictionError(error, `${pod.namespace}/${pod.name}`);
      }
    },

    async deletePod(pod, gracePeriodSeconds) {
      const body = { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds, preconditions: { uid: pod.uid } };
      let answer: V1Pod | undefined;
      try {
        // The grace period also goes in the query, where the audit log shows it.
        answer = await kube.request<V1Pod>('DELETE', `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}`, {
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
    },

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
          const reason = scheduled?.status === 'False' ? `${scheduled.reason ?? 'Unschedulable'}: ${scheduled.message ?? ''}`.trim() : 'scheduled, not running yet';
          return { pod: `${p.metadata?.namespace}/${p.metadata?.name}`, reason };
        });
    },

    record: async (event) => events.push(event),
    flush: (timeoutMs) => events.flush(timeoutMs),
  };
}

export function toNodeInfo(node: V1Node): NodeInfo {
  return {
    name: node.metadata?.name ?? '',
    uid: node.metadata?.uid ?? '',
    providerId: node.spec?.providerID ?? '',
    unschedulable: node.spec?.unschedulable === true,
    labels: node.metadata?.labels ?? {},
    ready: node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    taints: (node.spec?.taints ?? []).map((t) => ({ key: t.key, effect: t.effect })),
    handOff: node.metadata?.annotations?.[handOffAnnotation],
    drain: parseDrainRecord(node.metadata?.annotations?.[drainAnnotation]),
    resourceVersion: node.metadata?.resourceVersion,
  };
}

/** The drain record as stored on the node; anything unreadable is treated as absent. */
export function parseDrainRecord(raw: string | undefined): DrainRecord | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as { token?: unknown; startedAt?: unknown; set?: unknown; markedBy?: unknown };
    const startedAtMs = typeof v.startedAt === 'string' ? Date.parse(v.startedAt) : Number.NaN;
    if (typeof v.token !== 'string' || Number.isNaN(startedAtMs)) return undefined;
    const set = Array.isArray(v.set) ? v.set.filter((m): m is DrainRecord['set'][number] => m === 'exclude-from-load-balancers' || m === 'cordon') : [];
    return { token: v.token, startedAtMs, set, ...(typeof v.markedBy === 'string' ? { markedBy: v.markedBy } : {}) };
  } catch {
    return undefined;
  }
}

export function formatDrainRecord(record: DrainRecord): string {
  return JSON.stringify({ token: record.token, startedAt: new Date(record.startedAtMs).toISOString(), set: record.set, ...(record.markedBy ? { markedBy: record.markedBy } : {}) });
}

/**
 * Maps an eviction answer to a value. Facts from the API server's eviction handler:
 * https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/registry/core/pod/storage/eviction.go
 * - 429 with a DisruptionBudget cause: the budget allows no disruption now (or is not yet
 *   processed); 500 "more than one PodDisruptionBudget"; 403 on a poddisruptionbudget: the
 *   budget is in a bad state.
 * - 409 is two different things. The store's precondition check answers "Precondition
 *   failed: UID in precondition" when the name now belongs to another pod: that pod is gone.
 *   But the handler retries its own conflicts on the budget's status (20 x 500 ms) and, when
 *   they never stop, client-go's retry.OnError hands back the last conflict, a 409 about
 *   poddisruptionbudgets: the pod is still there and must be evicted again.
 * - 403 is ours only when RBAC says so ("User ... cannot create resource ..."). An admission
 *   webhook, a ValidatingAdmissionPolicy or a policy engine denies one pod: blocked, retried.
 * - 401 reaches here only after the HTTP client minted a fresh token and tried again.
 */
export function mapEvictionError(error: unknown, pod: string): EvictionResult {
  const code = statusOf(error);
  const status = statusBody(error);
  const message = status?.message ?? describe(error);
  const causes = status?.details?.causes ?? [];
  const retryAfterSeconds = status?.details?.retryAfterSeconds ?? retryAfterHeader(error);
  const blocked = (reason: Extract<EvictionResult, { kind: 'blocked' }>['reason'], budgetName?: string): EvictionResult => ({
    kind: 'blocked',
    reason,
    message: [message, ...causes.map((c) => c.message ?? '')].filter(Boolean).join(' '),
    retryAfterSeconds: retryAfterSeconds || undefined,
    budgetName,
  });
  if (code === 404) return { kind: 'gone' };
  if (code === 409) {
    if (isUidPreconditionFailure(status)) return { kind: 'gone' };
    return blocked('conflict', /poddisruptionbudget/i.test(status?.details?.kind ?? '') ? status?.details?.name : undefined);
  }
  if (code === 429) {
    const budgetCause = causes.find((c) => c.reason === 'DisruptionBudget' || c.type === 'DisruptionBudget');
    if (budgetCause) return blocked('disruption-budget', /disruption budget (\S+)/.exec(budgetCause.message ?? '')?.[1]);
    return blocked('throttled');
  }
  if (code === 500 && /more than one PodDisruptionBudget/i.test(message)) return blocked('multiple-budgets');
  if (code === 403) {
    if (causes.some((c) => c.reason === 'NamespaceTerminating' || c.type === 'NamespaceTerminating')) {
      return blocked('namespace-terminating');
    }
    // The eviction handler also answers 403 for a budget in a bad state (negative
    // disruptionsAllowed, too many unconfirmed evictions): a budget problem, not RBAC.
    if (status?.details?.kind === 'poddisruptionbudget') return blocked('disruption-budget', status.details.name);
    if (isRbacDenial(message)) throw new AccessDeniedError(`evicting pod ${pod} was forbidden: ${message}`, 403, { cause: error });
    return blocked('admission-denied');
  }
  if (code === 401) return blocked('unauthorized');
  // Admission can also answer 400 or 422 (a webhook's own code, a policy's reason: Invalid).
  if ((code === 400 || code === 422) && isAdmissionDenial(message)) return blocked('admission-denied');
  return blocked('server-error');
}

/** The RBAC authorizer's wording: `User "x" cannot create resource "pods/eviction" in API group ""...`. */
export function isRbacDenial(message: string): boolean {
  return /\bcannot [a-z]+ resource "/i.test(message);
}

function isAdmissionDenial(message: string): boolean {
  return /admission webhook .* denied|ValidatingAdmissionPolicy .* denied|denied the request|denied request/i.test(message);
}

/** The store's "Precondition failed: UID in precondition: ..., UID in object meta: ..." (a pods 409). */
function isUidPreconditionFailure(status: StatusBody | undefined): boolean {
  const kind = status?.details?.kind;
  return (kind === undefined || kind === 'pods') && /UID in precondition/i.test(status?.message ?? '');
}

function statusOf(error: unknown): number | undefined {
  return error instanceof KubeApiError ? error.statusCode : undefined;
}

function statusBody(error: unknown): StatusBody | undefined {
  return error instanceof KubeApiError ? error.status : undefined;
}

function retryAfterHeader(error: unknown): number | undefined {
  if (!(error instanceof KubeApiError)) return undefined;
  const n = Number(error.headers['retry-after']);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

function describe(error: unknown): string {
  if (error instanceof KubeApiError) return `HTTP ${error.statusCode}: ${error.status?.message ?? ''}`.trim();
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * Only our own RBAC denial is a setup error. A 401 (after a fresh token: an access entry
 * still propagating) and a 403 from admission are worth another try, so transient.
 */
function classify(error: unknown, what: string): Error {
  const code = statusOf(error);
  if (code === 403 && isRbacDenial(statusBody(error)?.message ?? '')) {
    return new AccessDeniedError(`${what}: forbidden (${describe(error)})`, code, { cause: error });
  }
  const hint = code === 401 ? ' (unauthorized even with a fresh token; access may still be propagating)' : code === 403 ? ' (denied, not by RBAC: admission)' : '';
  return new TransientError(`${what} failed: ${describe(error)}${hint}`, { cause: error });
}

async function call<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw classify(error, what);
  }
}

export function toPodInfo(pod: V1Pod): PodInfo {
  const controller = pod.metadata?.ownerReferences?.find((o) => o.controller);
  return {
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    phase: pod.status?.phase ?? 'Unknown',
    controllerKind: controller?.kind,
    controllerUid: controller?.uid,
    annotations: pod.metadata?.annotations ?? {},
    priorityClassName: pod.spec?.priorityClassName,
    deletionTimestamp: pod.metadata?.deletionTimestamp ? new Date(pod.metadata.deletionTimestamp) : undefined,
    tolerations: (pod.spec?.tolerations ?? []).map((t) => ({ key: t.key, operator: t.operator, effect: t.effect })),
    terminationGracePeriodSeconds: pod.spec?.terminationGracePeriodSeconds,
    finalizers: pod.metadata?.finalizers ?? [],
  };
}

/** What the server is asked to keep a quiet watch open for (kube.watch idles out later). */
export const watchTimeoutSeconds = 25;

interface ListWatchOptions<T> {
  /** For messages: "pods on node x", "node x". */
  readonly what: string;
  readonly path: string;
  readonly fieldSelector: string;
  /** What the server is asked to keep a quiet watch open for (kube.watch idles out later). */
  readonly timeoutSeconds: number;
  readonly toInfo: (object: never) => T;
  readonly log: Log;
}

interface ListWatch<T> {
  /** The objects as last seen. Throws the last error while the view cannot be resumed. */
  current(): T[];
  changed(timeoutMs: number): Promise<void>;
  close(): void;
}

/**
 * One list, then a watch resumed from the last resourceVersion; re-lists only on 410 Gone.
 * The objects are keyed by UID. A failure to resume is retried with backoff; until it
 * succeeds, current() throws it (no answer is not an empty answer).
 */
async function openListWatch<T>(kube: KubeHttp, o: ListWatchOptions<T>): Promise<ListWatch<T>> {
  const { fieldSelector, what, log } = o;
  const toInfo = o.toInfo as (object: unknown) => T;
  const objects = new Map<string, T>();
  let resourceVersion = '';
  let waiters: (() => void)[] = [];
  // Changes counted, so a change that arrives between two changed() calls still wakes.
  let version = 0;
  let seen = 0;
  let closed = false;
  let handle: { abort(): void } | undefined;
  let failures = 0;
  let broken: Error | undefined;
  const notify = () => {
    version++;
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };

  const list = async () => {
    const next = new Map<string, T>();
    let cont: string | undefined;
    do {
      const page = await call(`list ${what}`, () =>
        kube.request<WireList<{ metadata?: { uid?: string } }>>('GET', o.path, { query: { fieldSelector, limit: 500, continue: cont } }),
      );
      for (const item of page.items) next.set(item.metadata?.uid ?? '', toInfo(item));
      resourceVersion = page.metadata?.resourceVersion ?? '';
      cont = page.metadata?.continue || undefined;
    } while (cont);
    objects.clear();
    for (const [uid, item] of next) objects.set(uid, item);
  };

  const watch = () => {
    if (closed) return;
    let gone = false;
    handle = kube.watch(
      o.path,
      // The server ends the watch cleanly after timeoutSeconds and we resume from here; our
      // own idle timeout (kube.watch) is longer, so a quiet watch is never torn down early.
      { fieldSelector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: o.timeoutSeconds },
      ({ type, object }) => {
        const obj = object as { code?: number; metadata?: { uid?: string; resourceVersion?: string } };
        if (type === 'ERROR') {
          if (obj.code === 410) gone = true;
          return;
        }
        failures = 0;
        if (broken !== undefined) {
          broken = undefined;
          notify();
        }
        if (obj.metadata?.resourceVersion) resourceVersion = obj.metadata.resourceVersion;
        if (type === 'BOOKMARK') return;
        const uid = obj.metadata?.uid ?? '';
        if (type === 'DELETED') objects.delete(uid);
        else objects.set(uid, toInfo(obj));
        notify();
      },
      (error) => {
        if (closed) return;
        if (error) {
          failures++;
          log.debug('watch ended, resuming', { watch: what, error: describe(error), failures });
        } else {
          // A clean end is the server's timeout: resume at once, no backoff to grow.
          failures = 0;
        }
        const resume = async () => {
          if (closed) return;
          try {
            if (gone || statusOf(error) === 410) {
              await list();
              notify();
            }
            watch();
          } catch (e) {
            failures++;
            broken = e instanceof Error ? e : new Error(String(e));
            notify();
            log.warn('watch could not resume, retrying', { watch: what, error: describe(e), failures });
            setTimeout(() => void resume(), Math.min(5000, 200 * 2 ** failures)).unref();
          }
        };
        setTimeout(() => void resume(), error ? Math.min(5000, 100 * 2 ** failures) : 0).unref();
      },
    );
  };

  await list();
  watch();
  return {
    current: () => {
      if (broken !== undefined) throw broken;
      return [...objects.values()];
    },
    changed: async (timeoutMs) => {
      if (version === seen && !closed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, timeoutMs);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      seen = version;
    },
    close: () => {
      closed = true;
      handle?.abort();
      notify();
    },
  };
}

/** The pods bound to one node. Never throws from current(): the drain keeps its last view. */
async function openPodWatch(kube: KubeHttp, nodeName: string, log: Log): Promise<PodWatch> {
  const watch = await openListWatch(kube, {
    what: `pods on node ${nodeName}`,
    path: '/api/v1/pods',
    fieldSelector: `spec.nodeName=${nodeName}`,
    timeoutSeconds: watchTimeoutSeconds,
    toInfo: toPodInfo,
    log,
  });
  let last: PodInfo[] = [];
  return {
    current: () => {
      try {
        last = watch.current();
      } catch {
        /* resuming: the last view stands, as before the watch broke */
      }
      return last;
    },
    changed: watch.changed,
    close: watch.close,
  };
}

function toCoreEvent(event: ClusterEvent): CoreV1Event {
  const now = new Date();
  const r = event.regarding;
  return {
    metadata: {
      name: `${r.name}.${randomBytes(8).toString('hex')}`,
      namespace: r.namespace ?? 'default',
    },
    involvedObject: { apiVersion: 'v1', kind: r.kind, name: r.name, namespace: r.namespace, uid: r.uid },
    type: event.type,
    reason: event.reason,
    message: event.message,
    source: { component: reportingComponent },
    reportingComponent,
    reportingInstance: process.env['AWS_LAMBDA_FUNCTION_NAME'] ?? reportingComponent,
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}
