// Which node is this instance? In requests and bytes that do not grow with the cluster.
//
// On EKS the kubelet registers its Node under the instance's private DNS name (either
// hostname type), so EC2's PrivateDnsName names the node and one GET reads it. Only the
// providerID decides, never the name alone: a name can belong to an old node of a reused IP
// address, or a cluster can name its nodes otherwise (--hostname-override). Then, and only
// then, the lookup scans the node list (paged, gzipped; kubernetes.ts).
import type { InstanceDirectory } from '../../shared/aws-ports.js';
import { ServiceBusyError, TransientError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { mapWithConcurrency } from '../../shared/concurrency.js';
import { asError, type Log } from '../../shared/log.js';
import type { NodeGateway, NodeWatch } from '../../cluster/ports/node-gateway.js';
import type { NodeInfo } from '../../cluster/model.js';

import { instanceMatches } from '../../cluster/rules/provider-id.js';

/** What the Kubernetes adapter offers for nodes, below the lookup. */
export interface NodeReader {
  /** One GET; undefined on 404. */
  getNode(name: string): Promise<NodeInfo | undefined>;
  /**
   * The nodes whose kubernetes.io/hostname label is one of these names, in one list per batch
   * (the kubelet sets the label to the node's hostname, on EKS its name); a node labelled
   * otherwise is not in the answer.
   */
  getNodesNamed(names: readonly string[]): Promise<readonly NodeInfo[]>;
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
    log.info("the node under the instance's EC2 name belongs to another instance; not this one", { name, providerID: node.providerId });
    return undefined;
  };

  const readNamed = (toRead: readonly (readonly [string, string])[]) => readNodesNamed(reader, toRead, byName, concurrency);

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

    async findNodesOfInstances(instanceIds, o = {}) {
      if (instanceIds.length === 0) return new Map();
      const { names, failure } = await namesOf(instanceIds);
      if (failure !== undefined && o.scan === false) throw new TransientError("EC2 did not name the instances' nodes", { cause: failure });
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
        log.info("some nodes are not under their instance's EC2 name; scanning the node list once for them", { instances: missing.length });
        for (const [id, node] of await reader.scanForInstances(missing)) found.set(id, node);
      }
      return found;
    },

    watchNodeOf: (instanceId) => NamedNodeWatch.open(instanceId, reader, namesOf, clock, log, { scanEveryMs, scanWithoutNameEveryMs }),
  };
}

type AskNames = (ids: readonly string[]) => ReturnType<typeof askNames>;

