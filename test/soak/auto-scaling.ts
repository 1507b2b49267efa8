// Auto Scaling and EC2 as the soak plays them, over the local endpoint (demo/local-aws.ts): a
// scale-in asks the termination policy (the function is the group's custom policy) or takes an
// instance itself, puts it in Terminating:Wait, opens the hook's action and sends the
// notification; a completion lets the instance go (EC2 terminates it, the node goes a few seconds
// later); a hook whose heartbeat timer runs out applies its DefaultResult; a scale-out launches an
// instance whose node joins, through the launch hook; a Spot warning comes two minutes before EC2
// reclaims the instance. Every lifecycle action, release, state and answer is recorded for the
// invariants, and at each accepted CONTINUE the cluster is read before Auto Scaling answers.
import { StorageV1Api } from '@kubernetes/client-node';
import type { Admin } from '../cluster/kube.js';
import { testAws } from '../cluster/plane/token-webhook.js';
import type { StubTargetGroup } from '../fakes/elb-stub.js';
import { groupArnOf } from '../fixtures/choice.js';
import {
  rebalanceRecommendation,
  refreshEvent,
  scheduledEvent,
  spotInterruptionWarning,
} from '../fixtures/deliveries.js';
import { lifecycleMessage, snsEvent } from '../fixtures/notifications.js';
import type { AwsCall, LocalAws } from '../../demo/local-aws.js';
import type { SoakClock } from './clock.js';
import type { LambdaModel } from './lambda.js';
import type {
  ActionRecord,
  InstanceState,
  LaunchAbandon,
  PolicyCall,
  RefreshRecord,
  ReleaseSnapshot,
  SpotRecord,
} from './observations.js';
import type { Random } from './random.js';
import { drawFate, type DeliveryFate, type NodeSpec, type SoakSettings } from './scenario.js';

export const terminateHook = 'soak-terminate';
/** What the launch hook waits to see gone (docs/how-it-works.md, Launches). */
const startupTaints = new Set([
  'node.kubernetes.io/not-ready',
  'node.kubernetes.io/unreachable',
  'node.kubernetes.io/network-unavailable',
  'node.cloudprovider.kubernetes.io/uninitialized',
]);
export const launchHook = 'soak-launch';

export interface AutoScalingDeps {
  readonly aws: LocalAws;
  readonly targetGroup: StubTargetGroup;
  readonly lambda: LambdaModel;
  readonly admin: Admin;
  readonly clock: SoakClock;
  readonly random: Random;
  readonly settings: SoakSettings;
  /** Persistent volume of each claim of the run. */
  readonly volumes: ReadonlyMap<string, string>;
  /** Creates the node of a new instance and waits until it is Ready. */
  readonly addNode: (spec: NodeSpec) => Promise<void>;
  readonly say: (line: string) => void;
  /** When the run's world was made (real time): older Events are an earlier run's. */
  readonly startedMs: number;
}

interface LiveAction extends ActionRecord {
  lastHeartbeatSoakMs: number;
  /** A scale-in into the warm pool (AutoScalingGroup -> WarmPool), or a launch out of it (the other way). */
  readonly warmPool?: 'into' | 'out-of';
}

export class AutoScaling {
  readonly actions: LiveAction[] = [];
  readonly releases: ReleaseSnapshot[] = [];
  readonly launchAbandons: LaunchAbandon[] = [];
  readonly instanceStates: InstanceState[] = [];
  readonly spots: SpotRecord[] = [];
  readonly refreshes: RefreshRecord[] = [];
  readonly policyCalls: PolicyCall[] = [];
  readonly specs = new Map<string, NodeSpec>();
  readonly forged: { what: string; instanceId: string; atMs: number }[] = [];
  private readonly timers: { dueSoakMs: number; run: () => void }[] = [];
  private handOffs = 0;
  private ticker: NodeJS.Timeout | undefined;

  constructor(private readonly d: AutoScalingDeps) {}

  start(): void {
    this.d.aws.onCall((call) => this.observe(call));
    this.ticker = setInterval(() => this.tick(), 250);
  }

  stop(): void {
    clearInterval(this.ticker);
  }

