// A namespace's PodDisruptionBudgets watched (lambda/adapters/kubernetes/budget-watch.ts): one watch
// request for all of them, each budget as its events show it, resumed where it ended, started again
// from now on 410 or a failure (no budget kept that the new watch does not list), given up (the
// drain's retry takes over) on 403 and 404.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openBudgetWatch } from '../../../../lambda/adapters/kubernetes/budget-watch.js';
import { KubeApiError } from '../../../../lambda/adapters/kubernetes/kube-api-error.js';
import type { KubeHttp, RequestOptions } from '../../../../lambda/adapters/kubernetes/kube-http.js';
import { MemoryLog } from '../../../fakes/fake-world.js';

interface Opened {
  readonly path: string;
  readonly query: RequestOptions['query'];
  readonly event: (type: string, object: unknown) => void;
  readonly end: (error?: Error) => void;
  aborted: boolean;
}

function fakeKube(): KubeHttp & { opened: Opened[] } {
  const opened: Opened[] = [];
  return {
    opened,
    request: () => Promise.reject(new Error('no request expected: the watch alone')),
    watch(path, query, onEvent, onEnd) {
      const o: Opened = { path, query, event: (type, object) => onEvent({ type, object }), end: onEnd, aborted: false };
      opened.push(o);
      return { abort: () => void (o.aborted = true) };
    },
  };
}

const budget = (allowed: number, rv: string, generation = 1, observed = 1, name = 'web') => ({
  metadata: { name, namespace: 'shop', resourceVersion: rv, generation },
  status: { disruptionsAllowed: allowed, observedGeneration: observed },
});

describe('openBudgetWatch', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('opens one watch of the namespace from now, and shows each budget as its events do', () => {
    const kube = fakeKube();
    const watch = openBudgetWatch(kube, 'shop', new MemoryLog());

    expect(kube.opened).toHaveLength(1);
    expect(kube.opened[0]!.path).toBe('/apis/policy/v1/namespaces/shop/poddisruptionbudgets');
    expect(kube.opened[0]!.query).toMatchObject({ resourceVersion: undefined });
    expect(kube.opened[0]!.query).not.toHaveProperty('fieldSelector');
    expect(watch.current('web')).toBeUndefined();
    kube.opened[0]!.event('ADDED', budget(0, '10'));
    kube.opened[0]!.event('ADDED', budget(3, '9', 1, 1, 'cart'));
    expect(watch.current('web')).toEqual({ disruptionsAllowed: 0, processed: true });
    expect(watch.current('cart')).toEqual({ disruptionsAllowed: 3, processed: true });
    kube.opened[0]!.event('MODIFIED', budget(2, '11', 2, 1));
    expect(watch.current('web')).toEqual({ disruptionsAllowed: 2, processed: false });
    kube.opened[0]!.event('DELETED', budget(2, '12'));
    expect(watch.current('web')).toBeUndefined();
    expect(watch.current('cart')).toEqual({ disruptionsAllowed: 3, processed: true });
    watch.close();
    expect(kube.opened[0]!.aborted).toBe(true);
  });

  it('resumes from the last resourceVersion when the server ends it, and from now after 410 Gone', () => {
    const kube = fakeKube();
    const watch = openBudgetWatch(kube, 'shop', new MemoryLog());
    kube.opened[0]!.event('ADDED', budget(0, '10'));
    kube.opened[0]!.event('BOOKMARK', { metadata: { resourceVersion: '15' } });
    kube.opened[0]!.end();
    expect(kube.opened[1]!.query).toMatchObject({ resourceVersion: '15' });
    // Resumed: what was seen stands (the resumed watch sends only changes).
    expect(watch.current('web')).toEqual({ disruptionsAllowed: 0, processed: true });

    kube.opened[1]!.event('ERROR', { code: 410 });
    kube.opened[1]!.end();
    expect(kube.opened[2]!.query).toMatchObject({ resourceVersion: undefined });
    // From now: only what the new watch lists (a budget deleted during the gap is not kept).
    expect(watch.current('web')).toBeUndefined();
  });

  it('shows nothing while a failed watch is retried (then from now), and gives up on 403', () => {
    const kube = fakeKube();
    const watch = openBudgetWatch(kube, 'shop', new MemoryLog());
    kube.opened[0]!.event('ADDED', budget(1, '10'));
    kube.opened[0]!.end(new Error('socket hang up'));
    expect(watch.current('web')).toBeUndefined();
    vi.advanceTimersByTime(400);
    expect(kube.opened).toHaveLength(2);
    expect(kube.opened[1]!.query).toMatchObject({ resourceVersion: undefined });

    kube.opened[1]!.end(new KubeApiError(403, { message: 'cannot watch poddisruptionbudgets' }, {}, 'watch'));
    vi.advanceTimersByTime(60_000);
    expect(kube.opened).toHaveLength(2);
    expect(watch.current('web')).toBeUndefined();
  });

  it('opens nothing more once closed', () => {
    const kube = fakeKube();
    const watch = openBudgetWatch(kube, 'shop', new MemoryLog());
    watch.close();
    kube.opened[0]!.end(new Error('aborted'));
    vi.advanceTimersByTime(60_000);
    expect(kube.opened).toHaveLength(1);
  });
});
