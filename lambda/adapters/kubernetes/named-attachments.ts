// A node's VolumeAttachments read by name (volume-names.ts derives the names from the Node):
// a GET each, every few seconds, for those still there. Its cost follows the node's volumes,
// not the cluster's attachments, as the list and watch of every VolumeAttachment would. A
// failed read (429, 5xx, a timeout) keeps the last view and is asked again at the next look;
// before any view, current() throws it, so the caller knows it does not know.
import type { VolumeAttachmentInfo } from '../../cluster/model.js';
import type { VolumeAttachmentWatch } from '../../cluster/ports/volume-gateway.js';
import { mapWithConcurrency } from '../../shared/concurrency.js';
import { asError, type Log } from '../../shared/log.js';
import type { V1VolumeAttachment } from '@kubernetes/client-node';
import { classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { toVolumeAttachmentInfo } from './object-codecs.js';

/** How often the names still attached are read again (jittered): detaches take seconds to a minute. */
export const namedPollMs = 2_000;
const concurrency = 4;

export async function openNamedAttachments(
  kube: KubeHttp,
  names: readonly string[],
  log: Log,
  pollMs = namedPollMs,
): Promise<VolumeAttachmentWatch> {
  const view = new NamedAttachments(kube, names, log, pollMs);
  await view.read();
  return view;
}

class NamedAttachments implements VolumeAttachmentWatch {
  /** What each name answered at its last read; a name answered 404 is gone for good and not asked again. */
  private readonly seen = new Map<string, VolumeAttachmentInfo>();
  private pending: string[];
  private read_ = false;
  private error: Error | undefined;
  private closed = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly kube: KubeHttp,
    names: readonly string[],
    private readonly log: Log,
    private readonly pollMs: number,
  ) {
    this.pending = [...names];
  }

  async read(): Promise<void> {
    try {
      const answers = await mapWithConcurrency(this.pending, concurrency, (name) => this.get(name));
      for (const [i, name] of this.pending.entries()) {
        const a = answers[i];
        if (a === undefined) this.seen.delete(name);
        else this.seen.set(name, a);
      }
      this.pending = this.pending.filter((_, i) => answers[i] !== undefined);
      this.read_ = true;
      this.error = undefined;
    } catch (error) {
      if (this.error === undefined)
        this.log.warn(
          'could not read the VolumeAttachments by name; the last view stands and they are read again',
          asError(error),
        );
      this.error = asError(error);
    }
  }

  private async get(name: string): Promise<VolumeAttachmentInfo | undefined> {
    try {
      return toVolumeAttachmentInfo(
        await this.kube.request<V1VolumeAttachment>(
          'GET',
          `/apis/storage.k8s.io/v1/volumeattachments/${encodeURIComponent(name)}`,
        ),
      );
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw classify(error, `get volumeattachment ${name}`);
    }
  }

  current(): VolumeAttachmentInfo[] {
    if (!this.read_) throw this.error ?? new Error('the VolumeAttachments were not read yet');
    return [...this.seen.values()];
  }

  /** The next look: after pollMs (jittered), or timeoutMs when that is sooner (then nothing is read). */
  async changed(timeoutMs: number): Promise<void> {
    if (this.closed) return;
    const dueMs = Math.round(this.pollMs * (0.8 + 0.4 * Math.random()));
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(resolve, Math.max(0, Math.min(timeoutMs, dueMs)));
    });
    this.wake = undefined;
    if (!this.closed && timeoutMs >= dueMs) await this.read();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.wake?.();
  }
}
