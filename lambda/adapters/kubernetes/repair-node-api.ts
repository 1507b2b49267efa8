// Node auto repair's node reads and patches: the nodes with their conditions in one paged,
// gzipped list read item by item (label-selected when REPAIR names a nodeSelector), one GET
// before acting, and merge patches of our repair record, conditional on the node as read.
import type { V1Node } from '@kubernetes/client-node';
import type { NodeInfo, PatchResult, RepairRecord } from '../../cluster/model.js';
import type { RepairGateway } from '../../cluster/ports/repair-gateway.js';
import { formatRepairRecord } from '../../cluster/marks/repair-record.js';
import { ownerLabel, repairAnnotation } from '../../cluster/marks/mark-keys.js';

import { otherMarksOfOurs } from '../../cluster/marks/our-marks.js';
import { call, classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { nodeFieldsNotRead, toNodeInfo, type WireList } from './object-codecs.js';

const mergePatch = 'application/merge-patch+json';
/**
 * Nodes per page, as kubectl's --chunk-size. Read item by item (list-stream.ts): a page's JSON
 * (~15 KB a worker node, its cached images and managedFields most of it) is never held whole.
 */
export const healthPageSize = 500;
/** Conditional writes retried after a conflict (a kubelet status update in between). */
const conflictAttempts = 5;

export function createRepairNodeApi(kube: KubeHttp): RepairGateway {
  const path = (name: string) => `/api/v1/nodes/${encodeURIComponent(name)}`;
  const get = async (name: string): Promise<NodeInfo | undefined> => {
    try {
      return toNodeInfo(await kube.request<V1Node>('GET', path(name)));
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw classify(error, `get node ${name}`);
    }
  };
  const patch = async (name: string, body: object): Promise<PatchResult> => {
    try {
      await kube.request<V1Node>('PATCH', path(name), { body, contentType: mergePatch });
      return 'patched';
    } catch (error) {
      if (statusOf(error) === 404) return 'node-gone';
      if (statusOf(error) === 409) return 'changed';
      throw classify(error, `patch node ${name}`);
    }
  };
  return {
    listNodeHealth: (selector, pick) => listNodeHealth(kube, selector, pick),
    getNodeHealth: get,
    markRepair(node, record, owner) {
      return patch(node.name, {
        metadata: {
          resourceVersion: node.resourceVersion,
          labels: { [ownerLabel]: owner },
          annotations: { [repairAnnotation]: formatRepairRecord(record) },
        },
        ...(record.cordoned ? { spec: { unschedulable: true } } : {}),
      });
    },
    async unmarkRepair(first, record) {
      let node: NodeInfo | undefined = first;
      for (let attempt = 0; node !== undefined && attempt < conflictAttempts; attempt++) {
        // Only the record we were asked to take back: a later repair's is not ours to remove.
        if (node.repair === undefined || node.repair.decidedAtMs !== record.decidedAtMs) return 'changed';
        const result = await patch(node.name, unmarkRepairPatch(node, record));
        if (result !== 'changed') return result;
        node = await get(node.name);
      }
      return node === undefined ? 'node-gone' : 'changed';
    },
  };
}

function unmarkRepairPatch(node: NodeInfo, record: RepairRecord): object {
  // The owner label stays while a drain or refresh mark of ours is on the node.
  const keepOwner = otherMarksOfOurs(node, 'repair');
  // A drain of ours that took the node over owns the cordon now (its record says so).
  const uncordon = record.cordoned && node.drain === undefined;
  return {
    metadata: {
      resourceVersion: node.resourceVersion,
      ...(keepOwner ? {} : { labels: { [ownerLabel]: null } }),
      annotations: { [repairAnnotation]: null },
    },
    ...(uncordon ? { spec: { unschedulable: null } } : {}),
  };
}

/**
 * The nodes with their conditions, each handed to `pick` as it is read (list-stream.ts): one
 * paged list, label-selected when a selector is given. What pick declines is never kept.
 */
async function listNodeHealth<T>(
  kube: KubeHttp,
  selector: string | undefined,
  pick: (node: NodeInfo) => T | undefined,
): Promise<{ picked: T[]; listed: number }> {
  const picked: T[] = [];
  let listed = 0;
  let cont: string | undefined;
  do {
    // Not resourceVersion=0: the watch cache would answer every node at once, ignoring limit.
    const query = {
      limit: healthPageSize,
      continue: cont,
      ...(selector !== undefined ? { labelSelector: selector } : {}),
    };
    // Every item answers (a retried page is read again from its start): the count is the page's.
    const itemOf = (raw: unknown) => ({ kept: pick(toNodeInfo(raw as V1Node)) });
    const page = await call('list nodes with their conditions', () =>
      kube.request<WireList<{ kept: T | undefined }>>('GET', '/api/v1/nodes', {
        query,
        compressed: true,
        items: { itemOf, skip: nodeFieldsNotRead },
      }),
    );
    listed += page.items.length;
    for (const item of page.items) if (item.kept !== undefined) picked.push(item.kept);
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return { picked, listed };
}