  /** An instance EC2 runs and the group knows, in this lifecycle state. */
  register(spec: NodeSpec, state: string): void {
    this.specs.set(spec.instanceId, spec);
    this.d.aws.instances.set(spec.instanceId, {
      privateDnsName: spec.privateDnsName,
      group: spec.group,
      lifecycleState: state,
      // Launched from the group's launch template version of the moment (an instance refresh raises it).
      version: this.d.aws.groups.get(spec.group)?.version ?? '1',
      ...(spec.spot ? { spot: { requestId: `sir-${spec.instanceId.slice(2, 10)}`, status: 'fulfilled' } } : {}),
    });
    this.instanceStates.push({ instanceId: spec.instanceId, state, atMs: this.d.clock.realNow() });
  }

  stateOf(instanceId: string): string | undefined {
    const i = this.d.aws.instances.get(instanceId);
    return i === undefined || i.ec2State === 'terminated' ? undefined : i.lifecycleState;
  }

  private setState(instanceId: string, state: string): void {
    const i = this.d.aws.instances.get(instanceId);
    if (i === undefined) return;
    i.lifecycleState = state;
    this.instanceStates.push({ instanceId, state, atMs: this.d.clock.realNow() });
  }

  /** The group's instances in service, by node name (a scale-in's pick is a fraction of this list). */
  inService(group?: string): NodeSpec[] {
    return [...this.specs.values()]
      .filter((s) => (group === undefined || s.group === group) && this.stateOf(s.instanceId) === 'InService')
      .sort((x, y) => x.name.localeCompare(y.name));
  }

  /** Runs a function at a moment of soak time (Spot's two minutes, a hook's timeout). */
  at(dueSoakMs: number, run: () => void): void {
    this.timers.push({ dueSoakMs, run });
  }

  /** Hook timeouts and soak-time timers; called every 250 ms and right after a clock skip. */
  tick(): void {
    const now = this.d.clock.now();
    for (const t of this.timers.filter((t) => t.dueSoakMs <= now)) {
      this.timers.splice(this.timers.indexOf(t), 1);
      t.run();
    }
    for (const a of this.actions) {
      if (a.expiredMs !== undefined || a.completions.some((c) => c.accepted)) continue;
      if (now < a.lastHeartbeatSoakMs + this.d.settings.heartbeatTimeoutSeconds * 1000) continue;
      if (!this.d.aws.closeAction(a.token)) continue;
      a.expiredMs = this.d.clock.realNow();
      this.d.say(`hook timeout: the ${a.transition} action of ${a.instanceId} ended by its DefaultResult`);
      // The terminate hook's DefaultResult CONTINUE, the launch hook's ABANDON: either way the instance goes.
      this.letGo(a.instanceId);
    }
  }

  /** The soonest a hook's heartbeat timer runs out, in soak time (a clock skip stops short of it). */
  soonestTimeoutSoakMs(): number {
    const open = this.actions.filter((a) => a.expiredMs === undefined && !a.completions.some((c) => c.accepted));
    return Math.min(...open.map((a) => a.lastHeartbeatSoakMs + this.d.settings.heartbeatTimeoutSeconds * 1000));
  }

  /** A Spot reclaim or another soak-time timer still to come. */
  timersPending(): boolean {
    return this.timers.length > 0;
  }

  openActions(): number {
    return this.actions.filter((a) => a.expiredMs === undefined && !a.completions.some((c) => c.accepted)).length;
  }

  private open(
    spec: NodeSpec,
    transition: 'terminate' | 'launch',
    lateSeconds: number,
    warmPool?: LiveAction['warmPool'],
  ): LiveAction {
    const token = this.d.random.uuid();
    this.d.aws.openAction(token, spec.instanceId);
    const nowReal = this.d.clock.realNow();
    const action: LiveAction = {
      token,
      instanceId: spec.instanceId,
      group: spec.group,
      transition,
      openedMs: nowReal,
      notifiedMs: nowReal - lateSeconds * 1000,
      notifiedSoakMs: this.d.clock.now() - lateSeconds * 1000,
      heartbeatsMs: [],
      completions: [],
      lastHeartbeatSoakMs: this.d.clock.now(),
      ...(warmPool ? { warmPool } : {}),
    };
    this.actions.push(action);
    return action;
  }

