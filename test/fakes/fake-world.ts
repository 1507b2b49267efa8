// An in-memory cluster, lifecycle actions, clock and log for fast unit tests of the drain
// logic. It is a discrete-event simulation: time only moves when the code under test
// sleeps or waits for a change, so scenarios that take minutes run in milliseconds and
// always the same way. Kubernetes behaviour itself is proven in test/cluster/.
import { sameSource } from '../../lambda/cluster/rules/drain-source.js';
import type {
  ClusterEvent,
  EvictionResult,
  NodeInfo,
  PatchResult,
  PodInfo,
  VolumeAttachmentInfo,
  DrainRecord,
  MigrationRecord,
  RepairRecord,
  DeferralMark,
} from '../../lambda/cluster/model.js';
import type { ClusterGateway } from '../../lambda/cluster/ports/cluster-gateway.js';
import type { TargetReadings } from '../../lambda/cluster/ports/target-readings.js';
import { FakeReadingStore } from './fake-target-readings.js';
import type { NodeMarks, NodeWatch, OutdatedMarks, OutdatedUnmarked } from '../../lambda/cluster/ports/node-gateway.js';
import type { BudgetView, BudgetWatch, PodWatch } from '../../lambda/cluster/ports/pod-gateway.js';
import type { VolumeAttachmentWatch } from '../../lambda/cluster/ports/volume-gateway.js';
import {
  excludeFromLoadBalancersLabel,
  migratingTaintKey,
  migrationLabel,
  outdatedTaintKey,
  ownerLabel,
  refreshCordonedLabel,
  refreshLabel,
} from '../../lambda/cluster/marks/mark-keys.js';

import { otherMarksOfOurs } from '../../lambda/cluster/marks/our-marks.js';
import { createRouter, type HandlerResult } from '../../lambda/router.js';
import type { ChoiceAnswer } from '../../lambda/termination-policy/answer.js';
import type {
  AutoScalingInstances,
  GroupMember,
  GroupView,
  HandOffs,
  InstanceDirectory,
  InstanceRepairs,
  InstanceState,
  LifecycleActionRef,
  LifecycleActions,
  LifecycleResult,
  LoadBalancerRegistry,
  LoadBalancerTargets,
  MetricsSink,
  Purchase,
  RefreshView,
  TargetHold,
  TargetReading,
  TargetScope,
  InstanceRunState,
} from '../../lambda/shared/aws-ports.js';
import type { ServedLoadBalancers } from '../../lambda/shared/served-load-balancers.js';
import type { Finding } from '../../lambda/cluster/ports/drainability-gateway.js';

import type { CostPod } from '../../lambda/cluster/ports/choice-gateway.js';

import { attachmentNameOf, csiVolumeName } from '../../lambda/cluster/rules/volume-names.js';
import type { Clock } from '../../lambda/shared/clock.js';
import { parseConfig } from '../../lambda/shared/config.js';
import type { LogExtra, RecordLogger } from '../../lambda/shared/log.js';
import { lifecycleMessage, snsEvent } from '../fixtures/notifications.js';

export class FakeClock implements Clock {
  private scheduled: { atMs: number; run: () => void }[] = [];
  constructor(public nowMs = Date.parse('2026-11-22T10:00:00Z')) {}

  now(): number {
    return this.nowMs;
  }

  async sleep(ms: number): Promise<void> {
    this.advanceTo(this.nowMs + ms);
  }

  at(atMs: number, run: () => void): void {
    this.scheduled.push({ atMs, run });
    this.scheduled.sort((a, b) => a.atMs - b.atMs);
  }

  after(ms: number, run: () => void): void {
    this.at(this.nowMs + ms, run);
  }

  nextScheduledMs(): number | undefined {
    return this.scheduled[0]?.atMs;
  }

  /** Runs everything scheduled up to atMs, in order, then sets the time to atMs. */
  advanceTo(atMs: number): void {
    for (let next = this.scheduled[0]; next && next.atMs <= atMs; next = this.scheduled[0]) {
      this.scheduled.shift();
      this.nowMs = Math.max(this.nowMs, next.atMs);
      next.run();
    }
    this.nowMs = Math.max(this.nowMs, atMs);
  }
}

export interface FakePod extends PodInfo {
  nodeName: string;
  /** How long the pod takes to go once deleted (its grace period in practice). */
  terminationMs: number;
}

export type EvictionRule = (pod: FakePod) => EvictionResult | 'accept';

export interface Call {
  readonly atMs: number;
  readonly op:
    | 'list-nodes'
    | 'get-nodes'
    | 'list-marked'
    | 'mark-outdated'
    | 'unmark-outdated'
    | 'mark-migrating'
    | 'unmark-migrating'
    | 'mark'
    | 'unmark'
    | 'watch-pods'
    | 'evict'
    | 'watch-budget'
    | 'claim-hand-off'
    | 'save-drain-record'
    | 'delete'
    | 'watch-attachments'
    | 'get-volume'
    | 'get-attachments'
    | 'list-served-load-balancers'
    | 'list-pods-and-budgets'
    | 'list-pods-for-choice'
    | 'mark-deferred'
    | 'unmark-deferred'
    | 'list-node-health'
    | 'get-node-health'
    | 'mark-repair'
    | 'unmark-repair';
  readonly target: string;
}

let uidCounter = 0;
export const newUid = (): string => `uid-${++uidCounter}`;

export function pod(overrides: Partial<FakePod> & { name: string }): FakePod {
  return {
    namespace: 'default',
    uid: newUid(),
    phase: 'Running',
    controllerKind: 'ReplicaSet',
    annotations: {},
    priorityClassName: undefined,
    deletionTimestamp: undefined,
    tolerations: [],
    nodeName: 'node-a',
    terminationMs: 0,
    ...overrides,
  };
}

export class FakeCluster {
  /** The shared load-balancer readings of every deployment (one store: tests use one deployment). */
  readonly readingStore = new FakeReadingStore();
  targetReadings(_deployment: string): TargetReadings {
    return this.readingStore.readingsFor();
  }
  readonly nodes = new Map<string, NodeInfo & { providerId: string }>();
  readonly pods = new Map<string, FakePod>();
  readonly events: ClusterEvent[] = [];
  readonly calls: Call[] = [];
  evictionRules: EvictionRule[] = [];
  /** Called after every eviction the fake accepts, e.g. to start a replacement. */
  onEvicted: (pod: FakePod) => void = () => {};
  private version = 0;

