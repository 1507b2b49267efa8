// Surge before evict (docs/surge.md): holds back the eviction of a Deployment's last Ready pod
// off the leaving nodes until the Deployment, restarted as `kubectl rollout restart` does, has a
// replacement Ready on a node that stays. The drain asks it each pass which pods to leave alone
// (drain-node.ts); everything it decides is in the drain record first, so a hand-off or the
// reconciler resumes the wait and never restarts a Deployment twice for one drain.
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { NodeGateway } from '../cluster/ports/node-gateway.js';
import type { DeploymentRef, NodeInfo, PatchResult, PodInfo, SurgeMark } from '../cluster/model.js';
import { deploymentKey } from '../cluster/marks/surge-marks.js';

import { isTerminating, podKey } from '../cluster/rules/pods.js';
import { surgeReady, surgeRefused, surgeStarted, surgeTimedOut } from '../cluster/events/surge-events.js';

import type { DeploymentInfo, ReplicaPod, SurgeGateway } from '../cluster/ports/surge-gateway.js';
import type { Clock } from '../shared/clock.js';
import { asError, type Log } from '../shared/log.js';
import type { SurgeSettings } from '../shared/surge-variables.js';
import { forceAtMs, type DrainMoment } from './rules.js';
import { readyElsewhere, refusalText, restartValue, type SurgeRefusal } from './surge-rules.js';
import { SurgeReadings } from './surge-readings.js';
import { SurgeTries } from './surge-tries.js';
import { SurgeBook } from './surge-book.js';
import { restartedSince, restartOnce } from './surge-restart.js';
import { deploymentsByReplicaSet, surgeVerdict, type SurgeReads } from './surge-verdict.js';

/** What the drain asks of the gate. */
export interface SurgeGate {
  /** The pods (uids) whose eviction waits this pass: their Deployment's replacement is not Ready elsewhere yet. */
  held(pods: readonly PodInfo[], m: DrainMoment): Promise<ReadonlySet<string>>;
  /** When to look again while pods are held (a replacement Ready on another node does not change this node's pods). */
  nextCheckMs(): number;
  /** The surges so far, for the drain record a hand-off writes. */
  marks(): readonly SurgeMark[];
}

export interface SurgeGateDeps {
  readonly api: SurgeGateway;
  readonly nodes: Pick<NodeGateway, 'drainMarkedNames'>;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly log: Log;
}

export interface SurgeGateOptions {
  readonly settings: SurgeSettings;
  readonly node: Pick<NodeInfo, 'name' | 'uid'>;
  /** The surges the drain record holds (resumed: a restart it names is never made twice). */
  readonly surges: readonly SurgeMark[];
  /** The drain phase's write of the record with these surges, before each restart and after each outcome. */
  readonly saveSurges: (surges: readonly SurgeMark[]) => Promise<PatchResult>;
  /** The deployment: the owner of the marks that say which nodes are leaving. */
  readonly owner: string;
  /** When the drain began (its record's startedAt): a restart written since is this drain's, joined. */
  readonly drainStartedAtMs: number;
}

/** Replacement readiness is polled this often while a pod is held. */
export const surgePollMs = 2_000;
/** A replacement still Unschedulable this long after the restart means no capacity. */
export const unschedulableAfterMs = 10_000;

export class DeploymentSurge implements SurgeGate {
  private readonly book: SurgeBook;
  private readonly reads: SurgeReads;
  /** Pods decided in this invocation that never take part (not asked, not needed, no Deployment). */
  private readonly passed = new Set<string>();
  private readonly tries = new SurgeTries();
  private readonly lastCheckMs = new Map<string, number>();
  private readonly readings: SurgeReadings;
  private holding = false;

  constructor(
    private readonly o: SurgeGateOptions,
    private readonly deps: SurgeGateDeps,
  ) {
    this.book = new SurgeBook(o.surges, o.saveSurges, deps.log);
    this.readings = new SurgeReadings(deps, {
      node: o.node.name,
      owner: o.owner,
      drainStartedAtMs: o.drainStartedAtMs,
    });
    this.reads = {
      deploymentOf: deploymentsByReplicaSet(deps.api),
      replicaPods: (d) => deps.api.replicaPods(d),
      leaving: () => this.readings.leaving(),
      schedulableNodes: (placement) => deps.api.schedulableNodes(placement),
      started: (d) => this.book.waitingOf(d) !== undefined || restartedSince(d, this.o.drainStartedAtMs) !== undefined,
    };
  }

  marks(): readonly SurgeMark[] {
    return this.book.all();
  }

