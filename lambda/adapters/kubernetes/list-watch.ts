// A live view of a few objects: one list, then a watch resumed from the last
// resourceVersion, re-listing only on 410 Gone. Used for the pods of one draining node and the
// one node a launch waits for, so waiting costs the same on a 2,000-node cluster.
// https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
import { asError, type Log } from '../../shared/log.js';
import type { PodInfo } from '../../cluster/model.js';
import type { PodWatch } from '../../cluster/ports/pod-gateway.js';
import { call, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { toPodInfo, type WireList } from './object-codecs.js';

/** What the server is asked to keep a quiet watch open for (kube.watch idles out later). */
export const watchTimeoutSeconds = 25;

interface ListWatchOptions<T> {
  /** For messages: "pods on node x", "node x". */
  readonly what: string;
  readonly path: string;
  readonly fieldSelector?: string | undefined;
  /** Objects to keep (the server cannot select them): the others are dropped as they come. */
  readonly keep?: ((object: T) => boolean) | undefined;
  /** What the server is asked to keep a quiet watch open for (kube.watch idles out later). */
  readonly timeoutSeconds: number;
  readonly toInfo: (object: never) => T;
  readonly log: Log;
}

export interface ListWatch<T> {
  /** The objects as last seen. Throws the last error while the view cannot be resumed. */
  current(): T[];
  changed(timeoutMs: number): Promise<void>;
  close(): void;
}

/**
 * One list, then a watch resumed from the last resourceVersion; re-lists only on 410 Gone.
 * The objects are keyed by UID. A failure to resume is retried with backoff; until it
 * succeeds, current() throws it (no answer is not an empty answer).
 */
export async function openListWatch<T>(kube: KubeHttp, o: ListWatchOptions<T>): Promise<ListWatch<T>> {
  const view = new ListWatchView(kube, o);
  await view.list();
  view.watch();
  return { current: () => view.current(), changed: (ms) => view.changed(ms), close: () => view.close() };
}

type WatchedObject = { code?: number; metadata?: { uid?: string; resourceVersion?: string } };

class ListWatchView<T> {
  private readonly objects = new Map<string, T>();
  private readonly toInfo: (object: unknown) => T;
  private resourceVersion = '';
  private waiters: (() => void)[] = [];
  // Changes counted, so a change that arrives between two changed() calls still wakes.
  private version = 0;
  private seen = 0;
  private closed = false;
  private handle: { abort(): void } | undefined;
  private failures = 0;
  private broken: Error | undefined;

  constructor(
    private readonly kube: KubeHttp,
    private readonly o: ListWatchOptions<T>,
  ) {
    this.toInfo = o.toInfo as (object: unknown) => T;
  }

  current(): T[] {
    if (this.broken !== undefined) throw this.broken;
    return [...this.objects.values()];
  }

  async changed(timeoutMs: number): Promise<void> {
    if (this.version === this.seen && !this.closed) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    this.seen = this.version;
  }

  close(): void {
    this.closed = true;
    this.handle?.abort();
    this.notify();
  }

  async list(): Promise<void> {
    const next = new Map<string, T>();
    let cont: string | undefined;
    do {
      const query = { fieldSelector: this.o.fieldSelector, limit: 500, continue: cont };
      const page = await call(`list ${this.o.what}`, () =>
        this.kube.request<WireList<{ metadata?: { uid?: string } }>>('GET', this.o.path, { query }),
      );
      for (const item of page.items) {
        const info = this.toInfo(item);
        if (this.o.keep === undefined || this.o.keep(info)) next.set(item.metadata?.uid ?? '', info);
      }
      this.resourceVersion = page.metadata?.resourceVersion ?? '';
      cont = page.metadata?.continue || undefined;
    } while (cont);
    this.objects.clear();
    for (const [uid, item] of next) this.objects.set(uid, item);
  }

  watch(): void {
    if (this.closed) return;
    const state = { gone: false };
    this.handle = this.kube.watch(
      this.o.path,
      // The server ends the watch cleanly after timeoutSeconds and we resume from here; our
      // own idle timeout (kube.watch) is longer, so a quiet watch is never torn down early.
      {
        fieldSelector: this.o.fieldSelector,
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: this.o.timeoutSeconds,
      },
      ({ type, object }) => this.onEvent(type, object as WatchedObject, state),
      (error) => this.onEnd(error, state),
    );
  }

  private onEvent(type: string, obj: WatchedObject, state: { gone: boolean }): void {
    if (type === 'ERROR') {
      if (obj.code === 410) state.gone = true;
      return;
    }
    this.failures = 0;
    if (this.broken !== undefined) {
      this.broken = undefined;
      this.notify();
    }
    if (obj.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
    if (type === 'BOOKMARK') return;
    const uid = obj.metadata?.uid ?? '';
    const info = this.toInfo(obj);
    // Another node's object, say: not ours to keep, and no reason to wake anyone.
    if (this.o.keep !== undefined && !this.o.keep(info) && !this.objects.has(uid)) return;
    if (type === 'DELETED') this.objects.delete(uid);
    else this.objects.set(uid, info);
    this.notify();
  }

  private onEnd(error: Error | undefined, state: { gone: boolean }): void {
    if (this.closed) return;
    if (error) {
      this.failures++;
      this.o.log.debug('watch ended, resuming', { watch: this.o.what, error, failures: this.failures });
    } else {
      // A clean end is the server's timeout: resume at once, no backoff to grow.
      this.failures = 0;
    }
    const relist = state.gone || statusOf(error) === 410;
    setTimeout(() => void this.resume(relist), error ? Math.min(5000, 100 * 2 ** this.failures) : 0).unref();
  }

  private async resume(relist: boolean): Promise<void> {
    if (this.closed) return;
    try {
      if (relist) {
        await this.list();
        this.notify();
      }
      this.watch();
    } catch (e) {
      this.failures++;
      this.broken = asError(e);
      this.notify();
      this.o.log.warn('watch could not resume, retrying', {
        watch: this.o.what,
        error: this.broken,
        failures: this.failures,
      });
      setTimeout(() => void this.resume(relist), Math.min(5000, 200 * 2 ** this.failures)).unref();
    }
  }

  private notify(): void {
    this.version++;
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  }
}

/** The pods bound to one node. Never throws from current(): the drain keeps its last view. */
export async function openPodWatch(kube: KubeHttp, nodeName: string, log: Log): Promise<PodWatch> {
  const watch = await openListWatch(kube, {
    what: `pods on node ${nodeName}`,
    path: '/api/v1/pods',
    fieldSelector: `spec.nodeName=${nodeName}`,
    timeoutSeconds: watchTimeoutSeconds,
    toInfo: toPodInfo,
    log,
  });
  let last: PodInfo[] = [];
  return {
    current: () => {
      try {
        last = watch.current();
      } catch {
        /* resuming: the last view stands, as before the watch broke */
      }
      return last;
    },
    changed: watch.changed,
    close: watch.close,
  };
}
