// rbac.yaml and surge.yaml, rendered from the one RBAC definition (rbac.ts) for people who apply them
// with kubectl (aws-auth clusters); scripts/write-rbac-yaml.ts writes them, a unit test keeps them current.
import { surgeRbacRule } from './surge-policy.js';
import { yamlOf } from './yaml.js';
import { rbacName, labelsFor, surgeObjects, rbacObjects, rbacRulesFor } from './rbac.js';
import { flowControlObjects } from './flow-control.js';
import { readingObjects, readingRule } from './reading-rbac.js';

/**
 * surge.yaml: for rbac.yaml users who turn on SURGE_BEFORE_EVICT, its own ClusterRole and binding and the policy that
 * fences it.
 */
export function renderSurgeYaml(group: string = rbacName, name: string = rbacName): string {
  const metadata = { name: `${name}-surge`, labels: labelsFor(name) };
  const { apiGroups, resources, verbs } = surgeRbacRule;
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata,
    rules: [{ apiGroups, resources, verbs }],
  };
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
  return [
    ...header,
    ...[role, binding, ...surgeObjects(group, name)].flatMap((o, i) => [...(i > 0 ? ['---'] : []), ...yamlOf(o)]),
    '',
  ].join('\n');
}

/** rbac.yaml, rendered for people who apply it with kubectl (aws-auth clusters). */
export function renderRbacYaml(
  group: string = rbacName,
  deadlinePolicy: string = 'force',
  name: string = rbacName,
): string {
  const [role, binding] = rbacObjects(group, deadlinePolicy, name);
  const labels = labelsFor(name);
  const q = (s: string) => JSON.stringify(s);
  const list = (xs: readonly string[]) => `[${xs.map(q).join(', ')}]`;
  const meta = (name: string) => [
    `metadata:`,
    `  name: ${name}`,
    `  labels:`,
    ...Object.entries(labels).map(([k, v]) => `    ${k}: ${v}`),
  ];
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
    '---',
    `# ${readingRule.why}`,
    ...readingObjects(group, name).flatMap((o, i) => [...(i > 0 ? ['---'] : []), ...yamlOf(o)]),
    '---',
    "# API Priority and Fairness: the drainer's requests get a priority level of their own",
    '# (lambda/rbac.ts explains the numbers).',
    ...flowControlObjects(group, name).flatMap((o, i) => [...(i > 0 ? ['---'] : []), ...yamlOf(o)]),
    '',
  ].join('\n');
}
