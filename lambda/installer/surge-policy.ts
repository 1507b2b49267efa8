// Surge before evict's rights, and the fence around them. RBAC cannot say "patch only this
// annotation", so the drainer's `patch` on Deployments comes with a ValidatingAdmissionPolicy
// (GA since Kubernetes 1.30) that denies its group any update of a Deployment that changes
// anything but spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"].
// https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/

export const restartAnnotation = 'kubectl.kubernetes.io/restartedAt';

export const surgeRbacRule = {
  apiGroups: ['apps'],
  resources: ['deployments'],
  verbs: ['get', 'patch'],
  why:
    "Surge before evict (SURGE_BEFORE_EVICT only): read the draining pod's Deployment and restart it as `kubectl " +
    'rollout restart` does; a ValidatingAdmissionPolicy denies any other change.',
} as const;

/** Equal before and after, absent on both sides included (CEL optional fields). */
const same = (path: string) => `object.${path} == oldObject.${path}`;

/**
 * Each validation names what it guards. The spec's fields outside the template are listed one by
 * one (a typed object cannot be iterated in CEL); `?.` compares a field absent on both sides.
 */
const validations = [
  {
    what: 'the pod template spec',
    expression: same('spec.template.spec'),
  },
  {
    what: "the pod template's labels and other metadata",
    expression: [
      same('spec.template.metadata.?labels'),
      same('spec.template.metadata.?finalizers'),
      same('spec.template.metadata.?name'),
    ].join(' && '),
  },
  {
    what: "the pod template's annotations other than the restart annotation",
    expression:
      'variables.after.all(k, k == variables.restart || (k in variables.before && variables.before[k] == ' +
      'variables.after[k])) && variables.before.all(k, k == variables.restart || k in variables.after)',
  },
  {
    what: 'the Deployment spec outside the pod template',
    expression: [
      'spec.replicas',
      'spec.selector',
      'spec.?strategy',
      'spec.?minReadySeconds',
      'spec.?revisionHistoryLimit',
      'spec.?paused',
      'spec.?progressDeadlineSeconds',
    ]
      .map(same)
      .join(' && '),
  },
  {
    what: "the Deployment's labels, annotations, finalizers and owners",
    expression: ['metadata.?labels', 'metadata.?annotations', 'metadata.?finalizers', 'metadata.?ownerReferences']
      .map(same)
      .join(' && '),
  },
];

/** The policy and its binding for the drainer's group, with the metadata the installer gives its objects. */
export function surgePolicyObjects(
  group: string,
  metadata: { readonly name: string } & Record<string, unknown>,
): readonly Record<string, unknown>[] {
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata,
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['deployments'] },
          ],
        },
        matchConditions: [
          { name: 'the-drainer', expression: `request.userInfo.groups.exists(g, g == ${JSON.stringify(group)})` },
        ],
        variables: [
          { name: 'restart', expression: JSON.stringify(restartAnnotation) },
          { name: 'after', expression: 'object.spec.template.metadata.?annotations.orValue({})' },
          { name: 'before', expression: 'oldObject.spec.template.metadata.?annotations.orValue({})' },
        ],
        validations: validations.map((v) => ({
          expression: v.expression,
          message:
            `${group} may change only the restart annotation (${restartAnnotation}) of a Deployment's pod template, ` +
            `not ${v.what}`,
          reason: 'Forbidden',
        })),
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata,
      spec: { policyName: metadata.name, validationActions: ['Deny'] },
    },
  ];
}
