// What the API server's answers mean: our own RBAC denial (a setup error), admission denials,
// budgets, throttling. Every failure leaves here as an Error with the API's answer as its cause.
import { AccessDeniedError, TransientError } from '../../shared/errors.js';
import type { EvictionResult } from '../../cluster/model.js';
import { KubeApiError, type StatusBody } from './kube-api-error.js';

export function statusOf(error: unknown): number | undefined {
  return error instanceof KubeApiError ? error.statusCode : undefined;
}

function statusBody(error: unknown): StatusBody | undefined {
  return error instanceof KubeApiError ? error.status : undefined;
}

function retryAfterHeader(error: unknown): number | undefined {
  if (!(error instanceof KubeApiError)) return undefined;
  const n = Number(error.headers['retry-after']);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

export function describe(error: unknown): string {
  if (error instanceof KubeApiError) return `HTTP ${error.statusCode}: ${error.status?.message ?? ''}`.trim();
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** The RBAC authorizer's wording: `User "x" cannot create resource "pods/eviction" in API group ""...`. */
export function isRbacDenial(message: string): boolean {
  return /\bcannot [a-z]+ resource "/i.test(message);
}

function isAdmissionDenial(message: string): boolean {
  return /admission webhook .* denied|ValidatingAdmissionPolicy .* denied|denied the request|denied request/i.test(
    message,
  );
}

/** The store's "Precondition failed: UID in precondition: ..., UID in object meta: ..." (a pods 409). */
function isUidPreconditionFailure(status: StatusBody | undefined): boolean {
  const kind = status?.details?.kind;
  return (kind === undefined || kind === 'pods') && /UID in precondition/i.test(status?.message ?? '');
}

/**
 * Only our own RBAC denial is a setup error. A 401 (after a fresh token: an access entry
 * still propagating) and a 403 from admission are worth another try, so transient.
 */
export function classify(error: unknown, what: string): Error {
  const code = statusOf(error);
  if (code === 403 && isRbacDenial(statusBody(error)?.message ?? '')) {
    return new AccessDeniedError(`${what}: forbidden (${describe(error)})`, code, { cause: error });
  }
  const hint =
    code === 401
      ? ' (unauthorized even with a fresh token; access may still be propagating)'
      : code === 403
        ? ' (denied, not by RBAC: admission)'
        : '';
  return new TransientError(`${what} failed: ${describe(error)}${hint}`, { cause: error });
}

/** Runs one request; its failure leaves classified. */
export async function call<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw classify(error, what);
  }
}

/**
 * Maps an eviction answer to a value. Facts from the API server's eviction handler:
 * https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/registry/core/pod/storage/eviction.go
 * - 429 with a DisruptionBudget cause: the budget allows no disruption now (or is not yet
 *   processed); 500 "more than one PodDisruptionBudget"; 403 on a poddisruptionbudget: the
 *   budget is in a bad state.
 * - 409 is two different things. The store's precondition check answers "Precondition
 *   failed: UID in precondition" when the name now belongs to another pod: that pod is gone.
 *   But the handler retries its own conflicts on the budget's status (20 x 500 ms) and, when
 *   they never stop, client-go's retry.OnError hands back the last conflict, a 409 about
 *   poddisruptionbudgets: the pod is still there and must be evicted again.
 * - 403 is ours only when RBAC says so ("User ... cannot create resource ..."). An admission
 *   webhook, a ValidatingAdmissionPolicy or a policy engine denies one pod: blocked, retried.
 * - 401 reaches here only after the HTTP client minted a fresh token and tried again.
 */
export function mapEvictionError(error: unknown, pod: string): EvictionResult {
  const code = statusOf(error);
  const status = statusBody(error);
  const message = status?.message ?? describe(error);
  const causes = status?.details?.causes ?? [];
  const retryAfterSeconds = status?.details?.retryAfterSeconds ?? retryAfterHeader(error);
  const blocked = (
    reason: Extract<EvictionResult, { kind: 'blocked' }>['reason'],
    budgetName?: string,
  ): EvictionResult => ({
    kind: 'blocked',
    reason,
    message: [message, ...causes.map((c) => c.message ?? '')].filter(Boolean).join(' '),
    retryAfterSeconds: retryAfterSeconds || undefined,
    budgetName,
  });
  if (code === 404) return { kind: 'gone' };
  if (code === 409) {
    if (isUidPreconditionFailure(status)) return { kind: 'gone' };
    return blocked(
      'conflict',
      /poddisruptionbudget/i.test(status?.details?.kind ?? '') ? status?.details?.name : undefined,
    );
  }
  if (code === 429) {
    const budgetCause = causes.find((c) => c.reason === 'DisruptionBudget' || c.type === 'DisruptionBudget');
    if (budgetCause)
      return blocked('disruption-budget', /disruption budget (\S+)/.exec(budgetCause.message ?? '')?.[1]);
    return blocked('throttled');
  }
  if (code === 500 && /more than one PodDisruptionBudget/i.test(message)) return blocked('multiple-budgets');
  if (code === 403) {
    if (causes.some((c) => c.reason === 'NamespaceTerminating' || c.type === 'NamespaceTerminating'))
      return blocked('namespace-terminating');
    // The eviction handler also answers 403 for a budget in a bad state (negative
    // disruptionsAllowed, too many unconfirmed evictions): a budget problem, not RBAC.
    if (status?.details?.kind === 'poddisruptionbudget') return blocked('disruption-budget', status.details.name);
    if (isRbacDenial(message))
      throw new AccessDeniedError(`evicting pod ${pod} was forbidden: ${message}`, 403, { cause: error });
    return blocked('admission-denied');
  }
  if (code === 401) return blocked('unauthorized');
  // Admission can also answer 400 or 422 (a webhook's own code, a policy's reason: Invalid).
  if ((code === 400 || code === 422) && isAdmissionDenial(message)) return blocked('admission-denied');
  return blocked('server-error');
}