  constructor(readonly clock: FakeClock) {}

  /** Changes a node in place (registration, readiness, taints) and wakes watchers. */
  updateNode(name: string, change: Partial<NodeInfo>): void {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no node ${name}`);
    this.putNode({ ...node, ...change });
  }

  addNode(name: string, instanceId: string, extra: Partial<NodeInfo> = {}): NodeInfo {
    const node: NodeInfo = {
      name,
      uid: `node-uid-${name}`,
      providerId: `aws:///eu-west-1a/${instanceId}`,
      unschedulable: false,
      labels: {},
      ready: true,
      taints: [],
      ...(this.attachedBefore(name).length > 0 ? { attachedVolumes: this.attachedBefore(name) } : {}),
      ...extra,
    };
    // As the API server: every node read has a resourceVersion, so a conditional write is conditional.
    this.putNode(node);
    return this.nodes.get(name)!;
  }

  addPod(p: FakePod): FakePod {
    this.pods.set(p.uid, p);
    this.version++;
    return p;
  }

  /** The pod's containers exit: it stays on the node as Succeeded, like a finished Job pod. */
  finishPod(uid: string): void {
    const p = this.pods.get(uid);
    if (!p) return;
    this.pods.set(uid, { ...p, phase: 'Succeeded' });
    this.version++;
  }

  removePod(uid: string): void {
    if (this.pods.delete(uid)) this.version++;
  }

  podsOn(nodeName: string): FakePod[] {
    return [...this.pods.values()].filter((p) => p.nodeName === nodeName);
  }

  private log(op: Call['op'], target: string): void {
    this.calls.push({ atMs: this.clock.now(), op, target });
  }

  // --- NodeGateway
  async findNodeByInstanceId(instanceId: string): Promise<NodeInfo | undefined> {
    this.log('list-nodes', instanceId);
    return [...this.nodes.values()].find((n) => n.providerId.endsWith(`/${instanceId}`));
  }

  /** EC2's names where a node is registered under another (--hostname-override); else the node's own name stands for it. */
  readonly ec2Names = new Map<string, string>();

  async findNodesOfInstances(
    instanceIds: readonly string[],
    o: { skipNames?: ReadonlySet<string>; pick?: (ids: readonly string[]) => readonly string[]; byName?: boolean } = {},
  ): Promise<ReadonlyMap<string, NodeInfo>> {
    // A skipped name is not read. An instance without a node is named by EC2 all the same:
    // read, and not found; a node under another name is not found by name, only by a scan.
    const nodeOf = (id: string) => [...this.nodes.values()].find((n) => n.providerId.endsWith(`/${id}`));
    const nameOf = (id: string) => this.ec2Names.get(id) ?? nodeOf(id)?.name;
    const unmarked = instanceIds.filter((id) => !o.skipNames?.has(nameOf(id) ?? ''));
    if (o.byName === false) {
      this.log('list-nodes', unmarked.join(' '));
      return new Map(unmarked.flatMap((id) => (nodeOf(id) !== undefined ? [[id, nodeOf(id)!] as const] : [])));
    }
    const read = (o.pick?.(unmarked) ?? unmarked).map(
      (id) => [id, nodeOf(id)?.name === nameOf(id) ? nodeOf(id) : undefined] as const,
    );
    this.log('get-nodes', read.map(([id]) => id).join(' '));
    return new Map(read.filter((entry): entry is readonly [string, NodeInfo] => entry[1] !== undefined));
  }

  /**
   * A watch as the lookup keeps one: the node as last looked up (through
   * findNodeByInstanceId, so a test that makes lookups fail makes the watch fail), looked up
   * again when something is scheduled or at the latest every 5 s (a broken watch resumes).
   */
  async watchNodeOf(instanceId: string): Promise<NodeWatch> {
    let node: NodeInfo | undefined;
    let error: unknown;
    const refresh = async () => {
      try {
        node = await this.findNodeByInstanceId(instanceId);
        error = undefined;
      } catch (e) {
        error = e;
      }
    };
    await refresh();
    return {
      current: () => {
        if (error !== undefined) throw error;
        return node;
      },
      changed: async (timeoutMs: number) => {
        const until = this.clock.now() + Math.min(timeoutMs, 5_000);
        const next = this.clock.nextScheduledMs();
        this.clock.advanceTo(next !== undefined && next <= until ? next : until);
        await refresh();
      },
      close: () => {},
    };
  }

  async drainMarkedNames(owner: string): Promise<ReadonlySet<string>> {
    this.log('list-marked', owner);
    return new Set(
      [...this.nodes.values()]
        .filter((n) => n.labels[ownerLabel] === owner && n.labels[excludeFromLoadBalancersLabel] === 'true')
        .map((n) => n.name),
    );
  }

  async listMarked(owner: string): Promise<readonly NodeInfo[]> {
    this.log('list-marked', owner);
    return [...this.nodes.values()].filter((n) => n.labels[ownerLabel] === owner);
  }

  async mark(name: string, marks: NodeMarks, ifResourceVersion?: string): Promise<PatchResult> {
    this.log('mark', `${name}${marks.excludeFromLoadBalancers ? ' label' : ''}${marks.cordon ? ' cordon' : ''}`);
    const node = this.nodes.get(name);
    if (!node) return 'node-gone';
    if (
      ifResourceVersion !== undefined &&
      node.resourceVersion !== undefined &&
      ifResourceVersion !== node.resourceVersion
    )
      return 'changed';
    this.putNode({
      ...node,
      labels: {
        ...node.labels,
        [ownerLabel]: marks.owner,
        ...(marks.excludeFromLoadBalancers ? { [excludeFromLoadBalancersLabel]: 'true' } : {}),
      },
      unschedulable: node.unschedulable || marks.cordon,
      drain: marks.drain,
      ...(marks.claim !== undefined ? { handOffClaim: marks.claim } : {}),
    });
    return 'patched';
  }

  async unmark(read: NodeInfo, record: DrainRecord): Promise<PatchResult> {
    this.log('unmark', `${read.name} ${record.set.join(' ')}`);
    const node = this.nodes.get(read.name);
    if (!node) return 'node-gone';
    if (
      node.drain === undefined ||
      !sameSource(node.drain.source, record.source) ||
      node.drain.startedAtMs !== record.startedAtMs
    )
      return 'changed';
    const labels = { ...node.labels };
    if (record.set.includes('exclude-from-load-balancers')) {
      if (record.priorLabel !== undefined) labels[excludeFromLoadBalancersLabel] = record.priorLabel;
      else delete labels[excludeFromLoadBalancersLabel];
    }
    if (!otherMarksOfOurs(node, 'drain')) delete labels[ownerLabel];
    this.putNode({
      ...node,
      labels,
      unschedulable: record.set.includes('cordon') ? false : node.unschedulable,
      drain: undefined,
      handOffClaim: undefined,
    });
    return 'patched';
  }

  async markOutdated(node: NodeInfo, marks: OutdatedMarks): Promise<PatchResult> {
    this.log('mark-outdated', `${node.name}${marks.taint ? ' taint' : ''}${marks.cordon ? ' cordon' : ''}`);
    const current = this.nodes.get(node.name);
    if (!current) return 'node-gone';
    if (node.resourceVersion !== undefined && current.resourceVersion !== node.resourceVersion) return 'changed';
    this.putNode({
      ...current,
      labels: {
        ...current.labels,
        [refreshLabel]: marks.refreshId,
        [ownerLabel]: marks.owner,
        ...(marks.cordon ? { [refreshCordonedLabel]: 'true' } : {}),
      },
      refreshGroup: marks.group,
      taints: marks.taint
        ? [...current.taints, { key: outdatedTaintKey, value: marks.refreshId, effect: 'PreferNoSchedule' }]
        : current.taints,
      unschedulable: current.unschedulable || marks.cordon,
    });
    return 'patched';
  }

  async unmarkOutdated(
    group: string,
    select: { readonly refreshId?: string; readonly keep?: string; readonly nodes?: readonly NodeInfo[] },
  ): Promise<readonly OutdatedUnmarked[]> {
    this.log('unmark-outdated', `${group} ${select.refreshId ?? `all but ${select.keep ?? '-'}`}`);
    const undone: OutdatedUnmarked[] = [];
    const candidates = select.nodes
      ? select.nodes.map((n) => this.nodes.get(n.name)).filter((n): n is NodeInfo => n !== undefined)
      : [...this.nodes.values()];
    for (const node of candidates) {
      const refreshId = node.labels[refreshLabel];
      if (
        refreshId === undefined ||
        (node.refreshGroup !== undefined && node.refreshGroup !== group) ||
        refreshId === select.keep
      )
        continue;
      if (select.refreshId !== undefined && refreshId !== select.refreshId) continue;
      const removed: string[] = [];
      const labels = { ...node.labels };
      delete labels[refreshLabel];
      const taints = node.taints.filter((t) => t.key !== outdatedTaintKey);
      if (taints.length !== node.taints.length) removed.push(`taint ${outdatedTaintKey}:PreferNoSchedule`);
      let unschedulable = node.unschedulable;
      if (labels[refreshCordonedLabel] !== undefined) {
        delete labels[refreshCordonedLabel];
        if (node.unschedulable && node.drain === undefined) {
          unschedulable = false;
          removed.push('cordon');
        }
      }
      if (!otherMarksOfOurs(node, 'refresh')) delete labels[ownerLabel];
      this.putNode({ ...node, labels, taints, unschedulable, refreshGroup: undefined });
      undone.push({ node: node.name, uid: node.uid, refreshId, removed });
    }
    return undone;
  }

  async markMigrating(
    node: NodeInfo,
    marks: {
      readonly record: MigrationRecord;
      readonly owner: string;
      readonly taint: boolean;
      readonly cordon: boolean;
    },
  ): Promise<PatchResult> {
    this.log('mark-migrating', `${node.name}${marks.taint ? ' taint' : ''}${marks.cordon ? ' cordon' : ''}`);
    const current = this.nodes.get(node.name);
    if (!current) return 'node-gone';
    if (node.resourceVersion !== undefined && current.resourceVersion !== node.resourceVersion) return 'changed';
    const taint = { key: migratingTaintKey, value: marks.record.id, effect: 'PreferNoSchedule' };
    this.putNode({
      ...current,
      labels: { ...current.labels, [migrationLabel]: marks.record.id, [ownerLabel]: marks.owner },
      migration: marks.record,
      taints: marks.taint ? [...current.taints, taint] : current.taints,
      unschedulable: current.unschedulable || marks.cordon,
    });
    return 'patched';
  }

  async unmarkMigrating(
    node: NodeInfo,
  ): Promise<{ readonly result: PatchResult; readonly removed: readonly string[] }> {
    this.log('unmark-migrating', node.name);
    const current = this.nodes.get(node.name);
    if (!current) return { result: 'node-gone', removed: [] };
    if (node.resourceVersion !== undefined && current.resourceVersion !== node.resourceVersion)
      return { result: 'changed', removed: [] };
    const removed: string[] = [];
    const labels = { ...current.labels };
    delete labels[migrationLabel];
    const taints = current.taints.filter((t) => t.key !== migratingTaintKey);
    if (taints.length !== current.taints.length) removed.push(`taint ${migratingTaintKey}:PreferNoSchedule`);
    const lift = current.migration?.cordoned === true && current.unschedulable && current.drain === undefined;
    if (lift) removed.push('cordon');
    if (!otherMarksOfOurs(current, 'migration')) delete labels[ownerLabel];
    this.putNode({
      ...current,
      labels,
      taints,
      unschedulable: lift ? false : current.unschedulable,
      migration: undefined,
    });
    return { result: 'patched', removed };
  }

  async claimHandOff(
    name: string,
    expected: string | undefined,
    next: string,
    record: DrainRecord,
  ): Promise<'claimed' | 'lost' | 'node-gone'> {
    this.log('claim-hand-off', `${name} ${expected ?? '-'} -> ${next}`);
    const node = this.nodes.get(name);
    if (!node) return 'node-gone';
    if (node.handOffClaim !== expected) return 'lost';
    this.putNode({ ...node, handOffClaim: next, drain: record });
    return 'claimed';
  }

  async saveDrainRecord(name: string, record: DrainRecord): Promise<PatchResult> {
    this.log('save-drain-record', name);
    const node = this.nodes.get(name);
    if (!node) return 'node-gone';
    this.putNode({ ...node, drain: record });
    return 'patched';
  }

  // --- RepairGateway
  async listNodeHealth<T>(
    selector: string | undefined,
    pick: (node: NodeInfo) => T | undefined,
  ): Promise<{ picked: T[]; listed: number }> {
    this.log('list-node-health', selector ?? '');
    const [key, value] = (selector ?? '').split('=');
    const nodes = [...this.nodes.values()].filter((n) => selector === undefined || n.labels[key!] === value);
    const picked: T[] = [];
    for (const node of nodes) {
      const kept = pick(node);
      if (kept !== undefined) picked.push(kept);
    }
    return { picked, listed: nodes.length };
  }
  async getNodeHealth(name: string): Promise<NodeInfo | undefined> {
    this.log('get-node-health', name);
    return this.nodes.get(name);
  }
  async markRepair(read: NodeInfo, record: RepairRecord, owner: string): Promise<PatchResult> {
    this.log('mark-repair', `${read.name} ${record.action}${record.rebootedAtMs !== undefined ? ' rebooted' : ''}`);
    const node = this.nodes.get(read.name);
    if (!node) return 'node-gone';
    if (read.resourceVersion !== undefined && node.resourceVersion !== read.resourceVersion) return 'changed';
    this.putNode({
      ...node,
      labels: { ...node.labels, [ownerLabel]: owner },
      unschedulable: node.unschedulable || record.cordoned,
      repair: record,
    });
    return 'patched';
  }
  async unmarkRepair(read: NodeInfo, record: RepairRecord): Promise<PatchResult> {
    this.log('unmark-repair', read.name);
    const node = this.nodes.get(read.name);
    if (!node) return 'node-gone';
    if (node.repair === undefined || node.repair.decidedAtMs !== record.decidedAtMs) return 'changed';
    const labels = { ...node.labels };
    if (!otherMarksOfOurs(node, 'repair')) delete labels[ownerLabel];
    this.putNode({
      ...node,
      labels,
      unschedulable: record.cordoned && node.drain === undefined ? false : node.unschedulable,
      repair: undefined,
    });
    return 'patched';
  }

  /** Every write moves the node's resourceVersion on, as the API server does. */
  private putNode(node: NodeInfo & { providerId: string }): void {
    this.nodes.set(node.name, { ...node, resourceVersion: String(++this.resourceVersion) });
    this.version++;
  }
  private resourceVersion = 1;

  // --- PodGateway
  async watchPodsOnNode(nodeName: string): Promise<PodWatch> {
    this.log('watch-pods', nodeName);
    let seen = this.version;
    return {
      current: () => this.podsOn(nodeName),
      changed: async (timeoutMs: number) => {
        // Let concurrently running drains (duplicate deliveries) take their turn first.
        await new Promise((resolve) => setImmediate(resolve));
        if (this.version !== seen) {
          seen = this.version;
          return;
        }
        const until = this.clock.now() + timeoutMs;
        const next = this.clock.nextScheduledMs();
        this.clock.advanceTo(next !== undefined && next <= until ? next : until);
        seen = this.version;
      },
      close: () => {},
    };
  }

  async evictPod(target: PodInfo): Promise<EvictionResult> {
    this.log('evict', `${target.namespace}/${target.name}`);
    const current = [...this.pods.values()].find((p) => p.namespace === target.namespace && p.name === target.name);
    if (!current || current.uid !== target.uid) return { kind: 'gone' };
    if (current.deletionTimestamp) return { kind: 'evicted' };
    for (const rule of this.evictionRules) {
      const verdict = rule(current);
      if (verdict !== 'accept') return verdict;
    }
    // As the API server does: deletionTimestamp is when the grace period ends.
    this.pods.set(current.uid, {
      ...current,
      deletionTimestamp: new Date(this.clock.now() + (current.terminationGracePeriodSeconds ?? 30) * 1000),
    });
    this.version++;
    if (current.terminationMs === 0) this.removePod(current.uid);
    else this.clock.after(current.terminationMs, () => this.removePod(current.uid));
    this.onEvicted(current);
    return { kind: 'evicted' };
  }

  /** PodDisruptionBudgets by namespace/name as their watches show them (budgetRefuses keeps them). */
  readonly budgets = new Map<string, BudgetView>();
  /** Budget watches opened (one per namespace), and whether the drain closed them. */
  readonly budgetWatches: { namespace: string; closed: boolean }[] = [];

  watchBudgets(namespace: string): BudgetWatch {
    this.log('watch-budget', namespace);
    const watch = { namespace, closed: false };
    this.budgetWatches.push(watch);
    return {
      current: (name) => (watch.closed ? undefined : this.budgets.get(`${namespace}/${name}`)),
      close: () => void (watch.closed = true),
    };
  }

  readonly deletions: { pod: string; gracePeriodSeconds: number; atMs: number }[] = [];
  /** What pendingReplacements answers (the scheduler's view, set by a test). */
  pending: { pod: string; reason: string }[] = [];

  async pendingReplacements(): Promise<readonly { pod: string; reason: string }[]> {
    return this.pending;
  }

  async deletePod(target: PodInfo, gracePeriodSeconds: number): Promise<'deleted' | 'unchanged' | 'gone'> {
    this.log('delete', `${target.namespace}/${target.name}`);
    const current = this.pods.get(target.uid);
    if (!current) return 'gone';
    const endsMs = this.clock.now() + gracePeriodSeconds * 1000;
    if (current.deletionTimestamp && current.deletionTimestamp.getTime() <= endsMs) return 'unchanged';
    this.deletions.push({ pod: `${target.namespace}/${target.name}`, gracePeriodSeconds, atMs: this.clock.now() });
    this.pods.set(current.uid, { ...current, deletionTimestamp: new Date(endsMs) });
    this.version++;
    const goneInMs = Math.min(current.terminationMs, gracePeriodSeconds * 1000);
    if (goneInMs === 0) this.removePod(current.uid);
    else this.clock.after(goneInMs, () => this.removePod(current.uid));
    return 'deleted';
  }

  // --- VolumeGateway
  /** VolumeAttachments by name; the PersistentVolumes' claims (`namespace/name`). */
  readonly attachments = new Map<string, VolumeAttachmentInfo>();
  readonly volumeClaims = new Map<string, string>();

  /** VolumeAttachment reads fail with this while set (a 429, a 5xx); `reads` counts GETs by name. */
  attachmentFailure: Error | undefined;
  attachmentReads = 0;

  /**
   * As the attach/detach controller and a CSI driver leave it: a VolumeAttachment named as the
   * CSI attacher names it (volume handle = the PersistentVolume's name), and the volume in the
   * node's status.volumesAttached.
   */
  attach(persistentVolumeName: string, nodeName = 'node-a', attacher = 'ebs.csi.aws.com'): VolumeAttachmentInfo {
    const volume = csiVolumeName(attacher, persistentVolumeName);
    const a: VolumeAttachmentInfo = {
      name: attachmentNameOf(volume, nodeName)!,
      uid: newUid(),
      nodeName,
      attacher,
      persistentVolumeName,
    };
    this.attachments.set(a.name, a);
    const node = this.nodes.get(nodeName);
    if (node !== undefined) this.putNode({ ...node, attachedVolumes: [...(node.attachedVolumes ?? []), volume] });
    this.version++;
    return a;
  }

  /** The attacher detached it: the volume leaves the node's status first (as the controller does), then the object goes. */
  detach(persistentVolumeName: string): void {
    for (const [name, a] of this.attachments) {
      if (a.persistentVolumeName !== persistentVolumeName) continue;
      this.attachments.delete(name);
      const node = this.nodes.get(a.nodeName);
      const volume = csiVolumeName(a.attacher, persistentVolumeName);
      if (node !== undefined)
        this.putNode({ ...node, attachedVolumes: (node.attachedVolumes ?? []).filter((v) => v !== volume) });
    }
    this.version++;
  }

  /** Volumes attached to a node before the test added it. */
  private attachedBefore(nodeName: string): string[] {
    return [...this.attachments.values()]
      .filter((a) => a.nodeName === nodeName && a.persistentVolumeName !== undefined)
      .map((a) => csiVolumeName(a.attacher, a.persistentVolumeName!));
  }

  async watchVolumeAttachments(
    nodeName: string,
    o?: { readonly names?: readonly string[] },
  ): Promise<VolumeAttachmentWatch> {
    this.log(o?.names !== undefined ? 'get-attachments' : 'watch-attachments', nodeName);
    const watch = await this.watchPodsOnNode(nodeName);
    const read = () => {
      if (o?.names !== undefined) this.attachmentReads += o.names.length;
      if (this.attachmentFailure !== undefined) throw this.attachmentFailure;
      return [...this.attachments.values()].filter(
        (a) => a.nodeName === nodeName && (o?.names === undefined || o.names.includes(a.name)),
      );
    };
    let last = read();
    return {
      current: () => {
        try {
          last = read();
        } catch (error) {
          if (o?.names === undefined) throw error;
          // Named reads keep the last view on a failed read, as the adapter does.
        }
        return last;
      },
      changed: watch.changed,
      close: watch.close,
    };
  }

  // --- DrainabilityGateway
  /** What the drainability analysis finds (the analysis itself is tested on its own). */
  findings: Finding[] = [];

  async drainability(nodes: readonly string[]): Promise<readonly Finding[]> {
    this.log('list-pods-and-budgets', nodes.join(' '));
    return this.findings.filter((f) => nodes.includes(f.node));
  }

  // --- ChoiceGateway
  /** The candidates' pods as the termination policy reads them, per node. */
  choicePods = new Map<string, CostPod[]>();

  async podsForChoice(nodes: readonly string[]): Promise<ReadonlyMap<string, readonly CostPod[]>> {
    this.log('list-pods-for-choice', nodes.join(' '));
    return new Map(nodes.map((n) => [n, this.choicePods.get(n) ?? []]));
  }

  async markDeferred(node: NodeInfo, mark: DeferralMark, owner: string): Promise<PatchResult> {
    this.log('mark-deferred', node.name);
    const current = this.nodes.get(node.name);
    if (current === undefined) return 'node-gone';
    this.nodes.set(node.name, { ...current, deferral: mark, labels: { ...current.labels, [ownerLabel]: owner } });
    return 'patched';
  }

  async unmarkDeferred(node: NodeInfo): Promise<PatchResult> {
    this.log('unmark-deferred', node.name);
    const current = this.nodes.get(node.name);
    if (current === undefined) return 'node-gone';
    const { deferral: _gone, ...rest } = current;
    this.nodes.set(node.name, rest);
    return 'patched';
  }

  // --- OutOfServiceGateway
  async podsLeftOn(nodeName: string): Promise<readonly string[]> {
    return [...this.pods.values()]
      .filter((p) => p.nodeName === nodeName && p.phase !== 'Succeeded' && p.phase !== 'Failed')
      .map((p) => `${p.namespace}/${p.name}`);
  }

  async taintOutOfService(node: NodeInfo, instanceId: string, owner: string): Promise<PatchResult> {
    const current = this.nodes.get(node.name);
    if (current === undefined) return 'node-gone';
    const taints = [
      ...current.taints,
      { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' },
    ];
    this.nodes.set(node.name, {
      ...current,
      taints,
      outOfService: instanceId,
      labels: { ...current.labels, [ownerLabel]: owner },
    });
    return 'patched';
  }

  async untaintOutOfService(node: NodeInfo): Promise<PatchResult> {
    const current = this.nodes.get(node.name);
    if (current === undefined) return 'node-gone';
    const { outOfService: _gone, ...rest } = current;
    this.nodes.set(node.name, {
      ...rest,
      taints: current.taints.filter((t) => t.key !== 'node.kubernetes.io/out-of-service'),
    });
    return 'patched';
  }

  // --- LoadBalancerSources
  served: ServedLoadBalancers = { targetGroups: [], classicNames: [], networkNames: [] };

  async servedLoadBalancers(): Promise<ServedLoadBalancers> {
    this.log('list-served-load-balancers', '');
    return this.served;
  }

  async claimOfVolume(persistentVolumeName: string): Promise<{ namespace: string; name: string } | undefined> {
    this.log('get-volume', persistentVolumeName);
    const claim = this.volumeClaims.get(persistentVolumeName);
    if (claim === undefined) return undefined;
    const [namespace, name] = claim.split('/') as [string, string];
    return { namespace, name };
  }

  // --- EventRecorder
  async record(event: ClusterEvent): Promise<void> {
    this.events.push(event);
  }

  reasons(): string[] {
    return this.events.map((e) => `${e.regarding.kind}/${e.reason}`);
  }
}

