// The marks of an instance refresh on its outdated nodes: our PreferNoSchedule taint (its
// value the refresh id) or, with the minimal strategy, a cordon, plus labels and the group.
// JSON patches, so our taint is appended to the node's taints and removed by its index (a
// merge patch would replace the list, timeAdded of the controllers' taints included), each
// conditional on the node as read (the replaced resourceVersion: 409 if it moved on).
import type { V1Node } from '@kubernetes/client-node';
import type { NodeGateway, OutdatedMarks, OutdatedUnmarked } from '../../cluster/ports/node-gateway.js';
import type { NodeInfo } from '../../cluster/model.js';
import {
  outdatedTaintKey,
  ownerLabel,
  refreshCordonedLabel,
  refreshGroupAnnotation,
  refreshLabel,
} from '../../cluster/marks/mark-keys.js';
import { otherMarksOfOurs } from '../../cluster/marks/our-marks.js';
import { call, classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { toNodeInfo, type WireList } from './object-codecs.js';
import { createConditionsApi } from './node-conditions-api.js';

const jsonPatch = 'application/json-patch+json';
/** A key as a JSON pointer segment (RFC 6901: "~" is "~0", "/" is "~1"). */
export const pointer = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/** A node read by name (undefined when gone), and one conditional JSON patch of the node as read. */
export function nodePatcher(kube: KubeHttp) {
  const get = (name: string) =>
    kube.request<V1Node>('GET', `/api/v1/nodes/${encodeURIComponent(name)}`).then(toNodeInfo, (error: unknown) => {
      if (statusOf(error) === 404) return undefined;
      throw classify(error, `get node ${name}`);
    });

  /** One conditional JSON patch of the node as read (`node.resourceVersion`). */
  const patch = async (node: NodeInfo, ops: object[], what: string): Promise<'patched' | 'node-gone' | 'changed'> => {
    try {
      await kube.request('PATCH', `/api/v1/nodes/${encodeURIComponent(node.name)}`, {
        body: ops,
        contentType: jsonPatch,
      });
      return 'patched';
    } catch (error) {
      if (statusOf(error) === 404) return 'node-gone';
      if (statusOf(error) === 409) return 'changed';
      // 422 when an op no longer applies (a controller removed the last taint, so
      // /spec/taints/- has no list; a test op failed): the ops are applied before the
      // resourceVersion is compared. Only a node that moved on makes it a conflict; on the
      // node as read it is a real refusal (an admission policy, say).
      if (statusOf(error) === 422 && (await get(node.name))?.resourceVersion !== node.resourceVersion) return 'changed';
      throw classify(error, what);
    }
  };
  return { get, patch };
}

export function createOutdatedNodeApi(kube: KubeHttp): Pick<NodeGateway, 'markOutdated' | 'unmarkOutdated'> {
  const { get, patch } = nodePatcher(kube);
  return {
    markOutdated: (node, marks) => patch(node, markOps(node, marks), `mark node ${node.name} outdated`),

    async unmarkOutdated(group, select) {
      const candidates = select.nodes ?? (await listLabelled(select.refreshId));
      const undone: OutdatedUnmarked[] = [];
      for (const listed of candidates) {
        let node: NodeInfo | undefined = listed;
        // After a conflict (the node moved on), a fresh read.
        for (let attempt = 0; node !== undefined && attempt < 5; attempt++) {
          const refreshId = node.labels[refreshLabel];
          if (
            refreshId === undefined ||
            !ofGroup(node, group) ||
            refreshId === select.keep ||
            (select.refreshId !== undefined && refreshId !== select.refreshId)
          )
            break;
          const { ops, removed } = unmarkOps(node);
          const result = await patch(node, ops, `unmark node ${node.name}`);
          if (result === 'patched') undone.push({ node: node.name, uid: node.uid, refreshId, removed });
          if (result === 'patched') await dropConditions(kube, node);
          if (result !== 'changed') break;
          node = await get(node.name);
        }
      }
      return undone;
    },
  };

  async function listLabelled(refreshId: string | undefined): Promise<NodeInfo[]> {
    const nodes: NodeInfo[] = [];
    let cont: string | undefined;
    do {
      const query = {
        labelSelector: refreshId !== undefined ? `${refreshLabel}=${refreshId}` : refreshLabel,
        limit: 500,
        continue: cont,
      };
      const page = await call('list nodes of a refresh', () =>
        kube.request<WireList<V1Node>>('GET', '/api/v1/nodes', { query }),
      );
      nodes.push(...page.items.map(toNodeInfo));
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return nodes;
  }
}

/** The conditional start of a mark: the resourceVersion as read, labels added, one annotation set. */
export function labelOps(node: NodeInfo, labels: Record<string, string>, annotation: string, value: string): object[] {
  return [
    { op: 'replace', path: '/metadata/resourceVersion', value: node.resourceVersion },
    ...(Object.keys(node.labels).length > 0
      ? Object.entries(labels).map(([k, v]) => ({ op: 'add', path: `/metadata/labels/${pointer(k)}`, value: v }))
      : [{ op: 'add', path: '/metadata/labels', value: labels }]),
    // Every registered node carries annotations (the kubelet's); an empty map is created otherwise.
    node.hasAnnotations === false
      ? { op: 'add', path: '/metadata/annotations', value: { [annotation]: value } }
      : { op: 'add', path: `/metadata/annotations/${pointer(annotation)}`, value },
  ];
}

function markOps(node: NodeInfo, marks: OutdatedMarks): object[] {
  const labels = {
    [refreshLabel]: marks.refreshId,
    [ownerLabel]: marks.owner,
    ...(marks.cordon ? { [refreshCordonedLabel]: 'true' } : {}),
  };
  const ops = labelOps(node, labels, refreshGroupAnnotation, marks.group);
  if (marks.taint) {
    const taint = { key: outdatedTaintKey, value: marks.refreshId, effect: 'PreferNoSchedule' };
    ops.push(
      node.taints.length > 0
        ? { op: 'add', path: '/spec/taints/-', value: taint }
        : { op: 'add', path: '/spec/taints', value: [taint] },
    );
  }
  if (marks.cordon) ops.push({ op: 'add', path: '/spec/unschedulable', value: true });
  return ops;
}

/** Marks from before groups were recorded carry no group: their refresh id alone names them. */
function ofGroup(node: NodeInfo, group: string): boolean {
  return node.refreshGroup === undefined || node.refreshGroup === group;
}

function unmarkOps(node: NodeInfo): { ops: object[]; removed: string[] } {
  const removed: string[] = [];
  const ops: object[] = [
    { op: 'replace', path: '/metadata/resourceVersion', value: node.resourceVersion },
    { op: 'remove', path: `/metadata/labels/${pointer(refreshLabel)}` },
  ];
  if (node.refreshGroup !== undefined)
    ops.push({ op: 'remove', path: `/metadata/annotations/${pointer(refreshGroupAnnotation)}` });
  // Our taints only (a refresh's value, tested in place: indexes are positional), from the
  // last so earlier indexes stay valid; an older refresh's taint left behind goes too.
  const ours = node.taints.flatMap((t, i) => (t.key === outdatedTaintKey ? [i] : [])).reverse();
  for (const i of ours)
    ops.push(
      { op: 'test', path: `/spec/taints/${i}/key`, value: outdatedTaintKey },
      { op: 'remove', path: `/spec/taints/${i}` },
    );
  if (ours.length > 0) removed.push(`taint ${outdatedTaintKey}:PreferNoSchedule`);
  if (node.labels[refreshCordonedLabel] !== undefined) {
    ops.push({ op: 'remove', path: `/metadata/labels/${pointer(refreshCordonedLabel)}` });
    // A node a drain of ours is taking down keeps its cordon: the drain owns it now.
    if (node.unschedulable && node.drain === undefined) {
      ops.push({ op: 'remove', path: '/spec/unschedulable' });
      removed.push('cordon');
    }
  }
  if (!otherMarksOfOurs(node, 'refresh') && node.labels[ownerLabel] !== undefined)
    ops.push({ op: 'remove', path: `/metadata/labels/${pointer(ownerLabel)}` });
  return { ops, removed };
}

/**
 * Our lifecycle conditions go with the refresh's marks, but a node a drain of ours is taking down keeps them: the drain
 * owns them now.
 */
async function dropConditions(kube: KubeHttp, node: NodeInfo): Promise<void> {
  if (node.drain === undefined)
    await createConditionsApi(kube)
      .removeOurConditions(node)
      .catch(() => undefined);
}
