// The soak's eyes on the cluster, from outside the drainer: the run's pods (bound where, Ready
// when, deleted and gone when), its nodes (cordoned when, gone when) and the drainer's Events,
// each followed by a watch that lists again and resumes whenever it ends.
import { Watch, type CoreV1Event, type V1Node, type V1Pod } from '@kubernetes/client-node';
import type { Admin } from '../cluster/kube.js';
import type { ClusterEventRecord, NodeRecord, NodeState, PodRecord } from './observations.js';

const lifecycleConditions = new Set(['MaintenancePlanned', 'DrainInProgress', 'Drained']);

export function nodeState(node: V1Node): NodeState {
  return {
    unschedulable: node.spec?.unschedulable === true,
    labels: { ...node.metadata?.labels },
    annotations: { ...node.metadata?.annotations },
    taints: (node.spec?.taints ?? []).map((t) => ({ key: t.key, value: t.value, effect: t.effect })),
    conditions: (node.status?.conditions ?? [])
      .filter((c) => lifecycleConditions.has(c.type) && c.status === 'True')
      .map((c) => c.type),
  };
}

type Item = { metadata?: { resourceVersion?: string } };

/** Lists, then watches from the list's version; lists again whenever the watch ends, until stopped. */
function follow<T extends Item>(
  a: Admin,
  path: string,
  list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>,
  on: (type: 'ADDED' | 'MODIFIED' | 'DELETED', item: T) => void,
  relisted: (items: T[]) => void,
): () => void {
  let stopped = false;
  let abort: AbortController | undefined;
  const loop = async () => {
    while (!stopped) {
      try {
        const listed = await list();
        relisted(listed.items);
        await new Promise<void>((resolve) => {
          void new Watch(a.kc)
            .watch(
              path,
              { resourceVersion: listed.metadata?.resourceVersion, allowWatchBookmarks: 'false' },
              (type: string, item: T) => {
                if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') on(type, item);
              },
              () => resolve(),
            )
            .then(
              (controller) => (abort = controller),
              () => resolve(),
            );
        });
      } catch {
        // The API server may be busy; list again shortly.
      }
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  void loop();
  return () => {
    stopped = true;
    abort?.abort();
  };
}

export class Recorder {
  readonly pods = new Map<string, PodRecord>();
  readonly nodes = new Map<string, NodeRecord>();
  readonly events: ClusterEventRecord[] = [];
  private readonly stops: (() => void)[] = [];
  private readonly seenEvents = new Set<string>();

  constructor(
    private readonly a: Admin,
    private readonly namespace: string,
    private readonly now: () => number,
  ) {}

  start(): void {
    const a = this.a;
    const ns = this.namespace;
    this.stops.push(
      follow<V1Pod>(
        a,
        `/api/v1/namespaces/${ns}/pods`,
        () => a.core.listNamespacedPod({ namespace: ns }),
        (type, pod) => this.pod(type, pod),
        (items) => this.relistPods(items),
      ),
      follow<V1Node>(
        a,
        '/api/v1/nodes',
        () => a.core.listNode(),
        (type, node) => this.node(type, node),
        (items) => {
          const names = new Set(items.map((n) => n.metadata?.name));
          for (const r of this.nodes.values())
            if (!names.has(r.name) && r.deletedMs === undefined) r.deletedMs = this.now();
          for (const n of items) this.node('MODIFIED', n);
        },
      ),
      ...['default', ns].map((where) =>
        follow<CoreV1Event>(
          a,
          `/api/v1/namespaces/${where}/events`,
          () => a.core.listNamespacedEvent({ namespace: where }),
          (type, event) => type !== 'DELETED' && this.event(event),
          (items) => this.relistEvents(items),
        ),
      ),
    );
  }

  /** A node of the run, as it is once Ready (its state before anything happened to it). */
  addNode(name: string, instanceId: string, group: string, initial: NodeState): void {
    this.nodes.set(name, { name, instanceId, group, initial, cordons: [] });
  }

  private pod(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: V1Pod): void {
    const now = this.now();
    const uid = pod.metadata?.uid ?? '';
    let r = this.pods.get(uid);
    if (r === undefined) {
      const owner = pod.metadata?.ownerReferences?.find((o) => o.controller) ?? pod.metadata?.ownerReferences?.[0];
      const hash = pod.metadata?.labels?.['pod-template-hash'];
      r = {
        uid,
        namespace: pod.metadata?.namespace ?? '',
        name: pod.metadata?.name ?? '',
        labels: { ...pod.metadata?.labels },
        annotations: { ...pod.metadata?.annotations },
        ownerKind: owner?.kind ?? '',
        deployment:
          owner?.kind === 'ReplicaSet' && hash && owner.name.endsWith(`-${hash}`)
            ? `${pod.metadata?.namespace}/${owner.name.slice(0, -hash.length - 1)}`
            : undefined,
        createdMs: now,
        ready: [],
      };
      this.pods.set(uid, r);
    }
    if (pod.spec?.nodeName && r.node === undefined) Object.assign(r, { node: pod.spec.nodeName, boundMs: now });
    const open = r.ready.at(-1)?.toMs === undefined ? r.ready.at(-1) : undefined;
    const finished = pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
    const ready =
      type !== 'DELETED' &&
      !finished &&
      !pod.metadata?.deletionTimestamp &&
      (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);
    if (ready && open === undefined) r.ready.push({ fromMs: now });
    if (!ready && open !== undefined) open.toMs = now;
    if (pod.metadata?.deletionTimestamp && r.deletionMs === undefined) r.deletionMs = now;
    if (finished && r.finishedMs === undefined) r.finishedMs = now;
    if (type === 'DELETED' && r.goneMs === undefined) r.goneMs = now;
  }

  private relistPods(items: V1Pod[]): void {
    const uids = new Set(items.map((p) => p.metadata?.uid));
    for (const r of this.pods.values())
      if (!uids.has(r.uid) && r.goneMs === undefined) {
        r.goneMs = this.now();
        const open = r.ready.at(-1);
        if (open && open.toMs === undefined) open.toMs = r.goneMs;
      }
    for (const p of items) this.pod('MODIFIED', p);
  }

  private node(type: 'ADDED' | 'MODIFIED' | 'DELETED', node: V1Node): void {
    const r = this.nodes.get(node.metadata?.name ?? '');
    if (r === undefined) return;
    if (type === 'DELETED') {
      r.deletedMs ??= this.now();
      return;
    }
    const unschedulable = node.spec?.unschedulable === true;
    const last = r.cordons.at(-1)?.unschedulable ?? r.initial.unschedulable;
    if (unschedulable !== last) r.cordons.push({ atMs: this.now(), unschedulable });
  }

  private baselined = new Set<string>();

  /** The first list of a namespace's Events is what was there before the run (an earlier run's): only remembered. */
  private relistEvents(items: CoreV1Event[]): void {
    const namespace = items[0]?.metadata?.namespace ?? '';
    if (items.length > 0 && !this.baselined.has(namespace)) {
      this.baselined.add(namespace);
      for (const e of items) this.seenEvents.add(e.metadata?.uid ?? '');
      return;
    }
    for (const e of items) this.event(e);
  }

  private event(e: CoreV1Event): void {
    if (e.source?.component !== 'graceful-node-termination' && e.reportingComponent !== 'graceful-node-termination')
      return;
    const key = e.metadata?.uid ?? '';
    if (this.seenEvents.has(key)) return;
    this.seenEvents.add(key);
    this.events.push({
      reason: e.reason ?? '',
      message: e.message ?? '',
      kind: e.involvedObject?.kind ?? '',
      name: e.involvedObject?.name ?? '',
      atMs: this.now(),
    });
  }

  stop(): void {
    for (const stop of this.stops.splice(0)) stop();
  }
}