export const pdbBlocks =
  (budgetName: string, matches: (p: FakePod) => boolean): EvictionRule =>
  (p) =>
    matches(p)
      ? {
          kind: 'blocked',
          reason: 'disruption-budget',
          message: `Cannot evict pod as it would violate the pod's disruption budget. The disruption budget ${budgetName} needs 2 healthy pods and has 2 currently`,
          retryAfterSeconds: undefined,
          budgetName,
        }
      : 'accept';

/**
 * A budget as the eviction API applies it: refuses (429, naming it) while cluster.budgets shows no disruption
 * allowed, and takes one when it lets a pod go, so a later look sees it (as the eviction lowers the status).
 */
export const budgetRefuses =
  (cluster: FakeCluster, budget: string, matches: (p: FakePod) => boolean): EvictionRule =>
  (p) => {
    if (!matches(p)) return 'accept';
    const view = cluster.budgets.get(`${p.namespace}/${budget}`);
    if (view !== undefined && view.processed && view.disruptionsAllowed > 0) {
      cluster.budgets.set(`${p.namespace}/${budget}`, { ...view, disruptionsAllowed: view.disruptionsAllowed - 1 });
      return 'accept';
    }
    return pdbBlocks(budget, () => true)(p);
  };

export class FakeLifecycleActions implements LifecycleActions {
  readonly completions: { action: LifecycleActionRef; result: LifecycleResult; atMs: number }[] = [];
  /** Tokens whose action is over (completed, timed out, or never existed: expire() them). */
  private readonly done = new Set<string>();
  /** Instances whose action is over, for calls that name the action by instance. */
  private readonly doneInstances = new Set<string>();
  failWith: Error | undefined;

