// The Kubernetes RBAC the drainer needs, defined once. infra/kubernetes/rbac.yaml is
// rendered from this (scripts/write-rbac-yaml.ts; a unit test keeps it current), the cluster
// suite binds exactly that file, and the RBAC installer applies these same objects.
import { surgePolicyObjects, surgeRbacRule } from './surge-policy.js';

/**
 * The product's name, and the ClusterRole, ClusterRoleBinding and Kubernetes group of the
 * shipped rbac.yaml. A deployment by the construct uses its own name (deploymentName), so two
 * deployments on one cluster never share or delete each other's objects.
 */
export const rbacName = 'graceful-node-termination';

/** A deployment name: a DNS label, as Kubernetes object names and hook names allow. */
export const deploymentNamePattern = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export interface RbacRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  /** Why the drainer needs it; rendered as a comment in rbac.yaml. */
  readonly why: string;
}

/** Every verb here is used by lambda/adapters/kubernetes.ts; nothing more (the force policy's). */
export const rbacRules: readonly RbacRule[] = [
  {
    apiGroups: [''],
    resources: ['nodes'],
    verbs: ['get', 'list', 'watch', 'patch'],
    why:
      'Read the node under its EC2 name (get; list by spec.providerID only when the name does not lead to it), ' +
      'follow a launching node (watch), label and cordon it and its terminating siblings (patch), hand a long drain ' +
      'on (annotation).',
  },
  {
    apiGroups: [''],
    resources: ['nodes/status'],
    verbs: ['patch'],
    why:
      'Publish the node lifecycle conditions (MaintenancePlanned, DrainInProgress, Drained; KEP-5683) on the nodes ' +
      "it acts on, and take its own back: status.conditions is the status subresource's.",
  },
  {
    apiGroups: [''],
    resources: ['pods'],
    verbs: ['list', 'watch', 'delete'],
    why:
      'List and watch the pods bound to the draining node; delete only at the drain deadline with ' +
      'DEADLINE_POLICY=force.',
  },
  {
    apiGroups: [''],
    resources: ['pods/eviction'],
    verbs: ['create'],
    why: 'Evict through the eviction API so PodDisruptionBudgets hold.',
  },
  {
    apiGroups: ['storage.k8s.io'],
    resources: ['volumeattachments'],
    verbs: ['get', 'list', 'watch'],
    why:
      'Release the instance only once the volumes of the pods that left it are detached (WAIT_FOR_VOLUME_DETACH): ' +
      "each of the node's CSI attachments by name (get); a volume that is not CSI has no name to read, and no field " +
      'selector exists for a node, so then list and watch.',
  },
  {
    apiGroups: [''],
    resources: ['persistentvolumes'],
    verbs: ['get'],
    why:
      "Tell whose claim an attached volume serves: one still used by a pod on the node (a DaemonSet's) does not " +
      'hold the release.',
  },
  {
    apiGroups: [''],
    resources: ['events'],
    verbs: ['create'],
    why: 'Tell the story in `kubectl describe node` and `kubectl get events`.',
  },
  {
    apiGroups: ['policy'],
    resources: ['poddisruptionbudgets'],
    verbs: ['list', 'watch'],
    why:
      'Observe mode (MODE=observe): say which budget would hold each eviction up, without evicting (the analysis ' +
      '`check` runs); the termination policy: which candidate a budget would hold up; a drain: wait on the budget ' +
      "that refused an eviction (a watch of its namespace's budgets) until it allows a disruption, instead of asking " +
      'again.',
  },
  {
    apiGroups: ['apps'],
    resources: ['replicasets', 'statefulsets'],
    verbs: ['get'],
    why:
      'The termination policy: whether a candidate node holds every ready replica of a workload ' +
      "(status.readyReplicas of the pods' own controllers, read by name).",
  },
  {
    apiGroups: ['elbv2.k8s.aws'],
    resources: ['targetgroupbindings'],
    verbs: ['list'],
    why:
      'Which target groups can hold the instance (WAIT_FOR_TARGETS): the AWS Load Balancer Controller serves ' +
      'exactly those of its TargetGroupBindings, its own and those bound to target groups made elsewhere.',
  },
  {
    apiGroups: [''],
    resources: ['services'],
    verbs: ['list'],
    why:
      "The same: the NodePort a TargetGroupBinding's instances are registered on, and the load balancers the " +
      'in-tree service controller made for Services of type LoadBalancer (named after their UIDs).',
  },
];

/**
 * The rules for a deadline policy: `pods delete` is only for `force` (deleting at the
 * deadline); with any other policy the drainer never deletes and is not allowed to.
 */
export function rbacRulesFor(deadlinePolicy: string = 'force', surge = false): readonly RbacRule[] {
  const rules = surge ? [...rbacRules, surgeRbacRule] : rbacRules;
  if (deadlinePolicy === 'force') return rules;
  return rules.map((r) =>
    r.resources.includes('pods')
      ? {
          ...r,
          verbs: r.verbs.filter((v) => v !== 'delete'),
          why: 'List and watch the pods bound to the draining node (no delete: the deadline policy never deletes).',
        }
      : r,
  );
}

export const labelsFor = (name: string) => ({
  'app.kubernetes.io/name': rbacName,
  'app.kubernetes.io/instance': name,
  'app.kubernetes.io/managed-by': rbacName,
});

export interface KubernetesObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly [field: string]: unknown;
}

/**
 * On every object the installer applies: the stack and resource that own it. A Delete takes
 * away only objects that name its own stack (or, from the versions before, carry its name).
 */
export const ownerAnnotation = 'graceful-node-termination/owner';

/**
 * The ClusterRole and its binding to `group`, the Kubernetes group the Lambda role maps to.
 * While a group change is under way the binding keeps the old group too (`alsoBound`), so the
 * access entry can switch without a moment in which the drainer is bound to nothing.
 */
export function rbacObjects(
  group: string = rbacName,
  deadlinePolicy: string = 'force',
  name: string = rbacName,
  o: { readonly owner?: string; readonly alsoBound?: readonly string[]; readonly surge?: boolean } = {},
): readonly [KubernetesObject, KubernetesObject] {
  const metadata = {
    name,
    labels: labelsFor(name),
    ...(o.owner !== undefined ? { annotations: { [ownerAnnotation]: o.owner } } : {}),
  };
  const groups = [group, ...(o.alsoBound ?? []).filter((g) => g !== group)];
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata,
      rules: rbacRulesFor(deadlinePolicy, o.surge).map(({ apiGroups, resources, verbs }) => ({
        apiGroups,
        resources,
        verbs,
      })),
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: groups.map((g) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: g })),
    },
  ];
}

/** Surge before evict's ValidatingAdmissionPolicy and its binding (surge-policy.ts), named `<name>-surge`. */
export function surgeObjects(
  group: string = rbacName,
  name: string = rbacName,
  owner?: string,
): readonly KubernetesObject[] {
  const metadata = {
    name: `${name}-surge`,
    labels: labelsFor(name),
    ...(owner !== undefined ? { annotations: { [ownerAnnotation]: owner } } : {}),
  };
  return surgePolicyObjects(group, metadata) as readonly KubernetesObject[];
}
