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

  /** EC2's names; a failure is logged and costs only the fast path, never the lookup. */
  const namesOf = async (instanceIds: readonly string[]): Promise<ReadonlyMap<string, string>> => {
    if (directory === undefined || instanceIds.length === 0) return new Map();
    try {
      return await directory.privateDnsNames(instanceIds);
    } catch (error) {
      log.warn("could not ask EC2 for the instances' private DNS names; looking the nodes up without them", asError(error));
      return new Map();
    }
  };

  const byName = async (instanceId: string, name: string): Promise<NodeInfo | undefined> => {
    const node = await reader.getNode(name);
    if (node === undefined) return undefined;
    if (instanceMatches(node.providerId, instanceId)) return node;
    log.info("the node under the instance's EC2 name belongs to another instance; not this one", { name, providerID: node.providerId });
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
        log.info("some nodes are not under their instance's EC2 name; scanning the node list once for them", { instances: missing.length });
        for (const [id, node] of await reader.scanForInstances(missing)) found.set(id, node);
      }
      return found;
    },

    watchNodeOf: (instanceId) => NamedNodeWatch.open(instanceId, reader, namesOf, clock, log, { scanEveryMs, scanWithoutNameEveryMs }),
  };
}

/**
 * One list+watch of the node under the instance's EC2 name. A scan only when nothing shows
 * under it for a while (scanEveryMs), or every scanWithoutNameEveryMs without a name; a node
 * found under another name is followed from then on.
 */
class NamedNodeWatch implements NodeWatch {
  private scanned: NodeInfo | undefined;
  private scanError: Error | undefined;
  private lastScanMs: number;

  private constructor(
    private readonly instanceId: string,
    private name: string | undefined,
    private named: NodeWatch | undefined,
    private readonly reader: NodeReader,
    private readonly clock: Clock,
    private readonly log: Log,
    private readonly every: { readonly scanEveryMs: number; readonly scanWithoutNameEveryMs: number },
  ) {
    this.lastScanMs = named !== undefined ? clock.now() : Number.NEGATIVE_INFINITY;
  }

  static async open(
    instanceId: string,
    reader: NodeReader,
    namesOf: (ids: readonly string[]) => Promise<ReadonlyMap<string, string>>,
    clock: Clock,
    log: Log,
    every: NamedNodeWatch['every'],
  ): Promise<NodeWatch> {
    const name = (await namesOf([instanceId])).get(instanceId);
    const named = name !== undefined ? await reader.watchNodeNamed(name) : undefined;
    const watch = new NamedNodeWatch(instanceId, name, named, reader, clock, log, every);
    if (named === undefined) await watch.scan();
    return watch;
  }

  current(): NodeInfo | undefined {
    const node = this.fromWatch();
    if (node !== undefined) return node;
    if (this.named === undefined && this.scanError !== undefined) throw this.scanError;
    return this.named === undefined ? this.scanned : undefined;
  }

  async changed(timeoutMs: number): Promise<void> {
    let seen: NodeInfo | undefined;
    try {
      seen = this.fromWatch();
    } catch {
      /* the watch is resuming; current() reports it */
    }
    const every = this.named !== undefined ? this.every.scanEveryMs : this.every.scanWithoutNameEveryMs;
    const dueInMs = this.lastScanMs + every - this.clock.now();
    if (seen === undefined && dueInMs <= 0) return this.scan();
    const waitMs = seen === undefined ? Math.min(timeoutMs, dueInMs) : timeoutMs;
    if (this.named !== undefined) await this.named.changed(waitMs);
    else await this.clock.sleep(waitMs);
  }

  close(): void {
    this.named?.close();
  }

  private fromWatch(): NodeInfo | undefined {
    const node = this.named?.current();
    return node !== undefined && instanceMatches(node.providerId, this.instanceId) ? node : undefined;
  }

  private async scan(): Promise<void> {
    this.lastScanMs = this.clock.now();
    try {
      this.scanned = (await this.reader.scanForInstances([this.instanceId])).get(this.instanceId);
      this.scanError = undefined;
    } catch (error) {
      this.scanError = asError(error);
      return;
    }
    if (this.scanned !== undefined && this.scanned.name !== this.name) {
      // Registered under another name: follow that one from now on.
      this.log.info("found the node under a name other than the instance's EC2 name; watching it", { node: this.scanned.name, ec2Name: this.name ?? null });
      this.named?.close();
      this.name = this.scanned.name;
      this.named = await this.reader.watchNodeNamed(this.name);
    }
  }
}