  constructor(private readonly clock: Clock) {}

  readonly heartbeats: { action: LifecycleActionRef; atMs: number }[] = [];

  /** The action this token stands for is over (or Auto Scaling never had it). */
  expire(token: string): void {
    this.done.add(token);
  }

  private isOver(action: LifecycleActionRef): boolean {
    return action.lifecycleActionToken !== undefined
      ? this.done.has(action.lifecycleActionToken)
      : this.doneInstances.has(action.instanceId);
  }

  async heartbeat(action: LifecycleActionRef): Promise<'recorded' | 'no-active-action'> {
    if (this.failWith) throw this.failWith;
    if (this.isOver(action)) return 'no-active-action';
    this.heartbeats.push({ action, atMs: this.clock.now() });
    return 'recorded';
  }

  async complete(action: LifecycleActionRef, result: LifecycleResult): Promise<'completed' | 'already-completed'> {
    if (this.failWith) throw this.failWith;
    if (this.isOver(action)) return 'already-completed';
    if (action.lifecycleActionToken !== undefined) this.done.add(action.lifecycleActionToken);
    this.doneInstances.add(action.instanceId);
    this.completions.push({ action, result, atMs: this.clock.now() });
    return 'completed';
  }
}

/** EC2's view of instances, as a test sets it: every instance is On-Demand unless `spot` gives its Spot request's status. */
export class FakeEc2 implements InstanceDirectory {
  /** EC2's state and group tag per instance (DescribeInstances), where a test sets them. */
  readonly runStateOf = new Map<string, InstanceRunState>();
  async runStates(ids: readonly string[]): Promise<ReadonlyMap<string, InstanceRunState>> {
    this.calls.push('DescribeInstances');
    return new Map(ids.flatMap((id) => (this.runStateOf.has(id) ? [[id, this.runStateOf.get(id)!] as const] : [])));
  }
  readonly spot = new Map<string, string>();
  readonly names = new Map<string, string>();
  readonly calls: string[] = [];
  async privateDnsNames(ids: readonly string[]): Promise<ReadonlyMap<string, string>> {
    this.calls.push('DescribeInstances');
    return new Map(ids.flatMap((id) => (this.names.has(id) ? [[id, this.names.get(id)!] as const] : [])));
  }
  /** Set: every call fails with it (EC2 unreachable, or not allowed). */
  failure: Error | undefined;
  async purchase(id: string): Promise<Purchase> {
    this.calls.push('DescribeInstances');
    if (this.failure) throw this.failure;
    return this.spot.has(id)
      ? { lifecycle: 'spot', spotRequestId: `sir-${id}` }
      : { lifecycle: 'on-demand', spotRequestId: undefined };
  }
  async spotRequestStatus(requestId: string): Promise<string | undefined> {
    this.calls.push('DescribeSpotInstanceRequests');
    if (this.failure) throw this.failure;
    return this.spot.get(requestId.replace(/^sir-/, ''));
  }
}

