// The shared load-balancer readings' namespace and Role (installer/reading-rbac.ts): Leases in the
// deployment's own namespace and nowhere else, bound to its group; a namespace of that name the
// installer did not make is used as it is and never deleted with its contents.
import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../../lambda/adapters/kubernetes/kube-api-error.js';
import type { KubeHttp, RequestOptions } from '../../../lambda/adapters/kubernetes/kube-http.js';
import { applyRbac, deleteRbac } from '../../../lambda/installer/rbac-apply.js';
import { readingObjects, readingRule } from '../../../lambda/installer/reading-rbac.js';
import type { KubernetesObject } from '../../../lambda/installer/rbac.js';

const owner = 'arn:aws:cloudformation:eu-west-1:123456789012:stack/gnt/11111111-1111-1111-1111-111111111111/Rbac';
const namespacePath = '/api/v1/namespaces/gnt';

function fakeKube(objects: Map<string, KubernetesObject>) {
  const writes: string[] = [];
  const kube: KubeHttp = {
    async request<T>(method: string, path: string, options?: RequestOptions): Promise<T> {
      const o = objects.get(path);
      if (method === 'GET') {
        if (o === undefined) throw new KubeApiError(404, undefined, {}, `GET ${path}`);
        return o as T;
      }
      writes.push(`${method} ${path}`);
      if (method === 'PATCH') objects.set(path, options?.body as KubernetesObject);
      if (method === 'DELETE') objects.delete(path);
      return {} as T;
    },
    watch: () => {
      throw new Error('no watch');
    },
  };
  return { kube, writes };
}

describe("the shared readings' namespace and Role", () => {
  it('grants Leases only, in the namespace named as the deployment, to its group (and the group it is leaving)', () => {
    const [namespace, role, binding] = readingObjects('team-drainers', 'gnt', { alsoBound: ['old-drainers'] }) as [
      KubernetesObject,
      KubernetesObject & { rules: unknown[] },
      KubernetesObject & { subjects: { name: string }[]; roleRef: { kind: string; name: string } },
    ];
    expect(namespace).toMatchObject({ kind: 'Namespace', metadata: { name: 'gnt' } });
    expect(role).toMatchObject({ kind: 'Role', metadata: { name: 'gnt-target-readings', namespace: 'gnt' } });
    expect(role.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: readingRule.verbs },
    ]);
    expect(readingRule.verbs).not.toContain('update');
    expect(binding).toMatchObject({ kind: 'RoleBinding', metadata: { namespace: 'gnt' } });
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'gnt-target-readings',
    });
    expect(binding.subjects.map((s) => s.name)).toEqual(['team-drainers', 'old-drainers']);
  });

  it('uses a namespace of that name someone else made as it is, and leaves it (with what is in it) on delete', async () => {
    const theirs: KubernetesObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'gnt', labels: {} } };
    const f = fakeKube(new Map([[namespacePath, theirs]]));
    await applyRbac(f.kube, { name: 'gnt', group: 'gnt', deadlinePolicy: 'force', owner });
    expect(f.writes).not.toContain(`PATCH ${namespacePath}`);
    expect(f.writes).toContain('PATCH /apis/rbac.authorization.k8s.io/v1/namespaces/gnt/roles/gnt-target-readings');
    const left = await deleteRbac(f.kube, 'gnt', owner, true);
    expect(f.writes).not.toContain(`DELETE ${namespacePath}`);
    expect(left).toEqual(['Namespace gnt']);
  });

  it('makes the namespace when there is none, owned by the stack, and deletes it with the rest', async () => {
    const f = fakeKube(new Map());
    await applyRbac(f.kube, { name: 'gnt', group: 'gnt', deadlinePolicy: 'force', owner });
    expect(f.writes).toContain(`PATCH ${namespacePath}`);
    expect(f.writes.indexOf(`PATCH ${namespacePath}`)).toBeLessThan(
      f.writes.indexOf('PATCH /apis/rbac.authorization.k8s.io/v1/namespaces/gnt/roles/gnt-target-readings'),
    );
    await deleteRbac(f.kube, 'gnt', owner, false);
    expect(f.writes.at(-1)).toBe(`DELETE ${namespacePath}`);
    expect(f.writes).toContain('DELETE /apis/rbac.authorization.k8s.io/v1/namespaces/gnt/roles/gnt-target-readings');
  });
});
