// The Kubernetes RBAC the drainer needs, defined once. infra/kubernetes/rbac.yaml is
// rendered from this (scripts/write-rbac-yaml.ts; a unit test keeps it current), the cluster
// suite binds exactly that file, and the RBAC installer applies these same objects.
import { surgePolicyObjects, surgeRbacRule } from './surge-policy.js';
import { yamlOf } from './yaml.js';

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
    why: 'Read the node under its EC2 name (get; list by spec.providerID only when the name does not lead to it), follow a launching node (watch), label and cordon it and its terminating siblings (patch), hand a long drain on (annotation).',
  },
  {
    apiGroups: [''],
    resources: ['nodes/status'],
    verbs: ['patch'],
    why: "Publish the node lifecycle conditions (MaintenancePlanned, DrainInProgress, Drained; KEP-5683) on the nodes it acts on, and take its own back: status.conditions is the status subresource's.",
  },
  {
    apiGroups: [''],
    resources: ['pods'],
    verbs: ['list', 'watch', 'delete'],
    why: 'List and watch the pods bound to the draining node; delete only at the drain deadline with DEADLINE_POLICY=force.',
  },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'], why: 'Evict through the eviction API so PodDisruptionBudgets hold.' },
  {
    apiGroups: ['storage.k8s.io'],
    resources: ['volumeattachments'],
    verbs: ['get', 'list', 'watch'],
    why: "Release the instance only once the volumes of the pods that left it are detached (WAIT_FOR_VOLUME_DETACH): each of the node's CSI attachments by name (get); a volume that is not CSI has no name to read, and no field selector exists for a node, so then list and watch.",
  },
  {
    apiGroups: [''],
    resources: ['persistentvolumes'],
    verbs: ['get'],
    why: "Tell whose claim an attached volume serves: one still used by a pod on the node (a DaemonSet's) does not hold the release.",
  },
  { apiGroups: [''], resources: ['events'], verbs: ['create'], why: 'Tell the story in `kubectl describe node` and `kubectl get events`.' },
  {
    apiGroups: ['policy'],
    resources: ['poddisruptionbudgets'],
    verbs: ['list'],
    why: 'Observe mode (MODE=observe): say which budget would hold each eviction up, without evicting (the analysis `check` runs); the termination policy: which candidate a budget would hold up.',
  },
  {
    apiGroups: ['apps'],
    resources: ['replicasets', 'statefulsets'],
    verbs: ['get'],
    why: "The termination policy: whether a candidate node holds every ready replica of a workload (status.readyReplicas of the pods' own controllers, read by name).",
  },
  {
    apiGroups: ['elbv2.k8s.aws'],
    resources: ['targetgroupbindings'],
    verbs: ['list'],
    why: 'Which target groups can hold the instance (WAIT_FOR_TARGETS): the AWS Load Balancer Controller serves exactly those of its TargetGroupBindings, its own and those bound to target groups made elsewhere.',
  },
  {
    apiGroups: [''],
    resources: ['services'],
    verbs: ['list'],
    why: "The same: the NodePort a TargetGroupBinding's instances are registered on, and the load balancers the in-tree service controller made for Services of type LoadBalancer (named after their UIDs).",
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
      ? { ...r, verbs: r.verbs.filter((v) => v !== 'delete'), why: 'List and watch the pods bound to the draining node (no delete: the deadline policy never deletes).' }
      : r,
  );
}

const labelsFor = (name: string) => ({ 'app.kubernetes.io/name': rbacName, 'app.kubernetes.io/instance': name, 'app.kubernetes.io/managed-by': rbacName });

export interface KubernetesObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels: Readonly<Record<string, string>>; readonly annotations?: Readonly<Record<string, string>> };
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
  const metadata = { name, labels: labelsFor(name), ...(o.owner !== undefined ? { annotations: { [ownerAnnotation]: o.owner } } : {}) };
  const groups = [group, ...(o.alsoBound ?? []).filter((g) => g !== group)];
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata,
      rules: rbacRulesFor(deadlinePolicy, o.surge).map(({ apiGroups, resources, verbs }) => ({ apiGroups, resources, verbs })),
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

/**
 * API Priority and Fairness for the drainer's group: its own priority level, so a mass
 * termination (N drains x 32 evictions in flight) queues there instead of in
 * `global-default` beside kubectl users, and is not starved by them either.
 *
 * The numbers: the built-in levels' nominalConcurrencyShares sum to 245 (system 30,
 * node-high 40, leader-election 10, workload-high 40, workload-low 100, global-default 20,
 * catch-all 5). 20 more shares give this level 20/265 = 7.5 % of the server's seats: 46 of
 * the default 600 (400 + 200 in flight; the server rounds up). They come from every level in
 * proportion: global-default goes from 49 seats to 46, workload-low from 245 to 227 (the
 * cluster suite reads apiserver_flowcontrol_nominal_limit_seats to check it). That is one
 * full drain (32 evictions, a list, a watch, Events) without queueing; ten at once queue in
 * our own 16 queues (up to 50 each) beyond what our level may borrow.
 * lendablePercent 50: we are idle nearly always, so half our seats serve others meanwhile;
 * borrowingLimitPercent 100: a burst may borrow up to as many seats again, only from what
 * other levels lend (never what they use). Precedence 1000: after the system schemas
 * (exempt 1 ... kube-system-service-accounts 900), before service-accounts (9000) and
 * global-default (9900); only our group matches it.
 * https://kubernetes.io/docs/concepts/cluster-administration/flow-control/
 */