/** Auto Scaling's view of instances, refreshes and groups, as a test sets it. */
export class FakeAutoScaling implements AutoScalingInstances, InstanceRepairs {
  /** Which group each instance is in, as DescribeAutoScalingInstances would say. */
  readonly groups = new Map<string, string>();
  /** Lifecycle states (default InService); `terminating` puts an instance in Terminating:Wait. */
  readonly states = new Map<string, string>();
  readonly terminating = new Set<string>();
  /** Instance refreshes in progress, as DescribeInstanceRefreshes and the group would describe them. */
  readonly refreshes = new Map<string, RefreshView>();
  /** Refresh statuses by id (default: InProgress while in `refreshes`, else absent). */
  readonly refreshStatus = new Map<string, string>();
  readonly tags = new Map<string, Map<string, string>>();
  readonly calls: string[] = [];

  stateOf(id: string): string {
    return this.terminating.has(id) ? 'Terminating:Wait' : (this.states.get(id) ?? 'InService');
  }

  async describe(ids: readonly string[]): Promise<ReadonlyMap<string, InstanceState>> {
    this.calls.push('DescribeAutoScalingInstances');
    const out = new Map<string, InstanceState>();
    for (const id of ids) {
      const group = this.groups.get(id);
      if (group !== undefined) {
        const healthStatus = (this.health.get(id) ?? 'Healthy').toUpperCase();
        out.set(id, { instanceId: id, group, lifecycleState: this.stateOf(id), healthStatus });
      }
    }
    return out;
  }
  async leavingGroup(group: string): Promise<readonly string[]> {
    this.calls.push('DescribeAutoScalingGroups');
    return [...this.groups]
      .filter(([id, g]) => g === group && /^(Terminating|Warmed:Pending)/.test(this.stateOf(id)))
      .map(([id]) => id);
  }
  async refreshStatuses(_group: string, ids: readonly string[]): Promise<ReadonlyMap<string, string>> {
    this.calls.push('DescribeInstanceRefreshes');
    const out = new Map<string, string>();
    for (const id of ids) {
      const status = this.refreshStatus.get(id) ?? (this.refreshes.has(id) ? 'InProgress' : undefined);
      if (status !== undefined) out.set(id, status);
    }
    return out;
  }
  async refresh(_group: string, id: string): Promise<RefreshView | undefined> {
    this.calls.push('DescribeInstanceRefreshes');
    const status = this.refreshStatus.get(id) ?? 'InProgress';
    return status === 'InProgress' || status === 'Pending' ? this.refreshes.get(id) : undefined;
  }
  async describeGroups(names: readonly string[]): Promise<readonly GroupView[]> {
    this.calls.push('DescribeAutoScalingGroups');
    return names.map((name) => ({ name, tags: Object.fromEntries(this.tags.get(name) ?? []) }));
  }
  async removeTag(group: string, key: string): Promise<void> {
    this.calls.push('DeleteTags');
    this.tags.get(group)?.delete(key);
  }
  /** Health statuses (default Healthy); SetInstanceHealth and reboots as asked, in order. */
  readonly health = new Map<string, string>();
  readonly unhealthy: string[] = [];
  readonly reboots: string[] = [];
  async members(names: readonly string[]): Promise<readonly GroupMember[]> {
    this.calls.push('DescribeAutoScalingGroups');
    return [...this.groups]
      .filter(([, g]) => names.includes(g))
      .map(([instanceId, group]) => ({
        instanceId,
        group,
        lifecycleState: this.stateOf(instanceId),
        healthStatus: this.health.get(instanceId) ?? 'Healthy',
        suspendedProcesses: this.suspended.get(group) ?? [],
      }));
  }
  /** Each group's suspended processes (SuspendProcesses), as DescribeAutoScalingGroups says them. */
  readonly suspended = new Map<string, string[]>();
  async setHealthy(instanceId: string): Promise<void> {
    this.calls.push('SetInstanceHealth');
    this.health.set(instanceId, 'Healthy');
  }
  async setUnhealthy(instanceId: string): Promise<void> {
    this.calls.push('SetInstanceHealth');
    this.unhealthy.push(instanceId);
    this.health.set(instanceId, 'Unhealthy');
  }
  async reboot(instanceId: string): Promise<void> {
    this.calls.push('RebootInstances');
    this.reboots.push(instanceId);
  }
}

