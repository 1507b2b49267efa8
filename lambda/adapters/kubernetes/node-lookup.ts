// Which node is this instance? In requests and bytes that do not grow with the cluster.
//
// On EKS the kubelet registers its Node under the instance's private DNS name (either
// hostname type), so EC2's PrivateDnsName names the node and one GET reads it. Only the
// providerID decides, never the name alone: a name can belong to an old node of a reused IP
// address, or a cluster can name its nodes otherwise (--hostname-override). Then, and only
// then, the lookup scans the node list (paged, gzipped; kubernetes.ts).
import type { InstanceDirectory } from '../../shared/aws-ports.js';
import { TransientError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { mapWithConcurrency } from '../../shared/concurrency.js';
import { type Log } from '../../shared/log.js';
import type { NodeGateway } from '../../cluster/ports/node-gateway.js';
import type { NodeInfo } from '../../cluster/model.js';

import { instanceMatches } from '../../cluster/rules/provider-id.js';
import { cachedNames, type AskNames } from './instance-names.js';
import { NamedNodeWatch } from './named-node-watch.js';
import { type NodeReader } from './node-reader.js';

export type NodeLookup = Pick<NodeGateway, 'findNodeByInstanceId' | 'findNodesOfInstances' | 'watchNodeOf'>;

export interface NodeLookupOptions {
  /** How often a launch that found no node under its EC2 name scans for it elsewhere. */
  readonly scanEveryMs?: number;
  /** The same, when EC2 gave no name (no answer, no permission): the only way left. */
  readonly scanWithoutNameEveryMs?: number;
  /** GETs in flight when looking up several instances. */
  readonly concurrency?: number;
}

export function createNodeLookup(
  reader: NodeReader,
  directory: Pick<InstanceDirectory, 'privateDnsNames'> | undefined,
  clock: Clock,
  log: Log,
  options: NodeLookupOptions = {},
): NodeLookup {
  const scanEveryMs = options.scanEveryMs ?? 60_000;
  const scanWithoutNameEveryMs = options.scanWithoutNameEveryMs ?? 10_000;
  const concurrency = options.concurrency ?? 8;

  const namesOf = cachedNames(directory, log);

  const byName = async (instanceId: string, name: string): Promise<NodeInfo | undefined> => {
    const node = await reader.getNode(name);
    if (node === undefined) return undefined;
    if (instanceMatches(node.providerId, instanceId)) return node;
    log.info("the node under the instance's EC2 name belongs to another instance; not this one", {
      name,
      providerID: node.providerId,
    });
    return undefined;
  };

  const readNamed = (toRead: readonly (readonly [string, string])[]) =>
    readNodesNamed(reader, toRead, byName, concurrency);

  return {
    async findNodeByInstanceId(instanceId) {
      const name = (await namesOf([instanceId])).names.get(instanceId);
      if (name !== undefined) {
        const node = await byName(instanceId, name);
        if (node !== undefined) return node;
        log.info('no node of this instance under its EC2 name; scanning the node list', { name });
      }
      return (await reader.scanForInstances([instanceId])).get(instanceId);
    },

    findNodesOfInstances: (instanceIds, o = {}) =>
      findNodesOfInstances({ reader, namesOf, readNamed, log }, instanceIds, o),

    watchNodeOf: (instanceId) =>
      NamedNodeWatch.open(instanceId, reader, namesOf, clock, log, { scanEveryMs, scanWithoutNameEveryMs }),
  };
}

/**
 * A wave's siblings in one list per batch, not a GET each; a name the list does not answer
 * (no hostname label, or another node's) is read by name, as a single lookup would.
 */
async function readNodesNamed(
  reader: NodeReader,
  toRead: readonly (readonly [string, string])[],
  byName: (instanceId: string, name: string) => Promise<NodeInfo | undefined>,
  concurrency: number,
): Promise<Map<string, NodeInfo>> {
  const found = new Map<string, NodeInfo>();
  if (toRead.length === 0) return found;
  const listed = await reader.getNodesNamed(toRead.map(([, name]) => name));
  const answered = new Set(listed.map((n) => n.name));
  for (const [id] of toRead) {
    const node = listed.find((n) => instanceMatches(n.providerId, id));
    if (node !== undefined) found.set(id, node);
  }
  const unanswered = toRead.filter(([id, name]) => !found.has(id) && !answered.has(name));
  for (const [id, node] of await mapWithConcurrency(
    unanswered,
    concurrency,
    async ([id, name]) => [id, await byName(id, name)] as const,
  )) {
    if (node !== undefined) found.set(id, node);
  }
  return found;
}

type FindOptions = NonNullable<Parameters<NodeGateway['findNodesOfInstances']>[1]>;

interface FindDeps {
  readonly reader: NodeReader;
  readonly namesOf: AskNames;
  readonly readNamed: (toRead: readonly (readonly [string, string])[]) => Promise<Map<string, NodeInfo>>;
  readonly log: Log;
}

/** The nodes of several instances: by EC2 name first, then one scan for all the rest. */
async function findNodesOfInstances(
  { reader, namesOf, readNamed, log }: FindDeps,
  instanceIds: readonly string[],
  o: FindOptions,
): Promise<ReadonlyMap<string, NodeInfo>> {
  if (instanceIds.length === 0) return new Map();
  const { names, failure } = await namesOf(instanceIds);
  if (failure !== undefined && o.scan === false)
    throw new TransientError("EC2 did not name the instances' nodes", { cause: failure });
  if (o.byName === false) {
    const rest = instanceIds.filter((id) => !o.skipNames?.has(names.get(id) ?? ''));
    return rest.length > 0 ? new Map(await reader.scanForInstances(rest)) : new Map();
  }
  // Already marked (a wave's other drains got there first): not read again.
  const unmarked = [...names].filter(([, name]) => !o.skipNames?.has(name)).map(([id]) => id);
  const toRead = (o.pick?.(unmarked) ?? unmarked).map((id) => [id, names.get(id)!] as const);
  const found = await readNamed(toRead);
  // The rest are not under their EC2 name (--hostname-override, no name from EC2): one
  // scan for all of them, never one per instance.
  const missing = instanceIds.filter((id) => !found.has(id) && !o.skipNames?.has(names.get(id) ?? ''));
  if (missing.length > 0 && o.scan !== false) {
    log.info("some nodes are not under their instance's EC2 name; scanning the node list once for them", {
      instances: missing.length,
    });
    for (const [id, node] of await reader.scanForInstances(missing)) found.set(id, node);
  }
  return found;
}
