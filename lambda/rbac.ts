// The Kubernetes RBAC the drainer needs, defined once. infra/kubernetes/rbac.yaml is
// rendered from this (scripts/write-rbac-yaml.ts; a unit test keeps it current), the cluster
// suite binds exactly that file, and the RBAC installer applies these same objects.

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
    verbs: ['get', 'list', 'patch'],
    why: 'Find the node by spec.providerID (list), label and cordon it (patch), hand a long drain on (get, patch of an annotation).',
  },
  {
    apiGroups: [''],
    resources: ['pods'],
    verbs: ['list', 'watch', 'delete'],
    why: 'List and watch the pods bound to the draining node; delete only at the drain deadline with DEADLINE_POLICY=force.',
  },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'], why: 'Evict through the eviction API so PodDisruptionBudgets hold.' },
  { apiGroups: [''], resources: ['events'], verbs: ['create'], why: 'Tell the story in `kubectl describe node` and `kubectl get events`.' },
];

/**
 * The rules for a deadline policy: `pods delete` is only for `force` (deleting at the
 * deadline); with any other policy the drainer never deletes and is not allowed to.
 */
export function rbacRulesFor(deadlinePolicy: string = 'force'): readonly RbacRule[] {
  if (deadlinePolicy === 'force') return rbacRules;
  return rbacRules.map((r) =>
    r.resources.includes('pods') ? { ...r, verbs: r.verbs.filter((v) => v !== 'delete'), why: 'List and watch the pods bound to the draining node (no delete: the deadline policy never deletes).' } : r,
  );
}

const labelsFor = (name: string) => ({ 'app.kubernetes.io/name': rbacName, 'app.kubernetes.io/instance': name, 'app.kubernetes.io/managed-by': rbacName });

export interface KubernetesObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels: Readonly<Record<string, string>> };
  readonly [field: string]: unknown;
}

/** The ClusterRole and its binding to `group`, the Kubernetes group the Lambda role maps to. */
export function rbacObjects(group: string = rbacName, deadlinePolicy: string = 'force', name: string = rbacName): readonly [KubernetesObject, KubernetesObject] {
  const labels = labelsFor(name);
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name, labels },
      rules: rbacRulesFor(deadlinePolicy).map(({ apiGroups, resources, verbs }) => ({ apiGroups, resources, verbs })),
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
    },
  ];
}

/** rbac.yaml, rendered for people who apply it with kubectl (aws-auth clusters). */
export function renderRbacYaml(group: string = rbacName, deadlinePolicy: string = 'force', name: string = rbacName): string {
  const [role, binding] = rbacObjects(group, deadlinePolicy, name);
  const labels = labelsFor(name);
  const q = (s: string) => JSON.stringify(s);
  const list = (xs: readonly string[]) => `[${xs.map(q).join(', ')}]`;
  const meta = (name: string) => [`metadata:`, `  name: ${name}`, `  labels:`, ...Object.entries(labels).map(([k, v]) => `    ${k}: ${v}`)];
  return [
    '# Least-privilege RBAC for the drainer. Generated from lambda/rbac.ts by',
    '# `npx tsx scripts/write-rbac-yaml.ts`; do not edit by hand.',
    '# The Lambda role is mapped (EKS access entry or aws-auth) to the Kubernetes group',
    `# "${group}"; this ClusterRole is all that group may do. The cluster test suite`,
    '# binds exactly this file, so a missing verb fails it.',
    `apiVersion: ${role.apiVersion}`,
    `kind: ${role.kind}`,
    ...meta(role.metadata.name),
    'rules:',
    ...rbacRulesFor(deadlinePolicy).flatMap((r) => [
      `  # ${r.why}`,
      `  - apiGroups: ${list(r.apiGroups)}`,
      `    resources: ${list(r.resources)}`,
      `    verbs: ${list(r.verbs)}`,
    ]),
    '---',
    `apiVersion: ${binding.apiVersion}`,
    `kind: ${binding.kind}`,
    ...meta(binding.metadata.name),
    'roleRef:',
    '  apiGroup: rbac.authorization.k8s.io',
    '  kind: ClusterRole',
    `  name: ${name}`,
    'subjects:',
    '  - apiGroup: rbac.authorization.k8s.io',
    '    kind: Group',
    `    name: ${group}`,
    '',
  ].join('\n');
}
