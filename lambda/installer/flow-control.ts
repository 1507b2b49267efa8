// API Priority and Fairness for the drainer: a priority level of its own and the FlowSchema that puts
// its group's requests in it, installed beside the RBAC.
import { rbacName, type KubernetesObject, labelsFor, ownerAnnotation } from './rbac.js';

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
export function flowControlObjects(
  group: string = rbacName,
  name: string = rbacName,
  owner?: string,
): readonly [KubernetesObject, KubernetesObject] {
  const metadata = {
    name,
    labels: labelsFor(name),
    ...(owner !== undefined ? { annotations: { [ownerAnnotation]: owner } } : {}),
  };
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
          limitResponse: {
            type: 'Queue',
            queuing: { queues: f.queues, handSize: f.handSize, queueLengthLimit: f.queueLengthLimit },
          },
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
            resourceRules: [
              { verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] },
            ],
          },
        ],
      },
    },
  ];
}