  nextCheckMs(): number {
    if (!this.holding) return Number.POSITIVE_INFINITY;
    return Math.min(...[...this.lastCheckMs.values()].map((t) => t + surgePollMs), this.deps.clock.now() + surgePollMs);
  }

  async held(pods: readonly PodInfo[], m: DrainMoment): Promise<ReadonlySet<string>> {
    const out = new Set<string>();
    for (const pod of pods) {
      if (isTerminating(pod) || m.accepted.has(pod.uid)) {
        await this.leftByRollout(pod).catch((error: unknown) =>
          this.deps.log.warn('could not read the surge outcome', { pod: podKey(pod), error: asError(error) }),
        );
        continue;
      }
      if (this.passed.has(pod.uid)) continue;
      if (pod.controllerKind !== 'ReplicaSet' && pod.controllerKind !== 'StatefulSet') continue;
      try {
        const mark = this.book.of(pod.uid) ?? (await this.decide(pod));
        if (mark?.state === 'waiting' && (await this.stillWaiting(pod, mark, m))) out.add(pod.uid);
      } catch (error) {
        if (this.tries.again(pod, error, this.deps.log)) {
          out.add(pod.uid);
          continue;
        }
        // Our own failure never holds a pod for long: it is evicted as any other (its budget decides).
        this.deps.log.warn('surge before evict could not be decided; evicting as any other pod', {
          pod: podKey(pod),
          error: asError(error),
        });
        this.passed.add(pod.uid);
      }
    }
    this.holding = out.size > 0;
    return out;
  }

  /** The first look at a pod: a surge started (or joined), a refusal, or nothing. */
  private async decide(pod: PodInfo): Promise<SurgeMark | undefined> {
    const v = await surgeVerdict(pod, this.o.settings, this.reads);
    if (v.kind === 'pass') return this.pass(pod);
    if (v.kind === 'refuse') return this.refuse(pod, v.owner, v.reason, v.deployment);
    if (v.kind === 'start') return this.start(pod, v.d);
    // Joined, not cached: a surge resumed from the record may still owe its restart, which
    // deployment(mark) writes on its first read.
    const waiting = this.book.waitingOf(v.d);
    // A restart made since the drain began that this invocation's record does not name yet: a twin's, joined.
    if (waiting === undefined) return this.start(pod, v.d);
    return this.book.add({ ...waiting, pod: podKey(pod), uid: pod.uid });
  }

  /**
   * Recorded first, restarted after: a restart is never made that the record does not name. A restart written since
   * the drain began (a twin invocation's, after a duplicated delivery) is joined, never made again (surge-restart.ts).
   */
  private async start(pod: PodInfo, d: DeploymentInfo): Promise<SurgeMark | undefined> {
    const now = this.deps.clock.now();
    const made = restartedSince(d, this.o.drainStartedAtMs);
    const mark: SurgeMark = {
      pod: podKey(pod),
      uid: pod.uid,
      deployment: { namespace: d.namespace, name: d.name },
      restartedAt: made ?? restartValue(now),
      atMs: now,
      state: 'waiting',
    };
    if (!(await this.book.record(mark))) return this.refuse(pod, `Deployment ${deploymentKey(d)}`, 'not-recorded', d);
    if (made !== undefined) return this.joined(mark, d);
    const outcome = await restartOnce(this.deps.api, d, mark.restartedAt!).catch((error: unknown) => {
      // Asked again at the next pass: the Deployment read again, the restart written if missing.
      this.readings.forget(d);
      throw error;
    });
    if (outcome.kind === 'gone') {
      await this.book.settle(mark, 'refused', 'gone');
      return this.pass(pod);
    }
    if (outcome.kind === 'joined') {
      return this.joined(await this.book.change(mark, { ...mark, restartedAt: outcome.d.restartedAt }), outcome.d);
    }
    this.readings.remember(outcome.d);
    this.lastCheckMs.set(deploymentKey(d), now);
    this.deps.log.info('surge before evict: Deployment restarted', {
      pod: mark.pod,
      deployment: deploymentKey(d),
      restartedAt: mark.restartedAt,
    });
    await this.tell(surgeStarted(this.o.node, pod, deploymentKey(d), Math.round(this.o.settings.timeoutMs / 1000)));
    return mark;
  }

  /** Waits with a restart someone else wrote since the drain began: no second one, no second SurgeStarted. */
  private joined(mark: SurgeMark, d: DeploymentInfo): SurgeMark {
    this.readings.remember(d);
    this.lastCheckMs.set(deploymentKey(d), this.deps.clock.now());
    this.deps.log.info('surge before evict: the Deployment was restarted since the drain began; waiting with it', {
      pod: mark.pod,
      deployment: deploymentKey(d),
      restartedAt: mark.restartedAt,
    });
    return mark;
  }

