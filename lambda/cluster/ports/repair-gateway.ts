// What node auto repair reads of a node's health and writes about it (repair/).
import type { NodeInfo, PatchResult, RepairRecord } from '../model.js';

/** Node auto repair's reads and writes (repair/). */
export interface RepairGateway {
  /**
   * The nodes with their conditions (label-selected when a selector is given), each handed to
   * `pick` as it is read: the pass keeps what it may act on, never the whole cluster.
   */
  listNodeHealth<T>(
    selector: string | undefined,
    pick: (node: NodeInfo) => T | undefined,
  ): Promise<{ readonly picked: readonly T[]; readonly listed: number }>;
  /** One node read again, just before acting on it. */
  getNodeHealth(name: string): Promise<NodeInfo | undefined>;
  /** Our record and owner label (and the cordon the record says we set), conditional on the node as read. */
  markRepair(node: NodeInfo, record: RepairRecord, owner: string): Promise<PatchResult>;
  /**
   * Removes our record (and our cordon, and the owner label unless another mark of ours stays), conditional on the node
   * as read.
   */
  unmarkRepair(node: NodeInfo, record: RepairRecord): Promise<PatchResult>;
}