/** Hand-off messages as they would be published to the topic. */
/**
 * The cluster's load balancers as ELB answers: which hold each instance, until when
 * (`releaseAtMs`); `failure` makes every reading fail (denied or unavailable).
 */
export class FakeLoadBalancers implements LoadBalancerTargets {
  readonly holds = new Map<string, (TargetHold & { releaseAtMs: number })[]>();
  failure: { denied: boolean } | undefined;
  readings = 0;

  constructor(private readonly clock: FakeClock) {}

  hold(instanceId: string, name: string, releaseAtMs: number, kind: TargetHold['kind'] = 'target-group'): void {
    const id =
      kind === 'target-group'
        ? `arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/${name}/0123456789abcdef`
        : name;
    this.holds.set(instanceId, [
      ...(this.holds.get(instanceId) ?? []),
      { kind, id, name, state: 'draining', releaseAtMs },
    ]);
  }

  /** What the cluster served at each first look. */
  readonly served: (ServedLoadBalancers | undefined)[] = [];
  /** Shared readings (shared-targets.ts): each group read once for every instance it holds. */
  candidates?: LoadBalancerRegistry['candidates'];
  registered?: LoadBalancerRegistry['registered'];
  /** registered() calls, by load balancer name. */
  readonly registeredCalls: string[] = [];