  private notification(spec: NodeSpec, action: LiveAction): unknown {
    return snsEvent(
      lifecycleMessage({
        AccountId: testAws.accountId,
        EC2InstanceId: spec.instanceId,
        LifecycleActionToken: action.token,
        AutoScalingGroupName: spec.group,
        LifecycleHookName: action.transition === 'launch' ? launchHook : terminateHook,
        LifecycleTransition: `autoscaling:EC2_INSTANCE_${action.transition === 'launch' ? 'LAUNCHING' : 'TERMINATING'}`,
        ...(action.transition === 'launch'
          ? { Origin: action.warmPool === 'out-of' ? 'WarmPool' : 'EC2', Destination: 'AutoScalingGroup' }
          : { Origin: 'AutoScalingGroup', Destination: action.warmPool === 'into' ? 'WarmPool' : 'EC2' }),
        Time: new Date(action.notifiedSoakMs).toISOString(),
        NotificationMetadata: JSON.stringify({ clusterName: testAws.clusterName }),
      }),
    );
  }

  /** A scale-in took this instance: Terminating:Wait, the hook's action, the notification. */
  terminate(spec: NodeSpec, o: { lateSeconds: number; fate: DeliveryFate }): void {
    this.setState(spec.instanceId, 'Terminating:Wait');
    const action = this.open(spec, 'terminate', o.lateSeconds);
    this.d.lambda.deliver(this.notification(spec, action), o.fate, `terminate:${action.token}`);
  }

  /** A scale-out: the instance launches, its node joins, the launch hook asks the function. */
  async launch(spec: NodeSpec, fate: DeliveryFate): Promise<void> {
    this.register(spec, 'Pending:Wait');
    await this.d.addNode(spec);
    const action = this.open(spec, 'launch', 0);
    this.d.lambda.deliver(this.notification(spec, action), fate, `launch:${action.token}`);
  }

  /**
   * A scale-in that keeps the instance in the warm pool: drained through the terminate hook
   * (AutoScalingGroup -> WarmPool), stopped there with its node (kwok keeps it Ready: nothing
   * runs on it, it stays cordoned), and back after a while through the launch hook
   * (WarmPool -> AutoScalingGroup), where our marks must be taken back.
   */
  toWarmPool(spec: NodeSpec, o: { backAfterMs: number; fate: DeliveryFate }): void {
    this.setState(spec.instanceId, 'Warmed:Pending:Wait');
    const action = this.open(spec, 'terminate', 0, 'into');
    this.d.lambda.deliver(this.notification(spec, action), o.fate, `terminate:${action.token}`);
    this.backAfter.set(spec.instanceId, { afterMs: o.backAfterMs, fate: o.fate });
  }

  private backAfter = new Map<string, { afterMs: number; fate: DeliveryFate }>();

  private outOfWarmPool(spec: NodeSpec, fate: DeliveryFate): void {
    this.setState(spec.instanceId, 'Pending:Wait');
    const action = this.open(spec, 'launch', 0, 'out-of');
    this.d.lambda.deliver(this.notification(spec, action), fate, `launch:${action.token}`);
  }

