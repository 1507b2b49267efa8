// The namespace a deployment keeps its shared load-balancer readings in (termination/shared-targets.ts),
// named as the deployment, and the Role that lets its group use Leases there and nowhere else:
// not in kube-system, where the controllers' leader-election Leases are.
import { labelsFor, ownerAnnotation, rbacName, type KubernetesObject, type RbacRule } from './rbac.js';

/** Leases in the deployment's own namespace: the shared readings and the reader's turn. */
export const readingRule: RbacRule = {
  apiGroups: ['coordination.k8s.io'],
  resources: ['leases'],
  verbs: ['list', 'watch', 'create', 'patch', 'delete'],
  why:
    "Share load-balancer readings across the wave's terminations (one Lease per target group, one for the reader's " +
    'turn): list and watch them, create and patch them, delete the ones nobody waited on for 10 minutes (reconciler).',
};

/** The Role's name (beside the ClusterRole's). */
export const readingRoleName = (name: string) => `${name}-target-readings`;

/** The Namespace (the deployment's name), the Role in it and its binding to `group` (and `alsoBound`, as rbac.ts). */
export function readingObjects(
  group: string = rbacName,
  name: string = rbacName,
  o: { readonly owner?: string | undefined; readonly alsoBound?: readonly string[] | undefined } = {},
): readonly KubernetesObject[] {
  const annotations = o.owner !== undefined ? { annotations: { [ownerAnnotation]: o.owner } } : {};
  const groups = [group, ...(o.alsoBound ?? []).filter((g) => g !== group)];
  const metadata = { name: readingRoleName(name), namespace: name, labels: labelsFor(name), ...annotations };
  const { apiGroups, resources, verbs } = readingRule;
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: labelsFor(name), ...annotations } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata, rules: [{ apiGroups, resources, verbs }] },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: metadata.name },
      subjects: groups.map((g) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: g })),
    },
  ];
}
