// A live view of one instance's node for launch admission: under its EC2 name when EC2 gives one
// (one list, then a watch), and a scan of the node list now and then for a node named otherwise.
import { type Clock } from '../../shared/clock.js';
import { asError, type Log } from '../../shared/log.js';
import { type NodeWatch } from '../../cluster/ports/node-gateway.js';
import { type NodeInfo } from '../../cluster/model.js';
import { instanceMatches } from '../../cluster/rules/provider-id.js';
import { type NodeReader } from './node-reader.js';
import { type AskNames } from './instance-names.js';

/**
 * One list+watch of the node under the instance's EC2 name. A scan only when nothing shows
 * under it for a while (scanEveryMs), or every scanWithoutNameEveryMs when EC2 gave no name
 * (none yet, no permission); a node found under another name is followed from then on. EC2
 * throttled or busy is asked again later (backoff up to a minute), never replaced by scans:
 * the view throws meanwhile, so a launch is never abandoned on our own failure.
 */
export class NamedNodeWatch implements NodeWatch {
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

  static async open(
    instanceId: string,
    reader: NodeReader,
    namesOf: AskNames,
    clock: Clock,
    log: Log,
    every: NamedNodeWatch['every'],
  ): Promise<NodeWatch> {
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

  /** A scan now unless the node shows under its name: the scans' minute may not come before the caller's deadline. */
  async lastLook(): Promise<void> {
    if (this.nameRetry === undefined && this.fromWatch() === undefined) await this.scan();
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
      this.nameRetry = {
        atMs: this.clock.now() + Math.min(60_000, 5_000 * 2 ** retry.attempt),
        attempt: retry.attempt + 1,
        error: failure,
      };
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
      this.log.info("found the node under a name other than the instance's EC2 name; watching it", {
        node: this.scanned.name,
        ec2Name: this.name ?? null,
      });
      this.named?.close();
      this.name = this.scanned.name;
      this.named = await this.reader.watchNodeNamed(this.name);
    }
  }
}