  /**
   * An instance refresh of the group: the launch template's next version, the Started event, then
   * one outdated instance at a time replaced (a new one launched, the old one terminated through the
   * hook), until none is left (Succeeded) or `cancelAfter` were replaced (Cancelled).
   */
  async refresh(
    group: string,
    o: { strategy: 'default' | 'minimal'; cancelAfter: number | undefined; everyMs: number; fate: DeliveryFate },
    launchNew: (group: string) => NodeSpec,
  ): Promise<string> {
    const id = this.d.random.uuid();
    const desired = String(Number(this.d.aws.groups.get(group)?.version ?? '1') + 1);
    this.d.aws.groups.set(group, { ...this.d.aws.groups.get(group), version: desired });
    if (o.strategy === 'minimal')
      this.d.aws.tags.set(group, new Map([['graceful-node-termination/refresh-strategy', `minimal:${id}`]]));
    const outdated = () =>
      this.inService(group).filter((s) => (this.d.aws.instances.get(s.instanceId)?.version ?? '1') !== desired);
    const refresh = {
      id,
      group,
      status: 'InProgress',
      percentageComplete: 0,
      instancesToUpdate: outdated().length,
      desiredVersion: desired,
      minHealthyPercentage: 90,
      maxHealthyPercentage: 110,
      alarms: [],
    };
    this.d.aws.refreshes.set(id, refresh);
    const record: RefreshRecord = { id, group, startedMs: this.d.clock.realNow() };
    this.refreshes.push(record);
    this.refreshEvent('Started', group, id, o.fate);
    let replaced = 0;
    while (outdated().length > 0 && (o.cancelAfter === undefined || replaced < o.cancelAfter)) {
      await new Promise((resolve) => setTimeout(resolve, o.everyMs));
      const old = outdated()[0];
      if (old === undefined) break;
      await this.launch(launchNew(group), o.fate);
      this.terminate(old, { lateSeconds: 0, fate: o.fate });
      refresh.percentageComplete = Math.round((++replaced / refresh.instancesToUpdate) * 100);
    }
    const ended = outdated().length === 0 ? 'Successful' : 'Cancelled';
    refresh.status = ended;
    record.endedMs = this.d.clock.realNow();
    this.refreshEvent(ended === 'Successful' ? 'Succeeded' : 'Cancelled', group, id, o.fate);
    return `${ended}: ${replaced} of ${refresh.instancesToUpdate} replaced`;
  }

  private refreshEvent(what: string, group: string, id: string, fate: DeliveryFate): void {
    const event = { ...refreshEvent(what, group, id), time: new Date(this.d.clock.now()).toISOString() };
    this.deliverEvent(event, fate, `refresh-${what.toLowerCase()}:${group}`);
  }

  /** EC2's two-minute warning; the instance goes when they are up. */
  spotWarning(spec: NodeSpec, fate: DeliveryFate): void {
    const spot = this.d.aws.instances.get(spec.instanceId)?.spot;
    if (spot === undefined) return;
    spot.status = 'marked-for-termination';
    const warnedMs = this.d.clock.realNow();
    this.spots.push({ instanceId: spec.instanceId, warnedMs, reclaimMs: warnedMs + 120_000, confirmed: true });
    this.deliverEvent(
      spotInterruptionWarning(spec.instanceId, new Date(this.d.clock.now()).toISOString()),
      fate,
      `spot:${spec.instanceId}`,
    );
    this.at(this.d.clock.now() + 120_000, () => this.letGo(spec.instanceId));
  }

  /** Somebody who may invoke the function sends what AWS never did. */
  forge(spec: NodeSpec, what: 'terminate' | 'spot-warning'): void {
    this.forged.push({ what, instanceId: spec.instanceId, atMs: this.d.clock.realNow() });
    const once: DeliveryFate = { delayMs: 0, duplicateDelaysMs: [], killAfterMs: [], lost: false };
    if (what === 'spot-warning') {
      this.deliverEvent(
        spotInterruptionWarning(spec.instanceId, new Date(this.d.clock.now()).toISOString()),
        once,
        `forged-spot:${spec.instanceId}`,
      );
      return;
    }
    const made = this.open(spec, 'terminate', 0);
    // Not an action Auto Scaling has: taken back at once, and not one the invariants expect completed.
    this.d.aws.closeAction(made.token);
    this.actions.splice(this.actions.indexOf(made), 1);
    this.d.lambda.deliver(this.notification(spec, made), once, `forged-terminate:${spec.instanceId}`);
  }

  rebalance(spec: NodeSpec): void {
    const once: DeliveryFate = { delayMs: 0, duplicateDelaysMs: [], killAfterMs: [], lost: false };
    this.deliverEvent(
      rebalanceRecommendation(spec.instanceId, new Date(this.d.clock.now()).toISOString()),
      once,
      `rebalance:${spec.instanceId}`,
    );
  }

  /** The reconciler's schedule (EventBridge's scheduled event). */
  reconcile(fate: DeliveryFate): void {
    const time = new Date(this.d.clock.now()).toISOString();
    this.deliverEvent(
      scheduledEvent(time, { account: testAws.accountId, region: testAws.region, id: this.d.random.uuid() }),
      fate,
      'reconcile',
    );
  }

  private deliverEvent(event: Record<string, unknown>, fate: DeliveryFate, label: string): void {
    this.d.lambda.deliver({ ...event, account: testAws.accountId, region: testAws.region }, fate, label);
  }

