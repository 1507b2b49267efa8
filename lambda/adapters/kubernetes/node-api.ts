// Node reads and the drain's node patches: one GET by name, a paged scan only as the
// lookup's fallback, the owner-label list, merge patches for our marks and the hand-off claim.
import { sameSource } from '../../cluster/rules/drain-source.js';
import type { V1Node } from '@kubernetes/client-node';
import type { NodeGateway, NodeMarks, NodeWatch } from '../../cluster/ports/node-gateway.js';
import type { NodeInfo, PatchResult, DrainRecord } from '../../cluster/model.js';
import type { NodeReader } from './node-reader.js';
import { instanceMatches } from '../../cluster/rules/provider-id.js';
import {
  drainAnnotation,
  excludeFromLoadBalancersLabel,
  handOffAnnotation,
  ownerLabel,
} from '../../cluster/marks/mark-keys.js';
import { formatDrainRecord } from '../../cluster/marks/drain-record.js';

import { otherMarksOfOurs } from '../../cluster/marks/our-marks.js';
import type { Log } from '../../shared/log.js';
import { TransientError } from '../../shared/errors.js';
import { call, classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { openListWatch } from './list-watch.js';
import { createConditionsApi } from './node-conditions-api.js';
import { toNodeInfo, type WireList } from './object-codecs.js';

const mergePatch = 'application/merge-patch+json';

/** Nodes per page when a lookup must scan: one page in memory at a time (~1.5 MB of JSON). */
export const scanPageSize = 100;
/** A launch watches its node this long per request: one watch covers a typical join. */
export const nodeWatchTimeoutSeconds = 240;
/** Names per label-selected list: ~2.5 KB of query, a few hundred KB of gzipped nodes. */
const namedBatch = 50;
const hostnameLabel = 'kubernetes.io/hostname';
/** What a label value may be (a node name longer than 63 or with other characters is not one). */
const labelValue = /^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
/** Conditional writes retried after a conflict (another writer, a kubelet status update). */
const conflictAttempts = 5;

export type NodeApi = NodeReader &
  Pick<NodeGateway, 'listMarked' | 'drainMarkedNames' | 'mark' | 'unmark' | 'claimHandOff'>;

export function createNodeApi(kube: KubeHttp, log: Log): NodeApi {
  const api = new NodeRequests(kube, log);
  return {
    getNode: (name) => api.getNode(name),
    getNodesNamed: (names) => api.getNodesNamed(names),
    scanForInstances: (ids) => api.scanForInstances(ids),
    watchNodeNamed: (name) => api.watchNodeNamed(name),
    listMarked: (owner) => api.listMarked(owner),
    drainMarkedNames: (owner) => api.drainMarkedNames(owner),
    mark: (name, marks, ifResourceVersion) => api.mark(name, marks, ifResourceVersion),
    unmark: (node, record) => api.unmark(node, record),
    claimHandOff: (name, expected, next, record) => api.claimHandOff(name, expected, next, record),
  };
}

class NodeRequests {
  constructor(
    private readonly kube: KubeHttp,
    private readonly log: Log,
  ) {}

  async getNode(name: string): Promise<NodeInfo | undefined> {
    try {
      return toNodeInfo(await this.kube.request<V1Node>('GET', nodePath(name)));
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw classify(error, `get node ${name}`);
    }
  }

  /**
   * A field selector takes one name, a label selector a set: the hostname label (the kubelet's,
   * the node's name on EKS) selects a batch of names in one list, gzipped. A consistent read, as
   * a GET is (a re-read after a conflict must see the write that caused it; the server answers
   * it from its watch cache once that has caught up). A name that is not a valid label value is
   * left out of the selector (the caller reads it by name).
   */
  async getNodesNamed(names: readonly string[]): Promise<readonly NodeInfo[]> {
    const selectable = [...new Set(names)].filter((n) => labelValue.test(n));
    const found: NodeInfo[] = [];
    for (let i = 0; i < selectable.length; i += namedBatch) {
      const batch = selectable.slice(i, i + namedBatch);
      const query = { labelSelector: `${hostnameLabel} in (${batch.join(',')})` };
      const page = await call('list nodes by name', () =>
        this.kube.request<WireList<V1Node>>('GET', '/api/v1/nodes', { query, compressed: true }),
      );
      found.push(...page.items.map(toNodeInfo));
    }
    return found;
  }

  /**
   * Nodes can be field-selected only by name and spec.unschedulable, so this lists and
   * matches spec.providerID (aws:///<az>/<instance-id>), for all the instances at once. Only
   * when a node is not under its EC2 name (node-lookup.ts). Small gzipped pages, so memory
   * holds one page and not the cluster (~5x fewer bytes for node objects).
   */
  async scanForInstances(instanceIds: readonly string[]): Promise<ReadonlyMap<string, NodeInfo>> {
    const found = new Map<string, NodeInfo>();
    const wanted = new Set(instanceIds);
    await this.listNodes({ limit: scanPageSize }, 'list nodes', true, (items) => {
      for (const n of items) {
        const id = n.spec?.providerID?.split('/').pop();
        if (id !== undefined && wanted.has(id) && instanceMatches(n.spec?.providerID ?? '', id))
          found.set(id, toNodeInfo(n));
      }
      return found.size === wanted.size;
    });
    return found;
  }

  async watchNodeNamed(name: string): Promise<NodeWatch> {
    const watch = await openListWatch(this.kube, {
      what: `node ${name}`,
      path: '/api/v1/nodes',
      fieldSelector: `metadata.name=${name}`,
      timeoutSeconds: nodeWatchTimeoutSeconds,
      toInfo: toNodeInfo,
      log: this.log,
    });
    return { current: () => watch.current()[0], changed: (ms) => watch.changed(ms), close: () => watch.close() };
  }

  /**
   * The watch cache answers a label-selected list without reading etcd; its size is the marked nodes', not the
   * cluster's.
   */
  async listMarked(owner: string): Promise<readonly NodeInfo[]> {
    const marked: NodeInfo[] = [];
    await this.listNodes(
      { labelSelector: `${ownerLabel}=${owner}`, limit: 500 },
      'list marked nodes',
      false,
      (items) => void marked.push(...items.map(toNodeInfo)),
    );
    return marked;
  }

  /** Names only: a wave's drains each ask which nodes are already marked, so the answer must stay small. */
  async drainMarkedNames(owner: string): Promise<ReadonlySet<string>> {
    const names = new Set<string>();
    let cont: string | undefined;
    do {
      // A drain of ours leaves the owner label and the exclusion label at "true" (a refresh's
      // marks never set the exclusion label): the server selects, and answers names only.
      const query = {
        labelSelector: `${ownerLabel}=${owner},${excludeFromLoadBalancersLabel}=true`,
        limit: 500,
        continue: cont,
        includeObject: 'None',
      };
      const page = await call('list nodes marked by this deployment', () =>
        this.kube.request<{ rows?: { cells?: unknown[] }[]; metadata?: { continue?: string } }>(
          'GET',
          '/api/v1/nodes',
          { query, accept: tableAccept },
        ),
      );
      for (const row of page.rows ?? []) if (typeof row.cells?.[0] === 'string') names.add(row.cells[0]);
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return names;
  }

  mark(name: string, marks: NodeMarks, ifResourceVersion?: string): Promise<PatchResult> {
    return this.patch(name, {
      metadata: {
        ...(ifResourceVersion !== undefined ? { resourceVersion: ifResourceVersion } : {}),
        labels: {
          [ownerLabel]: marks.owner,
          ...(marks.excludeFromLoadBalancers ? { [excludeFromLoadBalancersLabel]: 'true' } : {}),
        },
        annotations: {
          [drainAnnotation]: formatDrainRecord(marks.drain),
          ...(marks.claim !== undefined ? { [handOffAnnotation]: marks.claim } : {}),
        },
      },
      ...(marks.cordon ? { spec: { unschedulable: true } } : {}),
    });
  }

  async unmark(first: NodeInfo, record: DrainRecord): Promise<PatchResult> {
    let node: NodeInfo | undefined = first;
    for (let attempt = 0; node !== undefined && attempt < conflictAttempts; attempt++) {
      // Only the record we were asked to take back: a new drain's record is not ours to remove.
      if (
        node.drain === undefined ||
        !sameSource(node.drain.source, record.source) ||
        node.drain.startedAtMs !== record.startedAtMs
      )
        return 'changed';
      const result = await this.patch(node.name, unmarkPatch(node, record));
      // The lifecycle conditions of ours go with the marks (best effort: the marks are what matter).
      if (result === 'patched')
        await createConditionsApi(this.kube)
          .removeOurConditions(node)
          .catch(() => undefined);
      if (result !== 'changed') return result;
      node = await this.getNode(node.name);
    }
    return node === undefined ? 'node-gone' : 'changed';
  }

  /**
   * Read, compare, then write with the resourceVersion read: the server refuses (409) a write
   * based on a stale read, and we compare again. Unrelated changes to the node (status
   * updates) only cost a retry.
   */
  async claimHandOff(
    name: string,
    expected: string | undefined,
    next: string,
    record: DrainRecord,
  ): Promise<'claimed' | 'lost' | 'node-gone'> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const node = await this.kube.request<V1Node>('GET', nodePath(name)).catch((error: unknown) => {
        if (statusOf(error) === 404) return undefined;
        throw classify(error, `get node ${name}`);
      });
      if (node === undefined) return 'node-gone';
      if (node.metadata?.annotations?.[handOffAnnotation] !== expected) return 'lost';
      const body = {
        metadata: {
          resourceVersion: node.metadata?.resourceVersion,
          annotations: { [handOffAnnotation]: next, [drainAnnotation]: formatDrainRecord(record) },
        },
      };
      const result = await this.patch(name, body);
      if (result === 'patched') return 'claimed';
      if (result === 'node-gone') return 'node-gone';
    }
    throw new TransientError(`annotate node ${name}: the node kept changing; giving up for now`);
  }

  /** A JSON merge patch: it sets what it names and leaves the rest alone. */
  private async patch(name: string, body: object): Promise<PatchResult> {
    try {
      await this.kube.request<V1Node>('PATCH', nodePath(name), { body, contentType: mergePatch });
      return 'patched';
    } catch (error) {
      if (statusOf(error) === 404) return 'node-gone';
      // Only a patch that names a resourceVersion can conflict: the node changed since it was read.
      if (statusOf(error) === 409) return 'changed';
      throw classify(error, `patch node ${name}`);
    }
  }

  /** Every page of a node list, one page at a time (stops when onPage says so). */
  private async listNodes(
    query: Record<string, string | number>,
    what: string,
    compressed: boolean,
    onPage: (items: readonly V1Node[]) => boolean | void,
  ): Promise<void> {
    let cont: string | undefined;
    do {
      const page = await call(what, () =>
        this.kube.request<WireList<V1Node>>('GET', '/api/v1/nodes', {
          query: { ...query, continue: cont },
          compressed,
        }),
      );
      if (onPage(page.items) === true) return;
      cont = page.metadata?.continue || undefined;
    } while (cont);
  }
}