/** EC2's names, each asked once per container: an instance's private DNS name never changes. */
function cachedNames(directory: Pick<InstanceDirectory, 'privateDnsNames'> | undefined, log: Log): AskNames {
  const known = new Map<string, string>();
  return async (instanceIds) => {
    const asked = await askNames(
      directory,
      instanceIds.filter((id) => !known.has(id)),
      log,
    );
    if (known.size > 10_000) known.clear();
    for (const [id, name] of asked.names) known.set(id, name);
    const names = new Map(instanceIds.flatMap((id) => (known.has(id) ? [[id, known.get(id)!] as const] : [])));
    return { ...asked, names };
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
  for (const [id, node] of await mapWithConcurrency(unanswered, concurrency, async ([id, name]) => [id, await byName(id, name)] as const)) {
    if (node !== undefined) found.set(id, node);
  }
  return found;
}

/**
 * One list+watch of the node under the instance's EC2 name. A scan only when nothing shows
 * under it for a while (scanEveryMs), or every scanWithoutNameEveryMs when EC2 gave no name
 * (none yet, no permission); a node found under another name is followed from then on. EC2
 * throttled or busy is asked again later (backoff up to a minute), never replaced by scans:
 * the view throws meanwhile, so a launch is never abandoned on our own failure.
 */
class NamedNodeWatch implements NodeWatch {
  private scanned: NodeInfo | undefined;
  private scanError: Error | undefined;
  private lastScanMs: number;
  /** EC2 was busy: when to ask it for the name again, and why we wait. */
  private nameRetry: { atMs: number; attempt: number; error: Error } | undefined;

  private constructor(
    private readonly instanceId: string,
    private name: string | undefined,
    private named: NodeWatch | undefined,
    private readonly reader: NodeReader,
    private readonly clock: Clock,
    private readonly log: Log,
    private readonly every: { readonly scanEveryMs: number; readonly scanWithoutNameEveryMs: number },
    private readonly namesOf: AskNames,
  ) {
    this.lastScanMs = named !== undefined ? clock.now() : Number.NEGATIVE_INFINITY;
  }

  static async open(instanceId: string, reader: NodeReader, namesOf: AskNames, clock: Clock, log: Log, every: NamedNodeWatch['every']): Promise<NodeWatch> {
    const { names, failure, busy } = await namesOf([instanceId]);
    const name = names.get(instanceId);
    const named = name !== undefined ? await reader.watchNodeNamed(name) : undefined;
    const watch = new NamedNodeWatch(instanceId, name, named, reader, clock, log, every, namesOf);
    if (busy && failure !== undefined) watch.nameRetry = { atMs: clock.now() + 5_000, attempt: 1, error: failure };
    else if (named === undefined) await watch.scan();
    return watch;
  }

  current(): NodeInfo | undefined {
    const node = this.fromWatch();
    if (node !== undefined) return node;
    if (this.nameRetry !== undefined) throw this.nameRetry.error;
    if (this.named === undefined && this.scanError !== undefined) throw this.scanError;
    return this.named === undefined ? this.scanned : undefined;
  }

  async changed(timeoutMs: number): Promise<void> {
    if (this.nameRetry !== undefined) return this.retryName(timeoutMs);
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

  /** EC2 was busy: wait for the next ask, then ask; a name opens the watch, anything else falls back to scans. */
  private async retryName(timeoutMs: number): Promise<void> {
    const retry = this.nameRetry!;
    const dueInMs = retry.atMs - this.clock.now();
    if (dueInMs > 0) return this.clock.sleep(Math.min(timeoutMs, dueInMs));
    const { names, failure, busy } = await this.namesOf([this.instanceId]);
    if (busy && failure !== undefined) {
      this.nameRetry = { atMs: this.clock.now() + Math.min(60_000, 5_000 * 2 ** retry.attempt), attempt: retry.attempt + 1, error: failure };
      return;
    }
    this.nameRetry = undefined;
    this.name = names.get(this.instanceId);
    if (this.name !== undefined) {
      this.named = await this.reader.watchNodeNamed(this.name);
      // As when named at once: the node gets scanEveryMs to show under its name before a scan.
      this.lastScanMs = this.clock.now();
    } else await this.scan();
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

/**
 * EC2's names. Throttled or busy (the runtime has already asked again for a while,
 * aws-patience.ts), the caller is told so: a launch asks again later and a sibling lookup
 * gives up, rather than scanning the node list, which in a wave would be one list per drain.
 * Any other failure (no permission, unreachable) is logged and costs only the fast path.
 */
export async function askNames(
  directory: Pick<InstanceDirectory, 'privateDnsNames'> | undefined,
  instanceIds: readonly string[],
  log: Log,
): Promise<{ readonly names: ReadonlyMap<string, string>; readonly failure: Error | undefined; readonly busy: boolean }> {
  if (directory === undefined || instanceIds.length === 0) return { names: new Map(), failure: undefined, busy: false };
  try {
    return { names: await directory.privateDnsNames(instanceIds), failure: undefined, busy: false };
  } catch (error) {
    log.warn("could not ask EC2 for the instances' private DNS names; looking the nodes up without them", asError(error));
    return { names: new Map(), failure: asError(error), busy: error instanceof ServiceBusyError };
  }
}
