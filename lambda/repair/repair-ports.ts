// What one repair pass works with: the runtime's ports, narrowed to what repair uses.
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { NodeInfo } from '../cluster/model.js';
import type { PodGateway } from '../cluster/ports/pod-gateway.js';
import type { RepairGateway } from '../cluster/ports/repair-gateway.js';
import type { AutoScalingInstances, GroupMember, InstanceRepairs, MetricsSink } from '../shared/aws-ports.js';
import type { Clock } from '../shared/clock.js';
import type { Config } from '../shared/config.js';
import type { Log } from '../shared/log.js';
import type { RepairSettings } from '../shared/repair-settings.js';
import type { Verdict } from './rules.js';

export interface RepairDeps {
  readonly cluster: RepairGateway &
    EventRecorder &
    Pick<PodGateway, 'watchPodsOnNode' | 'evictPod' | 'deletePod' | 'pendingReplacements' | 'watchBudgets'>;
  readonly instances: Pick<AutoScalingInstances, 'describe'>;
  readonly repairs: InstanceRepairs;
  readonly config: Config;
  readonly settings: RepairSettings;
  readonly clock: Clock;
  readonly log: Log;
  readonly metrics?: MetricsSink | undefined;
}

/** What one pass did, by node (groups for `held`). */
export interface RepairReport {
  readonly nodes: number;
  unhealthy: number;
  readonly replacing: string[];
  readonly rebooting: string[];
  readonly rebooted: string[];
  readonly recovered: string[];
  readonly deferred: string[];
  readonly held: string[];
  readonly noAction: string[];
  /** Due when listed, healthy (or changed) when read again: left alone. */
  readonly changedMind: string[];
}

export const emptyReport = (nodes: number): RepairReport => ({
  nodes,
  unhealthy: 0,
  replacing: [],
  rebooting: [],
  rebooted: [],
  recovered: [],
  deferred: [],
  held: [],
  noAction: [],
  changedMind: [],
});

/** A node of a served group, its place in the group and what its conditions say. */
export interface Judged {
  readonly node: NodeInfo;
  readonly member: GroupMember;
  readonly verdict: Verdict;
}
