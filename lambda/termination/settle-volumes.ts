// The volume half of the settle phase: the instance is released only once the volumes of the
// pods that left it are detached (their VolumeAttachments gone), so a replacement attaches
// them elsewhere at once instead of after EC2's forced detach (minutes; six for a volume the
// kubelet never unmounted). Attachments still used by a pod on the node (a DaemonSet's, a pod
// we left) cannot detach before the instance goes and hold nothing. Everything is re-derived
// from the cluster, so a hand-off in the middle resumes the wait. Karpenter's termination
// waits the same way: https://github.com/aws/karpenter-provider-aws/blob/main/designs/statefulset-disruption.md
import type { PodInfo, VolumeAttachmentInfo } from '../cluster/model.js';
import type { VolumeAttachmentWatch } from '../cluster/ports/volume-gateway.js';
import {
  volumesDetached,
  volumesNotDetached,
  waitingForVolumeDetach,
  type VolumeRef,
} from '../cluster/events/settle-events.js';
import { attachmentsToWaitFor } from '../cluster/rules/volume-names.js';
import { AccessDeniedError } from '../shared/errors.js';
import { asError } from '../shared/log.js';
import type { Drained, Run } from './state.js';

/** A PersistentVolume we could not read: not asked again in this wait. */
const unreadable = '\u0000unreadable';

const refOf = (a: VolumeAttachmentInfo): VolumeRef => ({
  persistentVolume: a.persistentVolumeName ?? a.name,
  attacher: a.attacher,
});

export class VolumeWait {
  /** What held at the last look, by UID. */
  private readonly holding = new Map<string, VolumeAttachmentInfo>();
  private readonly claims = new Map<string, string | undefined>();
  private readonly detached: (VolumeRef & { seconds: number })[] = [];
  private told = 0;
  private watch: VolumeAttachmentWatch | undefined;
  /** Why the attachments could not be read yet (transient: asked again at each look). */
  private unread: Error | undefined;
  private nextOpenMs = 0;
  private opens = 0;

  private constructor(
    private readonly run: Run,
    private readonly d: Drained,
    /** The attachments by name (volume-names.ts); undefined: the cluster-wide list (a volume that is not CSI). */
    private readonly names: readonly string[] | undefined,
    /** Volumes are waited for until then (the drain deadline, batch-extended), the load-balancer wait permitting. */
    readonly untilMs: number,
  ) {}

  /**
   * The wait for the volumes the node had attached during the drain (our record and the Node's
   * status): undefined when it is off, nothing was attached, or RBAC forbids reading them (said
   * once). Past untilMs it still looks once, so what is left is named (VolumesNotDetached).
   */
  static async open(run: Run, d: Drained, untilMs: number): Promise<VolumeWait | undefined> {
    if (!run.request.settings.waitForVolumeDetach) return undefined;
    const attached = [...new Set([...(d.record.volumes ?? []), ...(d.node.attachedVolumes ?? [])])];
    const named = attachmentsToWaitFor(attached, d.node.name);
    if (named !== undefined && named.byName.length === 0) return undefined;
    if (named === undefined)
      run.deps.log.info('a volume on the node is not CSI: reading the cluster’s VolumeAttachments to find its', {
        volumes: attached,
      });
    const wait = new VolumeWait(run, d, named?.byName, untilMs);
    return (await wait.connect()) ? wait : undefined;
  }

  /** Opens the view; false only when RBAC forbids it. A transient failure is tried again at the next look. */
  private async connect(): Promise<boolean> {
    const { volumes, log, clock } = this.run.deps;
    try {
      this.watch = await volumes.watchVolumeAttachments(
        this.d.node.name,
        this.names !== undefined ? { names: this.names } : undefined,
      );
      this.unread = undefined;
      return true;
    } catch (error) {
      if (error instanceof AccessDeniedError) {
        this.deny(error);
        return false;
      }
      if (this.unread === undefined)
        log.warn(
          'could not read the VolumeAttachments; they hold the release until they can be read or the drain ' +
            'deadline passes',
          asError(error),
        );
      this.unread = asError(error);
      this.nextOpenMs = clock.now() + Math.min(10_000, 1_000 * 2 ** this.opens++);
      return true;
    }
  }

  /** Re-reads which attachments hold the release, given the pods now on the node. */
  async refresh(podsOnNode: readonly PodInfo[]): Promise<void> {
    if (this.watch === undefined) {
      if (this.run.deps.clock.now() < this.nextOpenMs || !(await this.connect()) || this.watch === undefined) return;
    }
    let attachments: readonly VolumeAttachmentInfo[];
    try {
      attachments = this.watch.current();
    } catch (error) {
      if (error instanceof AccessDeniedError) return this.deny(error);
      if (this.holding.size === 0 && this.detached.length === 0) this.unread = asError(error);
      return; // resuming the watch (or a failed read): the last view stands
    }
    this.unread = undefined;
    // A finished pod (a Job's) no longer holds its volume, nor does one we drained that is still
    // terminating (stuck on a finalizer, say): the volume detaches once it is gone and must be
    // waited for. With the kubelet gone nothing unmounts: a terminating pod keeps its volume.
    const kubeletGone = !this.d.node.ready;
    const running = podsOnNode.filter(
      (p) => p.phase !== 'Succeeded' && p.phase !== 'Failed' && (p.deletionTimestamp === undefined || kubeletGone),
    );
    const inUse = new Set(running.flatMap((p) => (p.claims ?? []).map((c) => `${p.namespace}/${c}`)));
    const held: VolumeAttachmentInfo[] = [];
    for (const a of attachments) if (await this.holds(a, inUse)) held.push(a);
    const now = this.run.deps.clock.now();
    // What held and holds no more has detached: told once, with how long after the drain.
    for (const [uid, a] of this.holding) {
      if (held.some((h) => h.uid === uid)) continue;
      this.holding.delete(uid);
      this.detached.push({ ...refOf(a), seconds: Math.max(0, Math.round((now - this.d.drainedAtMs) / 100) / 10) });
    }
    for (const a of held) this.holding.set(a.uid, a);
  }

