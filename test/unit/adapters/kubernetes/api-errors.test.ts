import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../../../lambda/adapters/kubernetes/kube-api-error.js';
import { mapEvictionError } from '../../../../lambda/adapters/kubernetes/api-errors.js';
import { AccessDeniedError } from '../../../../lambda/shared/errors.js';

// Status bodies as the API server's eviction handler writes them (v1.34, eviction.go).
const status = (code: number, message: string, details: object = {}, reason = '') =>
  new KubeApiError(code, { message, reason, details }, {}, 'POST /api/v1/namespaces/default/pods/web/eviction');

describe('mapEvictionError', () => {
  it('maps 404 and 409 (UID precondition) to gone', () => {
    expect(mapEvictionError(status(404, 'pods "web" not found'), 'default/web')).toEqual({ kind: 'gone' });
    expect(
      mapEvictionError(
        status(409, 'Precondition failed: UID in precondition: a, UID in object meta: b'),
        'default/web',
      ),
    ).toEqual({ kind: 'gone' });
    // The store's wording in full, as the cluster suite sees it.
    const stored = status(
      409,
      'Operation cannot be fulfilled on pods "web": Precondition failed: UID in precondition: a, UID in object meta: b',
      { name: 'web', kind: 'pods' },
      'Conflict',
    );
    expect(mapEvictionError(stored, 'default/web')).toEqual({ kind: 'gone' });
  });

  it('retries a 409 about the budget (the server gave up on conflicts updating its status): the pod is still there', () => {
    const error = status(
      409,
      'Operation cannot be fulfilled on poddisruptionbudgets.policy "web-pdb": the object has been modified; please apply your changes to the latest version and try again',
      { name: 'web-pdb', group: 'policy', kind: 'poddisruptionbudgets' },
      'Conflict',
    );
    expect(mapEvictionError(error, 'default/web')).toMatchObject({
      kind: 'blocked',
      reason: 'conflict',
      budgetName: 'web-pdb',
    });
  });

  it('retries a 409 that names no UID precondition (a resourceVersion precondition: the pod changed)', () => {
    const error = status(
      409,
      'Operation cannot be fulfilled on pods "web": Precondition failed: ResourceVersion in precondition: 10, ResourceVersion in object meta: 11',
      { name: 'web', kind: 'pods' },
      'Conflict',
    );
    expect(mapEvictionError(error, 'default/web')).toMatchObject({ kind: 'blocked', reason: 'conflict' });
  });

  it('maps an admission denial of one pod (webhook, ValidatingAdmissionPolicy) to blocked, not to access denied', () => {
    const webhook = status(
      403,
      'admission webhook "deny.example.com" denied the request: pod web is protected',
      {},
      'Forbidden',
    );
    expect(mapEvictionError(webhook, 'default/web')).toMatchObject({
      kind: 'blocked',
      reason: 'admission-denied',
      message: expect.stringContaining('pod web is protected'),
    });
    const policy = status(
      403,
      "pods \"web\" is forbidden: ValidatingAdmissionPolicy 'protect' with binding 'protect' denied request: protected",
      {},
      'Forbidden',
    );
    expect(mapEvictionError(policy, 'default/web')).toMatchObject({ reason: 'admission-denied' });
    const invalid = status(
      422,
      "ValidatingAdmissionPolicy 'protect' with binding 'protect' denied request: protected",
      {},
      'Invalid',
    );
    expect(mapEvictionError(invalid, 'default/web')).toMatchObject({ reason: 'admission-denied' });
  });

  it('maps a 401 that outlived a fresh token to a retry, never to access denied', () => {
    expect(mapEvictionError(status(401, 'Unauthorized', {}, 'Unauthorized'), 'default/web')).toMatchObject({
      kind: 'blocked',
      reason: 'unauthorized',
    });
  });

  it('maps a PDB 429 to blocked with the budget name', () => {
    const error = status(
      429,
      "Cannot evict pod as it would violate the pod's disruption budget.",
      {
        causes: [
          {
            reason: 'DisruptionBudget',
            message: 'The disruption budget web-pdb needs 5 healthy pods and has 5 currently',
          },
        ],
      },
      'TooManyRequests',
    );
    expect(mapEvictionError(error, 'default/web')).toEqual({
      kind: 'blocked',
      reason: 'disruption-budget',
      budgetName: 'web-pdb',
      retryAfterSeconds: undefined,
      message: expect.stringContaining('needs 5 healthy pods'),
    });
  });

  it('keeps retryAfterSeconds of a budget still being processed', () => {
    const error = status(429, "Cannot evict pod as it would violate the pod's disruption budget.", {
      retryAfterSeconds: 10,
      causes: [
        {
          reason: 'DisruptionBudget',
          message: 'The disruption budget web-pdb is still being processed by the server.',
        },
      ],
    });
    expect(mapEvictionError(error, 'default/web')).toMatchObject({
      reason: 'disruption-budget',
      retryAfterSeconds: 10,
      budgetName: 'web-pdb',
    });
  });

  it('maps a plain 429 to throttled, honouring the Retry-After header', () => {
    const error = new KubeApiError(429, { message: 'too many requests' }, { 'retry-after': '3' }, 'POST eviction');
    expect(mapEvictionError(error, 'default/web')).toMatchObject({
      kind: 'blocked',
      reason: 'throttled',
      retryAfterSeconds: 3,
    });
  });

  it('maps the multiple-PDB 500 to multiple-budgets', () => {
    const error = status(
      500,
      'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
    );
    expect(mapEvictionError(error, 'default/web')).toMatchObject({ kind: 'blocked', reason: 'multiple-budgets' });
  });

  it('maps a terminating namespace 403 to a retry', () => {
    const error = status(403, 'namespace is terminating', {
      causes: [{ reason: 'NamespaceTerminating', message: 'namespace x is terminating' }],
    });
    expect(mapEvictionError(error, 'x/web')).toMatchObject({ kind: 'blocked', reason: 'namespace-terminating' });
  });

  it('maps a budget in a bad state (403 on poddisruptionbudget) to blocked, not to RBAC', () => {
    const error = status(
      403,
      'poddisruptionbudgets.policy "web-pdb" is forbidden: pdb disruptions allowed is negative',
      {
        name: 'web-pdb',
        group: 'policy',
        kind: 'poddisruptionbudget',
      },
    );
    expect(mapEvictionError(error, 'default/web')).toMatchObject({
      reason: 'disruption-budget',
      budgetName: 'web-pdb',
    });
  });

  it('throws on an RBAC 403 so the setup error is loud', () => {
    const error = status(
      403,
      'pods "web" is forbidden: User "drainer" cannot create resource "pods/eviction" in API group "" in the namespace "default"',
      {
        name: 'web',
        kind: 'pods',
      },
    );
    expect(() => mapEvictionError(error, 'default/web')).toThrow(AccessDeniedError);
    expect(() => mapEvictionError(error, 'default/web')).toThrow(/cannot create resource "pods\/eviction"/);
  });

  it('maps 5xx and network errors to a retryable server-error', () => {
    expect(mapEvictionError(status(503, 'unavailable'), 'default/web')).toMatchObject({ reason: 'server-error' });
    expect(mapEvictionError(new TypeError('fetch failed'), 'default/web')).toMatchObject({
      reason: 'server-error',
      message: 'TypeError: fetch failed',
    });
  });
});