export const flowControl = {
  nominalConcurrencyShares: 20,
  lendablePercent: 50,
  borrowingLimitPercent: 100,
  queues: 16,
  handSize: 4,
  queueLengthLimit: 50,
  matchingPrecedence: 1000,
} as const;

/** The PriorityLevelConfiguration and the FlowSchema that puts `group`'s requests in it. */
export function flowControlObjects(group: string = rbacName, name: string = rbacName, owner?: string): readonly [KubernetesObject, KubernetesObject] {
  const metadata = { name, labels: labelsFor(name), ...(owner !== undefined ? { annotations: { [ownerAnnotation]: owner } } : {}) };
  const f = flowControl;
  return [
    {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'PriorityLevelConfiguration',
      metadata,
      spec: {
        type: 'Limited',
        limited: {
          nominalConcurrencyShares: f.nominalConcurrencyShares,
          lendablePercent: f.lendablePercent,
          borrowingLimitPercent: f.borrowingLimitPercent,
          limitResponse: { type: 'Queue', queuing: { queues: f.queues, handSize: f.handSize, queueLengthLimit: f.queueLengthLimit } },
        },
      },
    },
    {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      metadata,
      spec: {
        priorityLevelConfiguration: { name },
        matchingPrecedence: f.matchingPrecedence,
        distinguisherMethod: { type: 'ByUser' },
        rules: [
          {
            subjects: [{ kind: 'Group', group: { name: group } }],
            resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }],
          },
        ],
      },
    },
  ];
}

/** Every object a deployment installs, in the order they are applied (deleted in reverse). */
export function installedObjects(
  group: string,
  deadlinePolicy: string,
  name: string,
  o: { readonly owner?: string; readonly alsoBound?: readonly string[]; readonly surge?: boolean } = {},
): readonly KubernetesObject[] {
  const surge = o.surge ? surgeObjects(group, name, o.owner) : [];
  return [...rbacObjects(group, deadlinePolicy, name, o), ...flowControlObjects(group, name, o.owner), ...surge];
}

/** Surge before evict's ValidatingAdmissionPolicy and its binding (surge-policy.ts), named `<name>-surge`. */
export function surgeObjects(group: string = rbacName, name: string = rbacName, owner?: string): readonly KubernetesObject[] {
  const metadata = { name: `${name}-surge`, labels: labelsFor(name), ...(owner !== undefined ? { annotations: { [ownerAnnotation]: owner } } : {}) };
  return surgePolicyObjects(group, metadata) as readonly KubernetesObject[];
}

/** surge.yaml: for rbac.yaml users who turn on SURGE_BEFORE_EVICT, its own ClusterRole and binding and the policy that fences it. */
export function renderSurgeYaml(group: string = rbacName, name: string = rbacName): string {
  const metadata = { name: `${name}-surge`, labels: labelsFor(name) };
  const { apiGroups, resources, verbs } = surgeRbacRule;
  const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata, rules: [{ apiGroups, resources, verbs }] };
  const subjects = [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }];
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata,
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: metadata.name },
    subjects,
  };
  const header = [
    '# Surge before evict (docs/surge.md), with SURGE_BEFORE_EVICT=true: apply beside rbac.yaml. Generated',
    '# from lambda/installer/surge-policy.ts by `npm run rbac:yaml`; do not edit by hand.',
    `# ${surgeRbacRule.why}`,
  ];
  return [...header, ...[role, binding, ...surgeObjects(group, name)].flatMap((o, i) => [...(i > 0 ? ['---'] : []), ...yamlOf(o)]), ''].join('\n');
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
    ...rbacRulesFor(deadlinePolicy).flatMap((r) => [`  # ${r.why}`, `  - apiGroups: ${list(r.apiGroups)}`, `    resources: ${list(r.resources)}`, `    verbs: ${list(r.verbs)}`]),
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
    '---',
    "# API Priority and Fairness: the drainer's requests get a priority level of their own",
    '# (lambda/rbac.ts explains the numbers).',
    ...flowControlObjects(group, name).flatMap((o, i) => [...(i > 0 ? ['---'] : []), ...yamlOf(o)]),
    '',
  ].join('\n');
}