  /** Offers the registry, so terminations share their readings (off by default: each reads its own). */
  share(): this {
    this.candidates = async (served) => {
      this.served.push(served);
      const all = new Map<string, TargetHold>();
      for (const holds of this.holds.values())
        for (const h of holds) all.set(h.id, { kind: h.kind, id: h.id, name: h.name, state: 'unknown' });
      return [...all.values()];
    };
    this.registered = async (lb) => {
      this.registeredCalls.push(lb.name);
      if (this.failure)
        return {
          read: false,
          denied: this.failure.denied,
          throttled: false,
          error: new Error(this.failure.denied ? 'AccessDenied' : 'unavailable'),
          calls: 1,
        };
      const now = this.clock.now();
      const targets = new Map<string, string>();
      for (const [instanceId, holds] of this.holds)
        for (const h of holds) if (h.id === lb.id && now < h.releaseAtMs) targets.set(instanceId, h.state);
      return { read: true, targets, calls: 1 };
    };
    return this;
  }

  async holding(instanceId: string, scope: TargetScope = {}): Promise<TargetReading> {
    const among = scope.among;
    if (among === undefined) this.served.push(scope.served);
    this.readings++;
    if (this.failure)
      return {
        read: false,
        denied: this.failure.denied,
        error: new Error(this.failure.denied ? 'AccessDenied' : 'unavailable'),
        calls: 1,
      };
    const now = this.clock.now();
    const held = (this.holds.get(instanceId) ?? []).filter(
      (h) => now < h.releaseAtMs && (among === undefined || among.some((a) => a.id === h.id)),
    );
    return {
      read: true,
      holds: held.map((h) => ({ kind: h.kind, id: h.id, name: h.name, state: h.state })),
      unread: [],
      calls: among?.length ?? 2,
    };
  }
}