  /** An attachment holds unless a pod still on the node uses its volume (or it is inline: whose, we cannot tell). */
  private async holds(a: VolumeAttachmentInfo, inUse: ReadonlySet<string>): Promise<boolean> {
    const pv = a.persistentVolumeName;
    if (pv === undefined) return false;
    if (inUse.size === 0) return true;
    if (!this.claims.has(pv)) {
      try {
        const claim = await this.run.deps.volumes.claimOfVolume(pv);
        this.claims.set(pv, claim && `${claim.namespace}/${claim.name}`);
      } catch (error) {
        // Unknown whose it is: it holds, as far as the deadline; asked and told once.
        this.run.deps.log.warn(
          'could not read a PersistentVolume (RBAC: get persistentvolumes); its attachment holds the release ' +
            'until the drain deadline',
          {
            persistentVolume: pv,
            error: asError(error),
          },
        );
        this.claims.set(pv, unreadable);
        return true;
      }
    }
    const claim = this.claims.get(pv);
    return claim === undefined || !inUse.has(claim);
  }

  /** The attachments that hold the release now. */
  private get held(): VolumeAttachmentInfo[] {
    return [...this.holding.values()];
  }

  /** RBAC forbids reading them: no volume wait, said once. */
  private deny(error: AccessDeniedError): void {
    this.run.deps.log.warn(
      'could not read the VolumeAttachments: access denied (RBAC: get, list and watch volumeattachments); ' +
        'releasing without waiting for volumes to detach',
      error,
    );
    this.unread = undefined;
    this.holding.clear();
    this.watch?.close();
    this.watch = undefined;
    this.nextOpenMs = Number.POSITIVE_INFINITY;
  }

  /** Something holds the release: an attachment, or attachments not read yet. */
  get pending(): boolean {
    return this.held.length > 0 || this.unread !== undefined;
  }

  /** Over: nothing holds, or the deadline passed. */
  done(now: number): boolean {
    return !this.pending || now >= this.untilMs;
  }

  changed(timeoutMs: number): Promise<void> {
    if (this.watch === undefined)
      return this.run.deps.clock.sleep(Math.max(0, Math.min(timeoutMs, this.nextOpenMs - this.run.deps.clock.now())));
    return this.watch.changed(timeoutMs);
  }

  /** The attachments still held, by name: kept in the record across a hand-off. */
  get stillAttached(): readonly string[] {
    return this.held.map((a) => a.name);
  }

  /** Said when this invocation begins waiting (the first after the drain). */
  async announce(): Promise<void> {
    if (this.held.length === 0) return;
    this.run.deps.log.info('waiting for volumes to detach', {
      volumes: this.held.map(refOf),
      secondsLeft: Math.max(0, Math.round((this.untilMs - this.run.deps.clock.now()) / 1000)),
    });
    await this.run.deps.events.record(waitingForVolumeDetach(this.d.node, this.held.map(refOf)));
  }

  /** Tells what detached and how long it took (once each), and at the end what was left. */
  async report(o: { readonly final: boolean }): Promise<{ readonly seconds: number | undefined }> {
    const { log, events } = this.run.deps;
    const untold = this.detached.slice(this.told);
    this.told = this.detached.length;
    if (untold.length > 0) {
      log.info('volumes detached', { volumes: untold });
      await events.record(volumesDetached(this.d.node, untold));
    }
    if (o.final && this.held.length > 0) {
      log.warn('releasing with volumes still attached: the drain deadline passed', { volumes: this.held.map(refOf) });
      await events.record(volumesNotDetached(this.d.node, this.held.map(refOf), 'the drain deadline passed'));
    } else if (o.final && this.unread !== undefined) {
      log.warn(
        'releasing without knowing whether the volumes detached: the VolumeAttachments could not be read before ' +
          'the drain deadline',
        { error: this.unread },
      );
      const unknown = (this.names ?? []).map((name) => ({ persistentVolume: name, attacher: 'unknown' }));
      await events.record(
        volumesNotDetached(this.d.node, unknown, 'the VolumeAttachments could not be read before the drain deadline'),
      );
    }
    return { seconds: this.detached.length > 0 ? Math.max(...this.detached.map((x) => x.seconds)) : undefined };
  }

  close(): void {
    this.watch?.close();
  }
}
