// Applying the RBAC objects (installer/rbac-apply.ts) next to another deployment's: an object of our name without
// an owner is ours to take (as a Delete takes it), one another stack annotated is refused with a ConfigError before
// anything is patched, and the same stack under another logical id is still its own.
import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../../lambda/adapters/kubernetes/kube-api-error.js';
import { type KubeHttp, type RequestOptions } from '../../../lambda/adapters/kubernetes/kube-http.js';
import { applyRbac } from '../../../lambda/installer/rbac-apply.js';
import { ownerAnnotation, type KubernetesObject } from '../../../lambda/installer/rbac.js';
import { ConfigError } from '../../../lambda/shared/errors.js';

/** A KubeHttp over a map of objects by path: GET, and server-side apply (PATCH) that records the call. */
function fakeKube(objects: Map<string, KubernetesObject>) {
  const patched: string[] = [];
  const kube: KubeHttp = {
    async request<T>(method: string, path: string, options?: RequestOptions): Promise<T> {
      if (method === 'GET') {
        const o = objects.get(path);
        if (o === undefined) throw new KubeApiError(404, undefined, {}, `GET ${path}`);
        return o as T;
      }
      if (method === 'PATCH') {
        patched.push(path);
        objects.set(path, options?.body as KubernetesObject);
        return options?.body as T;
      }
      throw new Error(`unexpected ${method} ${path}`);
    },
    watch: () => {
      throw new Error('no watch');
    },
  };
  return { kube, patched };
}

const stackA = 'arn:aws:cloudformation:eu-west-1:123456789012:stack/gnt-a/11111111-1111-1111-1111-111111111111';
const stackB = 'arn:aws:cloudformation:eu-west-1:123456789012:stack/gnt-b/22222222-2222-2222-2222-222222222222';
const clusterRolePath = (name: string) => `/apis/rbac.authorization.k8s.io/v1/clusterroles/${name}`;
const bindingPath = (name: string) => `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${name}`;

// From the second adversarial review (raised, kept as designed; was test/unit/review/attacks-2.test.ts).
describe('the installer and objects of another deployment', () => {
  // Raised (low): the ownership check recognises only annotated objects, so a new stack given
  // the deploymentName of a running 0.1 deployment (which wrote no annotation) takes its objects
  // over. Kept as designed: an object of our name without an owner is ours to take, as a Delete
  // takes it (the shipped manifest applied by hand, this deployment before owners); refusing it
  // would fail every such upgrade. Two deployments need different names (docs/limits.md).
  it('adopts an unannotated object of its own name, writing its owner on it, and refuses an annotated one of another stack', async () => {
    const name = 'shared-name';
    const earlier: KubernetesObject = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name, labels: { 'app.kubernetes.io/instance': name } },
    };
    const adopted = fakeKube(new Map([[clusterRolePath(name), earlier]]));
    await applyRbac(adopted.kube, { name, group: name, deadlinePolicy: 'force', owner: `${stackB}/Rbac` });
    expect(adopted.patched).toContain(clusterRolePath(name));
    const theirs: KubernetesObject = {
      ...earlier,
      metadata: { ...earlier.metadata, annotations: { [ownerAnnotation]: `${stackA}/Rbac` } },
    };
    const refused = fakeKube(new Map([[clusterRolePath(name), theirs]]));
    await expect(
      applyRbac(refused.kube, { name, group: name, deadlinePolicy: 'force', owner: `${stackB}/Rbac` }),
    ).rejects.toBeInstanceOf(ConfigError);
    expect(refused.patched).toEqual([]);
  });
});

// From the second adversarial review (it held; was test/unit/review/attacks-2.test.ts).
describe('the installer and objects another stack owns', () => {
  it("the installer refuses another stack's annotated objects at once: a ConfigError, nothing patched", async () => {
    const name = 'shared-name';
    const theirs: KubernetesObject = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name, labels: {}, annotations: { [ownerAnnotation]: `${stackA}/Rbac` } },
    };
    const { kube, patched } = fakeKube(new Map([[clusterRolePath(name), theirs]]));
    await expect(
      applyRbac(kube, { name, group: name, deadlinePolicy: 'force', owner: `${stackB}/Rbac` }),
    ).rejects.toBeInstanceOf(ConfigError);
    expect(patched).toEqual([]);
    // The same stack, another logical id (the resource replaced): still its own.
    const own = fakeKube(new Map([[clusterRolePath(name), theirs]]));
    await applyRbac(own.kube, { name, group: name, deadlinePolicy: 'force', owner: `${stackA}/RbacV2` });
    expect(own.patched).toContain(bindingPath(name));
  });
});
