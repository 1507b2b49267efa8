import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../lambda/adapters/kube-http.js';
import { mapEvictionError } from '../../lambda/adapters/kubernetes.js';
import { AccessDeniedError } from '../../lambda/errors.js';

// Status bodies as the API server's eviction handler writes them (v1.34, eviction.go).
const status = (code: number, message: string, details: object = {}, reason = '') =>
  new KubeApiError(code, { message, reason, details }, {}, 'POST /api/v1/namespaces/default/pods/web/eviction');

describe('mapEvictionError', () => {
  it('maps 404 and 409 (UID precondition) to gone', () => {
    expect(mapEvictionError(status(404, 'pods "web" not found'), 'default/web')).toEqual({ kind: 'gone' });
    expect(mapEvictionError(status(409, 'Precondition failed: UID in precondition: a, UID in object meta: b'), 'default/web')).toEqual({ kind: 'gone' });
  });

  it('maps a PDB 429 to blocked with the budget name', () => {
    const error = status(429, "Cannot evict pod as it would violate the pod's disruption budget.", {
      causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web-pdb needs 5 healthy pods and has 5 currently' }],
    }, 'TooManyRequests');
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
      causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web-pdb is still being processed by the server.' }],
    });
    expect(mapEvictionError(error, 'default/web')).toMatchObject({ reason: 'disruption-budget', retryAfterSeconds: 10, budgetName: 'web-pdb' });
  });

  it('maps a plain 429 to throttled, honouring the Retry-After header', () => {
    const error = new KubeApiError(429, { message: 'too many requests' }, { 'retry-after': '3' }, 'POST eviction');
    expect(mapEvictionError(error, 'default/web')).toMatchObject({ kind: 'blocked', reason: 'throttled', retryAfterSeconds: 3 });
  });

  it('maps the multiple-PDB 500 to multiple-budgets', () => {
    const error = status(500, 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
    expect(mapEvictionError(error, 'default/web')).toMatchObject({ kind: 'blocked', reason: 'multiple-budgets' });
  });

  it('maps a terminating namespace 403 to a retry', () => {
    const error = status(403, 'namespace is terminating', { causes: [{ reason: 'NamespaceTerminating', message: 'namespace x is terminating' }] });
    expect(mapEvictionError(error, 'x/web')).toMatchObject({ kind: 'blocked', reason: 'namespace-terminating' });
  });

  it('maps a budget in a bad state (403 on poddisruptionbudget) to blocked, not to RBAC', () => {
    const error = status(403, 'poddisruptionbudgets.policy "web-pdb" is forbidden: pdb disruptions allowed is negative', {
      name: 'web-pdb',
      group: 'policy',
      kind: 'poddisruptionbudget',
    });
    expect(mapEvictionError(error, 'default/web')).toMatchObject({ reason: 'disruption-budget', budgetName: 'web-pdb' });
  });

  it('throws on an RBAC 403 so the setup error is loud', () => {
    const error = status(403, 'pods "web" is forbidden: User "drainer" cannot create resource "pods/eviction" in API group "" in the namespace "default"', {
      name: 'web',
      kind: 'pods',
    });
    expect(() => mapEvictionError(error, 'default/web')).toThrow(AccessDeniedError);
    expect(() => mapEvictionError(error, 'default/web')).toThrow(/cannot create resource "pods\/eviction"/);
  });

  it('maps 5xx and network errors to a retryable server-error', () => {
    expect(mapEvictionError(status(503, 'unavailable'), 'default/web')).toMatchObject({ reason: 'server-error' });
    expect(mapEvictionError(new TypeError('fetch failed'), 'default/web')).toMatchObject({ reason: 'server-error', message: 'TypeError: fetch failed' });
  });
});
