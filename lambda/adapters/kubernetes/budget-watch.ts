// One PodDisruptionBudget watched by name, for the drain's retries against it (eviction/budget-waits.ts). One
// request: a watch with no resourceVersion starts with the budget as it is now (a synthetic ADDED event), served
// from the API server's watch cache, then its changes; resumed from the last resourceVersion when the server ends it.
// https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-watch
import type { V1PodDisruptionBudget } from '@kubernetes/client-node';
import type { BudgetView, BudgetWatch } from '../../cluster/ports/pod-gateway.js';
import type { Log } from '../../shared/log.js';
import { statusOf } from './api-errors.js';
import type { KubeHttp, WatchHandle } from './kube-http.js';

/** Long: every resume is one more request, and the drain closes the watch when it no longer waits. */
export const budgetWatchTimeoutSeconds = 300;

export function toBudgetView(budget: V1PodDisruptionBudget): BudgetView {
  const observed = budget.status?.observedGeneration ?? 0;
  return {
    disruptionsAllowed: budget.status?.disruptionsAllowed ?? 0,
    processed: observed >= (budget.metadata?.generation ?? 0),
  };
}

/**
 * Until the first event, and while resuming after a failure, current() is undefined: the drain then retries as it
 * would without the watch. A 403 (RBAC without watch) or 404 is not retried: the fallback is enough.
 */
export function openBudgetWatch(kube: KubeHttp, namespace: string, name: string, log: Log): BudgetWatch {
  const path = `/apis/policy/v1/namespaces/${encodeURIComponent(namespace)}/poddisruptionbudgets`;
  let view: BudgetView | undefined;
  let resourceVersion: string | undefined;
  let handle: WatchHandle | undefined;
  let closed = false;
  let failures = 0;
  const start = () => {
    if (closed) return;
    handle = kube.watch(
      path,
      {
        fieldSelector: `metadata.name=${name}`,
        resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: budgetWatchTimeoutSeconds,
      },
      ({ type, object }) => {
        const budget = object as V1PodDisruptionBudget & { code?: number };
        // 410 Gone: start again from now (no resourceVersion: the budget as it is, then its changes).
        if (type === 'ERROR') resourceVersion = budget.code === 410 ? undefined : resourceVersion;
        if (type === 'ERROR') return;
        failures = 0;
        resourceVersion = budget.metadata?.resourceVersion ?? resourceVersion;
        if (type === 'ADDED' || type === 'MODIFIED') view = toBudgetView(budget);
        if (type === 'DELETED') view = undefined;
      },
      (error) => {
        if (closed) return;
        if (error === undefined) return start();
        view = undefined;
        failures++;
        const code = statusOf(error);
        log.debug('PodDisruptionBudget watch ended', { budget: `${namespace}/${name}`, error, failures });
        if (code === 403 || code === 404) return;
        setTimeout(start, Math.min(5_000, 200 * 2 ** failures)).unref();
      },
    );
  };
  start();
  return {
    current: () => view,
    close: () => {
      closed = true;
      handle?.abort();
    },
  };
}