/**
 * A Table without the objects: one row of printed columns per node, the first its name (the
 * server's own printing, as `kubectl get nodes` asks for it). A few dozen bytes a node, where
 * even metadata alone (managedFields) is kilobytes.
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#receiving-resources-as-tables
 */
const tableAccept = 'application/json;as=Table;g=meta.k8s.io;v=v1,application/json';

const nodePath = (name: string) => `/api/v1/nodes/${encodeURIComponent(name)}`;

/** What takes back exactly what the record says we set, conditional on the node as read. */
function unmarkPatch(node: NodeInfo, record: DrainRecord): object {
  const labels: Record<string, string | null> = {};
  // A label that was there before (an operator's "false") is restored, not removed.
  if (record.set.includes('exclude-from-load-balancers'))
    labels[excludeFromLoadBalancersLabel] = record.priorLabel ?? null;
  // The owner label stays while a refresh, repair or out-of-service mark of ours is on the node.
  if (!otherMarksOfOurs(node, 'drain')) labels[ownerLabel] = null;
  return {
    metadata: {
      ...(node.resourceVersion !== undefined ? { resourceVersion: node.resourceVersion } : {}),
      labels,
      annotations: { [drainAnnotation]: null, [handOffAnnotation]: null },
    },
    // null removes the field: unschedulable as if never set, as `kubectl uncordon` leaves it.
    ...(record.set.includes('cordon') ? { spec: { unschedulable: null } } : {}),
  };
}
