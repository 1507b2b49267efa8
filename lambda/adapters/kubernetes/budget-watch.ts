// The PodDisruptionBudgets of one namespace, watched for the drain's retries against them (eviction/budget-waits.ts).
// One request for every budget there: a node's pods are mostly under different budgets of one namespace, and a
// watch per budget cost a request each (issue 40). A watch with no resourceVersion starts with the budgets as they
// are now (synthetic ADDED events), served from the API server's watch cache, then their changes; resumed from the
// last resourceVersion when the server ends it.
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
    currentHealthy: budget.status?.currentHealthy,
    desiredHealthy: budget.status?.desiredHealthy,
  };
}

/**
 * Until a budget's first event, and while resuming after a failure, current() is undefined for it: the drain then
 * retries as it would without the watch. A 403 (RBAC without watch) or 404 is not retried: the fallback is enough.
 */
export function openBudgetWatch(kube: KubeHttp, namespace: string, log: Log): BudgetWatch {
  const path = `/apis/policy/v1/namespaces/${encodeURIComponent(namespace)}/poddisruptionbudgets`;
  const views = new Map<string, BudgetView>();
  let resourceVersion: string | undefined;
  let handle: WatchHandle | undefined;
  let closed = false;
  let failures = 0;
  const start = () => {
    if (closed) return;
    // From now (first open, or after 410 Gone): the ADDED events list every budget again; one deleted meanwhile
    // must not linger.
    if (resourceVersion === undefined) views.clear();
    handle = kube.watch(
      path,
      { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: budgetWatchTimeoutSeconds },
      ({ type, object }) => {
        const budget = object as V1PodDisruptionBudget & { code?: number };
        // 410 Gone: start again from now (no resourceVersion: the budgets as they are, then their changes).
        if (type === 'ERROR') resourceVersion = budget.code === 410 ? undefined : resourceVersion;
        if (type === 'ERROR') return;
        failures = 0;
        resourceVersion = budget.metadata?.resourceVersion ?? resourceVersion;
        const name = budget.metadata?.name;
        if (name === undefined) return;
        if (type === 'ADDED' || type === 'MODIFIED') views.set(name, toBudgetView(budget));
        if (type === 'DELETED') views.delete(name);
      },
      (error) => {
        if (closed) return;
        if (error === undefined) return start();
        // Stale until it is back: the drain retries meanwhile, and the new watch starts from now (every budget
        // listed again, not only those that change).
        views.clear();
        resourceVersion = undefined;
        failures++;
        const code = statusOf(error);
        log.debug('PodDisruptionBudget watch ended', { namespace, error, failures });
        if (code === 403 || code === 404) return;
        setTimeout(start, Math.min(5_000, 200 * 2 ** failures)).unref();
      },
    );
  };
  start();
  return {
    current: (name) => views.get(name),
    close: () => {
      closed = true;
      handle?.abort();
    },
  };
}