  /** Still held: no replacement Ready elsewhere yet, the pod's surge time and force time not reached. */
  private async stillWaiting(pod: PodInfo, mark: SurgeMark, m: DrainMoment): Promise<boolean> {
    const now = this.deps.clock.now();
    const endMs = Math.min(mark.atMs + this.o.settings.timeoutMs, forceAtMs(pod, m), m.drainDeadlineMs);
    const d = await this.readings.deployment(mark);
    const name = mark.deployment && deploymentKey(mark.deployment);
    if (d === undefined || name === undefined) {
      await this.book.settle(mark, 'refused', 'gone');
      return false;
    }
    if (now < (this.lastCheckMs.get(name) ?? 0) + surgePollMs && now < endMs) return true;
    this.lastCheckMs.set(name, now);
    const replicas = await this.deps.api.replicaPods(d);
    const ready = readyElsewhere(replicas, pod.uid, await this.readings.leaving());
    const seconds = Math.round((now - mark.atMs) / 1000);
    if (ready !== undefined) {
      await this.readied(pod, mark, ready, 'surge before evict: replacement Ready on a node that stays; evicting');
      return false;
    }
    if (now >= endMs) {
      this.deps.log.warn('surge before evict timed out; evicting as any other pod', {
        pod: mark.pod,
        deployment: name,
        seconds,
      });
      await this.book.settle(mark, 'timed-out');
      const why =
        now >= mark.atMs + this.o.settings.timeoutMs ? 'SURGE_TIMEOUT_SECONDS' : 'the drain deadline comes first';
      await this.tell(surgeTimedOut(this.o.node, pod, { deployment: name, seconds, why }));
      return false;
    }
    if (now - mark.atMs >= unschedulableAfterMs && replicas.some((p: ReplicaPod) => p.unschedulable)) {
      await this.book.settle(mark, 'refused', 'no-capacity');
      await this.tell(
        surgeRefused(this.o.node, pod, {
          owner: `Deployment ${name}`,
          reason: 'no-capacity',
          why: refusalText['no-capacity'],
        }),
      );
      return false;
    }
    return true;
  }

  /** The rollout deleted the old pod itself (its replacement Ready, maxUnavailable 0): the surge did its work. */
  private async leftByRollout(pod: PodInfo): Promise<void> {
    const mark = this.book.of(pod.uid);
    if (mark?.state !== 'waiting') return;
    const d = mark && (await this.readings.deployment(mark));
    if (mark === undefined || d === undefined) return;
    const ready = readyElsewhere(await this.deps.api.replicaPods(d), pod.uid, await this.readings.leaving());
    if (ready === undefined) return;
    await this.readied(
      pod,
      mark,
      ready,
      'surge before evict: the rollout replaced the pod (replacement Ready on a node that stays)',
    );
  }

  /** A replacement is Ready on a node that stays: the surge's work is done, said once. */
  private async readied(pod: PodInfo, mark: SurgeMark, ready: ReplicaPod, message: string): Promise<void> {
    const seconds = Math.round((this.deps.clock.now() - mark.atMs) / 1000);
    this.deps.log.info(message, { pod: mark.pod, replacement: ready.name, on: ready.nodeName, seconds });
    await this.book.settle(mark, 'ready');
    const deployment = mark.deployment ? deploymentKey(mark.deployment) : '';
    await this.tell(
      surgeReady(this.o.node, pod, { deployment, replacement: ready.name, on: ready.nodeName!, seconds }),
    );
  }

  /** `owner` as the Event names it; `deployment` for the record (none for a StatefulSet's pod). */
  private async refuse(
    pod: PodInfo,
    owner: string,
    reason: SurgeRefusal,
    deployment: DeploymentRef | undefined,
  ): Promise<SurgeMark> {
    const mark: SurgeMark = {
      pod: podKey(pod),
      uid: pod.uid,
      deployment: deployment && { namespace: deployment.namespace, name: deployment.name },
      atMs: this.deps.clock.now(),
      state: 'refused',
      reason,
    };
    this.book.add(mark);
    this.deps.log.info('surge before evict refused', { pod: mark.pod, owner, reason });
    await this.tell(surgeRefused(this.o.node, pod, { owner, reason, why: refusalText[reason] }));
    return mark;
  }

  private pass(pod: PodInfo): undefined {
    this.passed.add(pod.uid);
    return undefined;
  }

  private async tell(events: readonly Parameters<EventRecorder['record']>[0][]): Promise<void> {
    for (const e of events) await this.deps.events.record(e);
  }
}
