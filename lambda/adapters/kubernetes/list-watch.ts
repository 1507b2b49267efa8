// A live view of a few objects: one list, then a watch resumed from the last
// resourceVersion, re-listing only on 410 Gone. Used for the pods of one draining node and the
// one node a launch waits for, so waiting costs the same on a 2,000-node cluster.
// https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
import type { Log } from '../../shared/log.js';
import type { PodInfo, PodWatch } from '../../cluster/cluster-ports.js';
import { call, describe, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { toPodInfo, type WireList } from './object-codecs.js';

/** What the server is asked to keep a quiet watch open for (kube.watch idles out later). */
export const watchTimeoutSeconds = 25;

interface ListWatchOptions<T> {
  /** For messages: "pods on node x", "node x". */
  readonly what: string;
  readonly path: string;
  readonly fieldSelector: string;
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
  const { fieldSelector, what, log } = o;
  const toInfo = o.toInfo as (object: unknown) => T;
  const objects = new Map<string, T>();
  let resourceVersion = '';
  let waiters: (() => void)[] = [];
  // Changes counted, so a change that arrives between two changed() calls still wakes.
  let version = 0;
  let seen = 0;
  let closed = false;
  let handle: { abort(): void } | undefined;
  let failures = 0;
  let broken: Error | undefined;
  const notify = () => {
    version++;
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };

  const list = async () => {
    const next = new Map<string, T>();
    let cont: string | undefined;
    do {
      const page = await call(`list ${what}`, () =>
        kube.request<WireList<{ metadata?: { uid?: string } }>>('GET', o.path, { query: { fieldSelector, limit: 500, continue: cont } }),
      );
      for (const item of page.items) next.set(item.metadata?.uid ?? '', toInfo(item));
      resourceVersion = page.metadata?.resourceVersion ?? '';
      cont = page.metadata?.continue || undefined;
    } while (cont);
    objects.clear();
    for (const [uid, item] of next) objects.set(uid, item);
  };

  const watch = () => {
    if (closed) return;
    let gone = false;
    handle = kube.watch(
      o.path,
      // The server ends the watch cleanly after timeoutSeconds and we resume from here; our
      // own idle timeout (kube.watch) is longer, so a quiet watch is never torn down early.
      { fieldSelector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: o.timeoutSeconds },
      ({ type, object }) => {
        const obj = object as { code?: number; metadata?: { uid?: string; resourceVersion?: string } };
        if (type === 'ERROR') {
          if (obj.code === 410) gone = true;
          return;
        }
        failures = 0;
        if (broken !== undefined) {
          broken = undefined;
          notify();
        }
        if (obj.metadata?.resourceVersion) resourceVersion = obj.metadata.resourceVersion;
        if (type === 'BOOKMARK') return;
        const uid = obj.metadata?.uid ?? '';
        if (type === 'DELETED') objects.delete(uid);
        else objects.set(uid, toInfo(obj));
        notify();
      },
      (error) => {
        if (closed) return;
        if (error) {
          failures++;
          log.debug('watch ended, resuming', { watch: what, error: describe(error), failures });
        } else {
          // A clean end is the server's timeout: resume at once, no backoff to grow.
          failures = 0;
        }
        const resume = async () => {
          if (closed) return;
          try {
            if (gone || statusOf(error) === 410) {
              await list();
              notify();
            }
            watch();
          } catch (e) {
            failures++;
            broken = e instanceof Error ? e : new Error(String(e));
            notify();
            log.warn('watch could not resume, retrying', { watch: what, error: describe(e), failures });
            setTimeout(() => void resume(), Math.min(5000, 200 * 2 ** failures)).unref();
          }
        };
        setTimeout(() => void resume(), error ? Math.min(5000, 100 * 2 ** failures) : 0).unref();
      },
    );
  };

  await list();
  watch();
  return {
    current: () => {
      if (broken !== undefined) throw broken;
      return [...objects.values()];
    },
    changed: async (timeoutMs) => {
      if (version === seen && !closed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, timeoutMs);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      seen = version;
    },
    close: () => {
      closed = true;
      handle?.abort();
      notify();
    },
  };
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
