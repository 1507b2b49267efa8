// Which node is this instance? In requests and bytes that do not grow with the cluster.
//
// On EKS the kubelet registers its Node under the instance's private DNS name (either
// hostname type), so EC2's PrivateDnsName names the node and one GET reads it. Only the
// providerID decides, never the name alone: a name can belong to an old node of a reused IP
// address, or a cluster can name its nodes otherwise (--hostname-override). Then, and only
// then, the lookup scans the node list (paged, gzipped; kubernetes.ts).
import type { InstanceDirectory } from '../shared/aws-ports.js';
import type { Clock } from '../shared/clock.js';
import { mapWithConcurrency } from '../shared/concurrency.js';
import { asError, type Log } from '../shared/log.js';
import type { NodeGateway, NodeInfo, NodeWatch } from './cluster-ports.js';

/** What the Kubernetes adapter offers for nodes, below the lookup. */
export interface NodeReader {
  /** One GET; undefined on 404. */
  getNode(name: string): Promise<NodeInfo | undefined>;
  /** Lists every node (paged) and matches spec.providerID: the fallback, cost grows with the cluster. */
  scanForInstances(instanceIds: readonly string[]): Promise<ReadonlyMap<string, NodeInfo>>;
  /** A list+watch of the node with this name, whatever its providerID. */
  watchNodeNamed(name: string): Promise<NodeWatch>;
}

export type NodeLookup = Pick<NodeGateway, 'findNodeByInstanceId' | 'findNodesOfInstances' | 'watchNodeOf'>;

export interface NodeLookupOptions {
  /** How often a launch that found no node under its EC2 name scans for it elsewhere. */
  readonly scanEveryMs?: number;
  /** The same, when EC2 gave no name (no answer, no permission): the only way left. */
  readonly scanWithoutNameEveryMs?: number;
  /** GETs in flight when looking up several instances. */
  readonly concurrency?: number;
}

/** spec.providerID is aws:///<zone>/<instance-id>: the id after the last slash, exactly. */
export function instanceMatches(providerId: string, instanceId: string): boolean {
  return providerId.endsWith(`/${instanceId}`);
}

export function createNodeLookup(reader: NodeReader, directory: InstanceDirectory | undefined, clock: Clock, log: Log, options: NodeLookupOptions = {}): NodeLookup {
  const scanEveryMs = options.scanEveryMs ?? 60_000;
  const scanWithoutNameEveryMs = options.scanWithoutNameEveryMs ?? 10_000;
  const concurrency = options.concurrency ?? 8;

  /** EC2's names; a failure is logged and costs only the fast path, never the lookup. */
  const namesOf = async (instanceIds: readonly string[]): Promise<ReadonlyMap<string, string>> => {
    if (directory === undefined || instanceIds.length === 0) return new Map();
    try {
      return await directory.privateDnsNames(instanceIds);
    } catch (error) {
      log.warn('could not ask EC2 for the instances\' private DNS names; looking the nodes up without them', asError(error));
      return new Map();
    }
  };

  const byName = async (instanceId: string, name: string): Promise<NodeInfo | undefined> => {
    const node = await reader.getNode(name);
    if (node === undefined) return undefined;
    if (instanceMatches(node.providerId, instanceId)) return node;
    log.info('the node under the instance\'s EC2 name belongs to another instance; not this one', { name, providerID: node.providerId });
    return undefined;
  };

  return {
    async findNodeByInstanceId(instanceId) {
      const name = (await namesOf([instanceId])).get(instanceId);
      if (name !== undefined) {
        const node = await byName(instanceId, name);
        if (node !== undefined) return node;
        log.info('no node of this instance under its EC2 name; scanning the node list', { name });
      }
      return (await reader.scanForInstances([instanceId])).get(instanceId);
    },

    async findNodesOfInstances(instanceIds) {
      if (instanceIds.length === 0) return new Map();
      const names = await namesOf(instanceIds);
      const nodes = await mapWithConcurrency([...names], concurrency, async ([id, name]) => [id, await byName(id, name)] as const);
      const found = new Map(nodes.filter((entry): entry is readonly [string, NodeInfo] => entry[1] !== undefined));
      // The rest are not under their EC2 name (--hostname-override, no name from EC2): one
      // scan for all of them, never one per instance.
      const missing = instanceIds.filter((id) => !found.has(id));
      if (missing.length > 0) {
        log.info('some nodes are not under their instance\'s EC2 name; scanning the node list once for them', { instances: missing.length });
        for (const [id, node] of await reader.scanForInstances(missing)) found.set(id, node);
      }
      return found;
    },

    async watchNodeOf(instanceId) {
      let name = (await namesOf([instanceId])).get(instanceId);
      let named = name !== undefined ? await reader.watchNodeNamed(name) : undefined;
      let scanned: NodeInfo | undefined;
      let scanError: Error | undefined;
      // With a name, the watch answers; a scan only when nothing shows under it for a while.
      let lastScanMs = named !== undefined ? clock.now() : Number.NEGATIVE_INFINITY;
      const every = () => (named !== undefined ? scanEveryMs : scanWithoutNameEveryMs);
      const fromWatch = () => {
        const node = named?.current();
        return node !== undefined && instanceMatches(node.providerId, instanceId) ? node : undefined;
      };
      const scan = async () => {
        lastScanMs = clock.now();
        try {
          scanned = (await reader.scanForInstances([instanceId])).get(instanceId);
          scanError = undefined;
        } catch (error) {
          scanError = error instanceof Error ? error : new Error(String(error));
          return;
        }
        if (scanned !== undefined && scanned.name !== name) {
          // Registered under another name: follow that one from now on.
          log.info('found the node under a name other than the instance\'s EC2 name; watching it', { node: scanned.name, ec2Name: name ?? null });
          named?.close();
          name = scanned.name;
          named = await reader.watchNodeNamed(name);
        }
      };
      if (named === undefined) await scan();
      return {
        current() {
          const node = fromWatch();
          if (node !== undefined) return node;
          if (named === undefined && scanError !== undefined) throw scanError;
          return named === undefined ? scanned : undefined;
        },
        async changed(timeoutMs) {
          let seen: NodeInfo | undefined;
          try {
            seen = fromWatch();
          } catch {
            /* the watch is resuming; current() reports it */
          }
          const dueInMs = lastScanMs + every() - clock.now();
          if (seen === undefined && dueInMs <= 0) return scan();
          const waitMs = seen === undefined ? Math.min(timeoutMs, dueInMs) : timeoutMs;
          if (named !== undefined) await named.changed(waitMs);
          else await clock.sleep(waitMs);
        },
        close: () => named?.close(),
      };
    },
  };
}
