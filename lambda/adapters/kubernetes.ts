// Kubernetes side effects behind the ports: node lookup and patches, a live pod view per
// node (one list, then one watch), evictions, Events.
import {
  ApiException,
  CoreV1Api,
  PatchStrategy,
  ServerConfiguration,
  Watch,
  Observable,
  createConfiguration,
  type KubeConfig,
  type V1Pod,
  type ObservableMiddleware,
} from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { AccessDeniedError, TransientError } from '../errors.js';
import type {
  ClusterEvent,
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

const of = <T>(value: T): Observable<T> => new Observable(Promise.resolve(value));

export const reportingComponent = 'graceful-node-termination';
export const userAgent = `${reportingComponent}/0.1`;
const excludeLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';

export interface KubernetesOptions {
  /** Every request is aborted after this long (watches excepted: they idle-timeout). */
  readonly requestTimeoutMs: number;
  readonly log: Log;
}

export type KubernetesGateway = NodeGateway & PodGateway & EventRecorder;

export function createKubernetesGateway(kc: KubeConfig, options: KubernetesOptions): KubernetesGateway {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  // Built by hand instead of kc.makeApiClient so every call carries our user agent (it
  // shows in the audit log, like EKS's vpcLambda) and a timeout.
  const middleware: ObservableMiddleware = {
    pre: (ctx) => {
      ctx.setHeaderParam('User-Agent', userAgent);
      ctx.setSignal(AbortSignal.timeout(options.requestTimeoutMs));
      return of(ctx);
    },
    post: (res) => of(res),
  };
  const api = new CoreV1Api(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kc },
      middleware: [middleware],
    }),
  );
  const mergePatch = {
    middleware: [
      {
        pre: (ctx: Parameters<ObservableMiddleware['pre']>[0]) => {
          // The client defaults to JSON patch; a merge patch needs this exact header.
          ctx.setHeaderParam('Content-Type', PatchStrategy.MergePatch);
          return of(ctx);
        },
        post: (res: Parameters<ObservableMiddleware['post']>[0]) => of(res),
      },
    ],
    middlewareMergeStrategy: 'append' as const,
  };

  const patchNode = async (name: string, body: object): Promise<PatchResult> => {
    try {
      await api.patchNode({ name, body }, mergePatch);
      return 'patched';
    } catch (error) {
      if (statusOf(error) === 404) return 'node-gone';
      throw classify(error, `patch node ${name}`);
    }
  };

  return {
    async findNodeByInstanceId(instanceId) {
      // Nodes can be field-selected only by name and spec.unschedulable, so list and match
      // spec.providerID (aws:///<az>/<instance-id>): node names need not be the DNS name.
      let cont: string | undefined;
      do {
        const page = await call(`list nodes`, () => api.listNode({ limit: 500, _continue: cont }));
        for (const node of page.items) {
          if (node.spec?.providerID?.endsWith(`/${instanceId}`)) {
            return {
              name: node.metadata?.name ?? '',
              uid: node.metadata?.uid ?? '',
              providerId: node.spec.providerID,
              unschedulable: node.spec.unschedulable === true,
              labels: node.metadata?.labels ?? {},
            } satisfies NodeInfo;
          }
        }
        cont = page.metadata?._continue || undefined;
      } while (cont);
      return undefined;
    },

    excludeFromLoadBalancers: (name) => patchNode(name, { metadata: { labels: { [excludeLabel]: 'true' } } }),

    cordon: (name) => patchNode(name, { spec: { unschedulable: true } }),

    watchPodsOnNode: (nodeName) => openPodWatch(kc, api, nodeName, options.log),

    async evictPod(pod) {
      try {
        await api.createNamespacedPodEviction({
          name: pod.name,
          namespace: pod.namespace,
          body: {
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name: pod.name, namespace: pod.namespace },
            // Never evict a same-named replacement: the server answers 409 if the UID moved on.
            deleteOptions: { preconditions: { uid: pod.uid } },
          },
        });
        return { kind: 'evicted' };
      } catch (error) {
        return mapEvictionError(error, `${pod.namespace}/${pod.name}`);
      }
    },

    async record(event) {
      try {
        await api.createNamespacedEvent({ namespace: event.regarding.namespace ?? 'default', body: toCoreEvent(event) });
      } catch (error) {
        options.log.warn('could not write Kubernetes Event', { reason: event.reason, error: describe(error) });
      }
    },
  };
}