export class FakeHandOffs implements HandOffs {
  readonly sent: Record<string, unknown>[] = [];
  async send(message: Readonly<Record<string, unknown>>): Promise<void> {
    this.sent.push({ ...message });
  }
}

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown>;
}

export class MemoryLog implements RecordLogger {
  readonly lines: LogLine[] = [];
  private keys: Record<string, unknown> = {};

  private write(level: LogLine['level'], message: string, extra: LogExtra): void {
    const fields = (extra as unknown[]).map((e) =>
      e instanceof Error ? { error: e } : (e as Record<string, unknown>),
    );
    this.lines.push({ level, message, fields: Object.assign({}, this.keys, ...fields) });
  }
  debug(message: string, ...extra: LogExtra) {
    this.write('debug', message, extra);
  }
  info(message: string, ...extra: LogExtra) {
    this.write('info', message, extra);
  }
  warn(message: string, ...extra: LogExtra) {
    this.write('warn', message, extra);
  }
  error(message: string, ...extra: LogExtra) {
    this.write('error', message, extra);
  }
  appendKeys(keys: Record<string, unknown>) {
    this.keys = { ...this.keys, ...keys };
  }
  resetKeys() {
    this.keys = {};
  }
  messages(level?: LogLine['level']): string[] {
    return this.lines.filter((l) => !level || l.level === level).map((l) => l.message);
  }
}

/**
 * A fake world wired to the real handler as lambda/runtime.ts wires it (a hand-off topic only
 * when HAND_OFF_TOPIC_ARN is set), and a runner that delivers the notification and then every
 * hand-off it publishes, as SNS would, each in a fresh 15-minute invocation. `connect`
 * replaces the cluster connection (one that fails, one that counts).
 */
export function handlerWorld(env: Record<string, string>) {
  const clock = new FakeClock();
  const cluster = new FakeCluster(clock);
  const lifecycle = new FakeLifecycleActions(clock);
  const handOffs = new FakeHandOffs();
  const log = new MemoryLog();
  const metrics: { dimensions: Record<string, string>; values: Record<string, { unit: string; value: number }> }[] = [];
  const metricsSink: MetricsSink = {
    emit: (dimensions, values) => void metrics.push({ dimensions: { ...dimensions }, values: { ...values } }),
  };
  const autoScaling = new FakeAutoScaling();
  const ec2 = new FakeEc2();
  const loadBalancers = new FakeLoadBalancers(clock);
  const { groups, terminating, refreshes } = autoScaling;
  const handler = (
    extra: Record<string, string> = {},
    connect: () => Promise<ClusterGateway> = async () => cluster,
  ) => {
    const config = parseConfig({ ...env, ...extra });
    return createRouter({
      config,
      log,
      clock,
      lifecycle,
      instances: autoScaling,
      ec2,
      cluster: connect,
      handOffs: config.handOffTopicArn !== undefined ? handOffs : undefined,
      metrics: metricsSink,
      repairs: config.repair !== undefined ? autoScaling : undefined,
      // Read only where a test asks for it (WAIT_FOR_TARGETS=true); otherwise the fixed delay, as before.
      loadBalancers: { ...env, ...extra }['WAIT_FOR_TARGETS'] === 'true' ? loadBalancers : undefined,
    });
  };
  let invocations = 0;
  /** Any event, as Lambda invokes the function: a fresh request id unless given (a retry keeps it). */
  const invokeRaw = (
    handle: ReturnType<typeof handler>,
    event: unknown,
    invocationMs = 900_000,
    awsRequestId = `request-${++invocations}`,
  ) => {
    const end = clock.now() + invocationMs;
    return handle(event, { getRemainingTimeInMillis: () => end - clock.now(), awsRequestId }) as Promise<HandlerResult>;
  };
  /** Auto Scaling's call of a custom termination policy: the answer it reads. */
  const invokeChoice = async (handle: ReturnType<typeof handler>, payload: unknown) =>
    (await handle(payload, {
      getRemainingTimeInMillis: () => 900_000,
      awsRequestId: `request-${++invocations}`,
    })) as ChoiceAnswer;
  /** A lifecycle message delivered through SNS. */
  const invoke = (
    handle: ReturnType<typeof handler>,
    message: Record<string, unknown>,
    invocationMs?: number,
    awsRequestId?: string,
  ) => invokeRaw(handle, snsEvent(message), invocationMs, awsRequestId);
  async function runChain(
    extra: Record<string, string> = {},
    first: Record<string, unknown> = lifecycleMessage(),
  ): Promise<string[]> {
    const handle = handler(extra);
    const statuses: string[] = [];
    let message: Record<string, unknown> | undefined = first;
    while (message) {
      const before = handOffs.sent.length;
      const end = clock.now() + 900_000;
      statuses.push((await invoke(handle, message)).records[0]!.status);
      if (clock.now() > end) throw new Error('an invocation ran past its end');
      message = handOffs.sent.length > before ? handOffs.sent.at(-1) : undefined;
    }
    return statuses;
  }
  return {
    clock,
    cluster,
    lifecycle,
    autoScaling,
    ec2,
    loadBalancers,
    handOffs,
    log,
    metrics,
    groups,
    terminating,
    refreshes,
    handler,
    invoke,
    invokeRaw,
    invokeChoice,
    runChain,
  };
}
