// The surges of one drain as the gate keeps them (surge-gate.ts): what the drain record holds,
// and each change written to it (the record names a restart before it is made).
import type { DeploymentRef, PatchResult, SurgeMark } from '../cluster/model.js';
import { deploymentKey } from '../cluster/marks/surge-marks.js';
import { asError, type Log } from '../shared/log.js';

export class SurgeBook {
  private readonly surges: SurgeMark[];

  constructor(
    surges: readonly SurgeMark[],
    private readonly saveSurges: (surges: readonly SurgeMark[]) => Promise<PatchResult>,
    private readonly log: Log,
  ) {
    this.surges = [...surges];
  }

  all(): readonly SurgeMark[] {
    return this.surges;
  }

  /** The pod's surge, whatever its state. */
  of(uid: string): SurgeMark | undefined {
    return this.surges.find((s) => s.uid === uid);
  }

  /** The restarted surge of this Deployment that still waits (another pod of it joins it). */
  waitingOf(deployment: DeploymentRef): SurgeMark | undefined {
    const key = deploymentKey(deployment);
    return this.surges.find(
      (s) =>
        s.deployment && deploymentKey(s.deployment) === key && s.restartedAt !== undefined && s.state === 'waiting',
    );
  }

  /** Kept in memory; written with the next change. */
  add(mark: SurgeMark): SurgeMark {
    this.surges.push(mark);
    return mark;
  }

  /** Kept only if the record took it: false when the node refused the write (a restart must not follow). */
  async record(mark: SurgeMark): Promise<boolean> {
    this.surges.push(mark);
    if ((await this.saveSurges(this.surges)) === 'patched') return true;
    this.surges.pop();
    return false;
  }

  /** The mark changed and written; a failed write is logged (the next change writes it again). */
  async change(mark: SurgeMark, next: SurgeMark): Promise<SurgeMark> {
    const i = this.surges.indexOf(mark);
    if (i >= 0) this.surges[i] = next;
    await this.saveSurges(this.surges).catch((error: unknown) =>
      this.log.warn('could not record the surge outcome', { error: asError(error) }),
    );
    return next;
  }

  async settle(mark: SurgeMark, state: SurgeMark['state'], reason?: string): Promise<void> {
    await this.change(mark, { ...mark, state, ...(reason !== undefined ? { reason } : {}) });
  }
}