  /** A hand-off the function published to the hooks' topic, delivered as SNS would, with a fate of its own. */
  handOff(message: string): void {
    const fate = drawFate(this.d.random.fork(`hand-off/${++this.handOffs}`), { mayBeLost: true });
    const parsed = JSON.parse(message) as Record<string, unknown>;
    this.d.lambda.deliver(snsEvent(parsed), fate, `hand-off:${String(parsed['EC2InstanceId'])}`);
  }

  /**
   * The termination policy's say (a synchronous invocation, asked again after a failure); the
   * instances it answered within the suggestion, at most `count`. Empty: it deferred the scale-in.
   */
  async choose(group: string, pick: number, count: number, fate: DeliveryFate): Promise<NodeSpec[]> {
    const candidates = this.inService(group);
    const first = candidates[Math.floor(pick * candidates.length)]!;
    const market = (s: NodeSpec) => (s.spot ? 'spot' : 'on-demand');
    // Auto Scaling suggests the instances of the zone and market it must take capacity from, in its own order.
    const suggested = candidates.filter((s) => s.zone === first.zone && market(s) === market(first));
    const ordered = [...suggested.slice(suggested.indexOf(first)), ...suggested.slice(0, suggested.indexOf(first))];
    const capacity = [{ zone: first.zone, market: market(first), capacity: Math.min(count, ordered.length) }];
    const payload = {
      AutoScalingGroupARN: groupArnOf(group).replace(
        'eu-west-1:123456789012',
        `${testAws.region}:${testAws.accountId}`,
      ),
      AutoScalingGroupName: group,
      CapacityToTerminate: capacity.map((c) => ({
        AvailabilityZone: c.zone,
        Capacity: c.capacity,
        InstanceMarketOption: c.market,
      })),
      Instances: ordered.map((s) => ({
        AvailabilityZone: s.zone,
        InstanceId: s.instanceId,
        InstanceType: 'm7g.large',
        InstanceMarketOption: market(s),
      })),
      Cause: 'SCALE_IN',
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      const record = await this.d.lambda.invoke(payload, {
        label: `policy:${group}`,
        killAfterMs: fate.killAfterMs[attempt],
        remainingMs: 30_000,
      });
      const answer =
        record.outcome === 'ok' ? ((record.result as { InstanceIDs?: string[] }).InstanceIDs ?? []) : undefined;
      this.policyCalls.push({
        atMs: record.startedMs,
        group,
        capacity,
        suggested: ordered.map((s) => ({ instanceId: s.instanceId, zone: s.zone, market: market(s) })),
        answer,
      });
      if (answer !== undefined) return ordered.filter((s) => answer.includes(s.instanceId)).slice(0, count);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
    return [];
  }

  /** The instance goes: EC2 terminates it, the group forgets it, its node is deleted a few seconds later. */
  private letGo(instanceId: string): void {
    const instance = this.d.aws.instances.get(instanceId);
    if (instance === undefined || instance.ec2State === 'terminated') return;
    instance.ec2State = 'shutting-down';
    const node = this.specs.get(instanceId)?.name;
    setTimeout(
      () => {
        instance.ec2State = 'terminated';
        this.instanceStates.push({ instanceId, state: 'Terminated', atMs: this.d.clock.realNow() });
        setTimeout(
          () => void this.d.admin.core.deleteNode({ name: node! }).catch(() => undefined),
          this.d.random.int(2_000, 8_000),
        );
      },
      this.d.random.int(1_000, 3_000),
    );
  }

  /** The stand-in's calls: heartbeats restart a hook's timer; refused completions are recorded. */
  private observe(call: AwsCall): void {
    const token = call.params['ResolvedToken'] || call.params['LifecycleActionToken'];
    const action =
      this.actions.find((a) => a.token === token) ??
      this.actions.findLast((a) => a.instanceId === call.params['InstanceId']);
    if (action === undefined) return;
    if (call.action === 'RecordLifecycleActionHeartbeat' && call.outcome === 'ok') {
      action.lastHeartbeatSoakMs = this.d.clock.now();
      action.heartbeatsMs.push(this.d.clock.realNow());
    }
    if (call.action === 'CompleteLifecycleAction' && call.outcome === 'no-active-action')
      action.completions.push({
        atMs: this.d.clock.realNow(),
        result: call.params['LifecycleActionResult'] ?? '',
        accepted: false,
      });
  }

  /** Auto Scaling accepted a completion: the cluster as it is now, then the instance moves on. */
  beforeAnswer = async (call: AwsCall): Promise<void> => {
    const action = this.actions.find((a) => a.token === call.params['ResolvedToken']);
    if (action === undefined) return;
    const result = call.params['LifecycleActionResult'] ?? '';
    const atMs = this.d.clock.realNow();
    action.completions.push({ atMs, result, accepted: true });
    if (action.transition === 'launch') {
      if (result === 'CONTINUE') return this.setState(action.instanceId, 'InService');
      await this.readAbandoned(action.instanceId, atMs);
      return this.letGo(action.instanceId);
    }
    this.setState(action.instanceId, action.warmPool === 'into' ? 'Warmed:Pending:Proceed' : 'Terminating:Proceed');
    const snapshot = await this.snapshot(action, result, atMs).catch((error: unknown) => {
      this.d.say(`could not read the cluster at the release of ${action.instanceId}: ${String(error)}`);
      return undefined;
    });
    if (snapshot) this.releases.push(snapshot);
    const back = action.warmPool === 'into' ? this.backAfter.get(action.instanceId) : undefined;
    if (back === undefined) return this.letGo(action.instanceId);
    const spec = this.specs.get(action.instanceId)!;
    setTimeout(() => this.setState(spec.instanceId, 'Warmed:Stopped'), 1_000);
    this.at(this.d.clock.now() + back.afterMs, () => this.outOfWarmPool(spec, back.fate));
  };

  /** The node of a launch being abandoned, as it is now. */
  private async readAbandoned(instanceId: string, atMs: number): Promise<void> {
    const name = this.specs.get(instanceId)?.name;
    const node = name === undefined ? undefined : await this.d.admin.core.readNode({ name }).catch(() => undefined);
    const ready = node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    const starting = (node?.spec?.taints ?? []).some((t) => startupTaints.has(t.key));
    this.launchAbandons.push({ instanceId, node: name, atMs, nodeHealthy: ready && !starting });
  }

  private async snapshot(action: ActionRecord, result: string, atMs: number): Promise<ReleaseSnapshot> {
    const node = this.specs.get(action.instanceId)?.name;
    const a = this.d.admin;
    const [pods, attachments, events] = await Promise.all([
      a.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` }),
      a.kc.makeApiClient(StorageV1Api).listVolumeAttachment(),
      a.core.listNamespacedEvent({
        namespace: 'default',
        fieldSelector: `involvedObject.kind=Node,involvedObject.name=${node}`,
      }),
    ]);
    return {
      token: action.token,
      instanceId: action.instanceId,
      node,
      atMs,
      result,
      pods: pods.items.map((p) => ({
        uid: p.metadata?.uid ?? '',
        namespace: p.metadata?.namespace ?? '',
        name: p.metadata?.name ?? '',
        phase: p.status?.phase ?? '',
        terminating: p.metadata?.deletionTimestamp !== undefined,
        volumes: (p.spec?.volumes ?? []).flatMap((v) => {
          const pv = v.persistentVolumeClaim ? this.d.volumes.get(v.persistentVolumeClaim.claimName) : undefined;
          return pv === undefined ? [] : [pv];
        }),
      })),
      volumeAttachments: attachments.items
        .filter((v) => v.spec.nodeName === node)
        .map((v) => ({ name: v.metadata?.name ?? '', persistentVolume: v.spec.source.persistentVolumeName ?? '' })),
      targets: [
        { targetGroup: this.d.targetGroup.name, state: this.d.targetGroup.targets.get(action.instanceId) ?? 'unused' },
      ],
      events: events.items
        // Only this run's: an earlier run's node of the same name may have left Events.
        .filter((e) => (e.metadata?.creationTimestamp?.getTime() ?? 0) >= this.d.startedMs - 1_000)
        .filter((e) => e.source?.component === 'graceful-node-termination')
        .map((e) => ({ reason: e.reason ?? '', message: e.message ?? '' })),
    };
  }
}
