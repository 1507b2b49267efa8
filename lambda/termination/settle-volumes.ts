// The volume half of the settle phase: the instance is released only once the volumes of the
// pods that left it are detached (their VolumeAttachments gone), so a replacement attaches
// them elsewhere at once instead of after EC2's forced detach (minutes; six for a volume the
// kubelet never unmounted). Attachments still used by a pod on the node (a DaemonSet's, a pod
// we left) cannot detach before the instance goes and hold nothing. Everything is re-derived
// from the cluster, so a hand-off in the middle resumes the wait. Karpenter's termination
// waits the same way: https://github.com/aws/karpenter-provider-aws/blob/main/designs/statefulset-disruption.md
import type { PodInfo, VolumeAttachmentInfo, VolumeAttachmentWatch } from '../cluster/cluster-ports.js';
import { volumesDetached, volumesNotDetached, waitingForVolumeDetach, type VolumeRef } from '../cluster/events.js';
import { asError } from '../shared/log.js';
import type { Drained, Run } from './state.js';

/** A PersistentVolume we could not read: not asked again in this wait. */
const unreadable = '\u0000unreadable';

const refOf = (a: VolumeAttachmentInfo): VolumeRef => ({ persistentVolume: a.persistentVolumeName ?? a.name, attacher: a.attacher });

export class VolumeWait {
  /** What held at the last look, by UID. */
  private readonly holding = new Map<string, VolumeAttachmentInfo>();
  private readonly claims = new Map<string, string | undefined>();
  private readonly detached: (VolumeRef & { seconds: number })[] = [];
  private told = 0;

  private constructor(
    private readonly run: Run,
    private readonly d: Drained,
    private readonly watch: VolumeAttachmentWatch,
    /** Volumes are waited for until then (the drain deadline), the load-balancer wait permitting. */
    readonly untilMs: number,
  ) {}

  /** Opens the node's attachments; undefined when the wait is off or the attachments cannot be read (said once). */
  static async open(run: Run, d: Drained, untilMs: number): Promise<VolumeWait | undefined> {
    // Past the drain deadline nothing is waited for: no list, no watch (a resumed settle).
    if (!run.request.waitForVolumeDetach || run.deps.clock.now() >= untilMs) return undefined;
    try {
      return new VolumeWait(run, d, await run.deps.volumes.watchVolumeAttachments(d.node.name), untilMs);
    } catch (error) {
      run.deps.log.warn('could not read the VolumeAttachments (RBAC: list and watch volumeattachments); releasing without waiting for volumes to detach', asError(error));
      return undefined;
    }
  }

  /** Re-reads which attachments hold the release, given the pods now on the node. */
  async refresh(podsOnNode: readonly PodInfo[]): Promise<void> {
    let attachments: readonly VolumeAttachmentInfo[];
    try {
      attachments = this.watch.current();
    } catch {
      return; // resuming the watch: the last view stands
    }
    // A finished pod (a Job's) no longer holds its volume, nor does one we drained that is still
    // terminating (stuck on a finalizer, say): the volume detaches once it is gone and must be
    // waited for. With the kubelet gone nothing unmounts: a terminating pod keeps its volume.
    const kubeletGone = !this.d.node.ready;
    const running = podsOnNode.filter((p) => p.phase !== 'Succeeded' && p.phase !== 'Failed' && (p.deletionTimestamp === undefined || kubeletGone));
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
        this.run.deps.log.warn('could not read a PersistentVolume (RBAC: get persistentvolumes); its attachment holds the release until the drain deadline', {
          persistentVolume: pv,
          error: asError(error),
        });
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

  get pending(): boolean {
    return this.held.length > 0;
  }

  /** Over: nothing holds, or the deadline passed. */
  done(now: number): boolean {
    return this.held.length === 0 || now >= this.untilMs;
  }

  changed(timeoutMs: number): Promise<void> {
    return this.watch.changed(timeoutMs);
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
    }
    return { seconds: this.detached.length > 0 ? Math.max(...this.detached.map((x) => x.seconds)) : undefined };
  }

  close(): void {
    this.watch.close();
  }
}
