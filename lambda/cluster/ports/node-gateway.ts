// The nodes: find the node of an instance (providerID decides), and every mark of ours written or
// taken back, each conditional on the node as read.
import type { DrainRecord, MigrationRecord, NodeInfo, PatchResult } from '../model.js';
import { type ConditionsGateway } from './conditions-gateway.js';

/** The node marks one drain patch applies, with the owner label and the record. */
export interface NodeMarks {
  readonly excludeFromLoadBalancers: boolean;
  readonly cordon: boolean;
  readonly drain: DrainRecord;
  /** The deployment: the owner label's value. */
  readonly owner: string;
  /** The hand-off claim written with the marks: a first invocation's own (claim.ts, count 0). */
  readonly claim?: string | undefined;
}

/** What a refresh of ours sets on an outdated node: only that is taken back. */
export interface OutdatedMarks {
  readonly refreshId: string;
  readonly group: string;
  readonly owner: string;
  /** Our PreferNoSchedule taint (outdatedTaintKey): evicted pods prefer new nodes, capacity is never refused. */
  readonly taint: boolean;
  /** spec.unschedulable, with the `minimal` strategy (managed groups' MINIMAL: cordon all first). */
  readonly cordon: boolean;
}

export interface OutdatedUnmarked {
  readonly node: string;
  readonly uid: string;
  readonly refreshId: string;
  readonly removed: readonly string[];
}

export interface NodeGateway extends Partial<ConditionsGateway> {
  /**
   * Finds the node whose spec.providerID ends in /<instanceId>. A name may be tried first
   * (EC2's private DNS name), but only the providerID decides: never by name alone.
   */
  findNodeByInstanceId(instanceId: string): Promise<NodeInfo | undefined>;
  /**
   * The nodes of several instances at once, by the same rule: their EC2 names in one list per
   * batch (the hostname label; a GET for a name the list does not answer), and one scan of the
   * node list for all whose node is not under its EC2 name. With `skipNames`,
   * instances whose EC2 name is there are left out unread; with `scan: false` there is no
   * scan, and EC2 failing is an error rather than a reason to scan.
   */
  findNodesOfInstances(
    instanceIds: readonly string[],
    options?: {
      readonly skipNames?: ReadonlySet<string>;
      readonly scan?: boolean;
      /** Of the instances left after skipNames, which to read (in order, at most how many). */
      readonly pick?: (instanceIds: readonly string[]) => readonly string[];
      /** false: not read by name at all (already tried), straight to the one scan for those not skipped. */
      readonly byName?: boolean;
    },
  ): Promise<ReadonlyMap<string, NodeInfo>>;
  /** Follows one instance's node (one list, then a watch) until closed: launch admission. */
  watchNodeOf(instanceId: string): Promise<NodeWatch>;
  /** Every node carrying a mark of this owner: one label-selector list (the reconciler). */
  listMarked(owner: string): Promise<readonly NodeInfo[]>;
  /**
   * The names of the nodes a drain of this owner marked (its owner label and the exclusion label): one list of names.
   */
  drainMarkedNames(owner: string): Promise<ReadonlySet<string>>;
  /** One merge patch: the owner label, the exclusion label and cordon where asked, the record. */
  mark(nodeName: string, marks: NodeMarks, ifResourceVersion?: string): Promise<PatchResult>;
  /**
   * Takes back exactly what our drain record says we set (the load-balancer label restored
   * to its prior value, the cordon) and removes our record and hand-off annotations; the owner
   * label too unless a refresh mark of ours remains. Conditional on the node as read.
   */
  unmark(node: NodeInfo, record: DrainRecord): Promise<PatchResult>;
  /**
   * Writes our drain record as a drain carries it on (its surges, before each restart), over the one there: the
   * drain phase's one write of the record between mark and the hand-off.
   */
  saveDrainRecord(nodeName: string, record: DrainRecord): Promise<PatchResult>;
  /**
   * Compare-and-swap of the node's hand-off annotation (optimistic concurrency on the
   * node's resourceVersion): only the invocation that finds `expected` there moves it to
   * `next`, writing the record beside it. Two deliveries of one hand-off never both carry on.
   */
  claimHandOff(
    nodeName: string,
    expected: string | undefined,
    next: string,
    record: DrainRecord,
  ): Promise<'claimed' | 'lost' | 'node-gone'>;
  /** Marks an outdated node for an instance refresh, conditional on the node as read. */
  markOutdated(node: NodeInfo, marks: OutdatedMarks): Promise<PatchResult>;
  /**
   * Takes back exactly what refresh marks of this group set, on every node labelled for one
   * of them; `keep` names a refresh whose marks stay. A node a drain of ours is draining
   * keeps its cordon (the drain owns it now).
   */
  unmarkOutdated(
    group: string,
    select: { readonly refreshId?: string; readonly keep?: string; readonly nodes?: readonly NodeInfo[] },
  ): Promise<readonly OutdatedUnmarked[]>;
  /**
   * A migration's marks (or its renewed record), conditional on the node as read; the taint and cordon only where
   * asked.
   */
  markMigrating(
    node: NodeInfo,
    marks: {
      readonly record: MigrationRecord;
      readonly owner: string;
      readonly taint: boolean;
      readonly cordon: boolean;
    },
  ): Promise<PatchResult>;
  /**
   * Takes back exactly what the node's migration record says was set, conditional on the node as read; what was
   * removed.
   */
  unmarkMigrating(node: NodeInfo): Promise<{ readonly result: PatchResult; readonly removed: readonly string[] }>;
}

/** A live view of one instance's node. */
export interface NodeWatch {
  /**
   * The node as last seen (undefined: none with this instance has registered). Throws the
   * last error while the view cannot be kept current (our requests fail): no answer is not
   * "no node", and launch admission must not abandon an instance on our own failure.
   */
  current(): NodeInfo | undefined;
  /** Resolves when the node may have changed since the last call, or after timeoutMs. */
  changed(timeoutMs: number): Promise<void>;
  /**
   * Before the caller gives up on the node: looks for it beyond its name once more, so a node
   * registered under another name since the last look is seen. Absent where every look sees every node.
   */
  lastLook?(): Promise<void>;
  close(): void;
}