/**
 * Maps an eviction answer to a value. Facts from the API server's eviction handler:
 * https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/registry/core/pod/storage/eviction.go
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
  if (code === 404 || code === 409) return { kind: 'gone' };
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
    throw new AccessDeniedError(`evicting pod ${pod} was forbidden: ${message}`, 403, { cause: error });
  }
  if (code === 401) throw new AccessDeniedError(`evicting pod ${pod}: unauthorized (${message})`, 401, { cause: error });
  return blocked('server-error');
}

interface StatusBody {
  message?: string;
  reason?: string;
  details?: {
    name?: string;
    kind?: string;
    retryAfterSeconds?: number;
    causes?: { reason?: string; type?: string; message?: string }[];
  };
}

function statusOf(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  const code = (error as { statusCode?: unknown; code?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

function statusBody(error: unknown): StatusBody | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const body: unknown = error.body;
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as StatusBody;
    } catch {
      return { message: body };
    }
  }
  return typeof body === 'object' && body !== null ? (body as StatusBody) : undefined;
}

function retryAfterHeader(error: unknown): number | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const headers = error.headers as Record<string, string> | undefined;
  const raw = headers?.['retry-after'] ?? headers?.['Retry-After'];
  const n = raw === undefined ? NaN : Number(raw);
  return Number.isFinite(n) ? n : undefined;
}

function describe(error: unknown): string {
  if (error instanceof ApiException) return `HTTP ${error.code}: ${statusBody(error)?.message ?? ''}`.trim();
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** 401/403 are setup errors, everything else is worth retrying. */
function classify(error: unknown, what: string): Error {
  const code = statusOf(error);
  if (code === 401 || code === 403) {
    return new AccessDeniedError(`${what}: ${code === 401 ? 'unauthorized' : 'forbidden'} (${describe(error)})`, code, { cause: error });
  }
  return new TransientError(`${what} failed: ${describe(error)}`, { cause: error });
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
    annotations: pod.metadata?.annotations ?? {},
    priorityClassName: pod.spec?.priorityClassName,
    deletionTimestamp: pod.metadata?.deletionTimestamp ? new Date(pod.metadata.deletionTimestamp) : undefined,
    tolerations: (pod.spec?.tolerations ?? []).map((t) => ({ key: t.key, operator: t.operator, effect: t.effect })),
  };
}

/** One list, then a watch resumed from the last resourceVersion; re-lists only on 410 Gone. */
async function openPodWatch(kc: KubeConfig, api: CoreV1Api, nodeName: string, log: Log): Promise<PodWatch> {
  const fieldSelector = `spec.nodeName=${nodeName}`;
  const pods = new Map<string, PodInfo>();
  let resourceVersion = '';
  let waiters: (() => void)[] = [];
  let closed = false;
  let abort: AbortController | undefined;
  let failures = 0;
  const notify = () => {
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };

  const list = async () => {
    pods.clear();
    let cont: string | undefined;
    do {
      const page = await call(`list pods on node ${nodeName}`, () =>
        api.listPodForAllNamespaces({ fieldSelector, limit: 500, _continue: cont }),
      );
      for (const pod of page.items) pods.set(pod.metadata?.uid ?? '', toPodInfo(pod));
      resourceVersion = page.metadata?.resourceVersion ?? '';
      cont = page.metadata?._continue || undefined;
    } while (cont);
  };

  const watch = async (): Promise<void> => {
    if (closed) return;
    let gone = false;
    abort = await new Watch(kc).watch(
      '/api/v1/pods',
      // The server closes the watch cleanly before the client's 30 s idle timeout.
      { fieldSelector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 25 },
      (type, obj: V1Pod & { code?: number }) => {
        if (type === 'ERROR') {
          if (obj.code === 410) gone = true;
          return;
        }
        failures = 0;
        if (obj.metadata?.resourceVersion) resourceVersion = obj.metadata.resourceVersion;
        if (type === 'BOOKMARK') return;
        const uid = obj.metadata?.uid ?? '';
        if (type === 'DELETED') pods.delete(uid);
        else pods.set(uid, toPodInfo(obj));
        notify();
      },
      (err: unknown) => {
        if (closed) return;
        if (err) {
          failures++;
          log.debug('pod watch ended, resuming', { error: describe(err), failures });
        }
        const resume = async () => {
          if (closed) return;
          try {
            if (gone || statusOf(err) === 410) {
              await list();
              notify();
            }
            await watch();
          } catch (error) {
            failures++;
            log.warn('pod watch could not resume, retrying', { error: describe(error), failures });
            setTimeout(() => void resume(), Math.min(5000, 200 * 2 ** failures)).unref();
          }
        };
        setTimeout(() => void resume(), err ? Math.min(5000, 100 * 2 ** failures) : 0).unref();
      },
    );
  };

  await list();
  await watch();
  return {
    current: () => [...pods.values()],
    changed: (timeoutMs) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
    close: () => {
      closed = true;
      abort?.abort();
      notify();
    },
  };
}

function toCoreEvent(event: ClusterEvent) {
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
