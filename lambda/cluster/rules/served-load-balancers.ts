// Which load balancers can hold this cluster's instances, as the cluster itself says: the AWS
// Load Balancer Controller serves exactly the target groups of its TargetGroupBindings (it
// makes one for each Service and Ingress it manages, and users bind target groups made
// elsewhere, Terraform say, with their own), and the in-tree service controller names the load
// balancer of a Service of type LoadBalancer after the Service's UID. No account-wide scan: the
// answer is the cluster's, whatever else the account holds.
//   https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/targetgroupbinding/
//   https://github.com/kubernetes/cloud-provider/blob/v0.34.4/cloud.go (DefaultLoadBalancerName)
import { matchesSelector, selectorOperators, type LabelSelector } from '../../shared/label-selector.js';
import { type ServedLoadBalancers, type ServedTargetGroup } from '../../shared/served-load-balancers.js';
import { excludeFromLoadBalancersLabel } from '../marks/mark-keys.js';

/**
 * The name the in-tree cloud provider gives a Service's load balancer: "a" + its UID without dashes, 32 characters at
 * most.
 */
export function inTreeLoadBalancerName(serviceUid: string): string {
  return `a${serviceUid}`.replaceAll('-', '').slice(0, 32);
}

export interface ServiceView {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly type: string | undefined;
  readonly loadBalancerClass: string | undefined;
  readonly annotations: Readonly<Record<string, string>>;
  /** port (number or name) -> nodePort. */
  readonly nodePorts: readonly {
    readonly port: number;
    readonly name: string | undefined;
    readonly nodePort: number | undefined;
  }[];
}

export interface BindingView {
  readonly targetGroupArn: string | undefined;
  readonly targetType: string | undefined;
  readonly service:
    { readonly namespace: string; readonly name: string; readonly port: number | string | undefined } | undefined;
  /** spec.nodeSelector: the controller registers only the nodes it selects (undefined: every node). */
  readonly nodeSelector?: LabelSelector | undefined;
}

const typeAnnotation = 'service.beta.kubernetes.io/aws-load-balancer-type';
/** The AWS Load Balancer Controller's: it makes TargetGroupBindings for these. */
const lbcTypes = new Set(['external', 'nlb-ip']);

/** Services the in-tree controller serves: type LoadBalancer, no class, not the AWS Load Balancer Controller's. */
function inTree(s: ServiceView): 'classic' | 'network' | undefined {
  if (s.type !== 'LoadBalancer' || s.loadBalancerClass !== undefined) return undefined;
  const type = s.annotations[typeAnnotation];
  if (type !== undefined && lbcTypes.has(type)) return undefined;
  return type === 'nlb' ? 'network' : 'classic';
}

/** The cluster's answer from its bindings and Services. */
export function servedBy(bindings: readonly BindingView[], services: readonly ServiceView[]): ServedLoadBalancers {
  const byKey = new Map(services.map((s) => [`${s.namespace}/${s.name}`, s]));
  const targetGroups = new Map<string, ServedTargetGroup>();
  for (const b of bindings) {
    if (b.targetGroupArn === undefined || b.targetType === 'ip') continue;
    const svc = b.service !== undefined ? byKey.get(`${b.service.namespace}/${b.service.name}`) : undefined;
    const port = svc?.nodePorts.find(
      (p) => p.port === b.service?.port || (p.name !== undefined && p.name === b.service?.port),
    )?.nodePort;
    // Two bindings of one group on different ports: every target is read.
    const known = targetGroups.get(b.targetGroupArn);
    const selector = usableSelector(b.nodeSelector);
    // A binding of every node makes the group every node's; else the group is of the nodes any of its bindings select.
    const nodeSelectors =
      selector === undefined || (known !== undefined && known.nodeSelectors === undefined)
        ? undefined
        : [...(known?.nodeSelectors ?? []), selector];
    targetGroups.set(b.targetGroupArn, {
      arn: b.targetGroupArn,
      port: known !== undefined && known.port !== port ? undefined : port,
      ...(nodeSelectors !== undefined ? { nodeSelectors } : {}),
    });
  }
  const classicNames: string[] = [];
  const networkNames: string[] = [];
  for (const s of services) {
    const kind = inTree(s);
    if (kind === 'classic') classicNames.push(inTreeLoadBalancerName(s.uid));
    if (kind === 'network') networkNames.push(inTreeLoadBalancerName(s.uid));
  }
  return { targetGroups: [...targetGroups.values()], classicNames, networkNames };
}

/** A selector we can read as the controller does; anything else (an operator we do not know) counts as every node. */
function usableSelector(selector: LabelSelector | undefined): LabelSelector | undefined {
  if (selector === undefined || selector === null) return undefined;
  const known = (selector.matchExpressions ?? []).every((e) => selectorOperators.includes(e.operator));
  const empty = Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
  return known && !empty ? selector : undefined;
}

/**
 * What can hold this node's instance: a target group whose bindings select other nodes does not (the AWS Load Balancer
 * Controller registers, for instance targets, only the nodes a binding's nodeSelector selects), so a termination
 * neither waits on it nor asks the shared reader to read it: behind 60 groups of which a node is in 6, a lone
 * termination wanted and read all 60 (issue 40). The node's labels as they were before our marks: a selector on the
 * exclusion label itself is judged on the value the node had.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/spec/
 */
export function servedForNode(
  served: ServedLoadBalancers,
  labels: Readonly<Record<string, string>>,
  ours: { readonly setExclusion: boolean; readonly priorExclusion: string | undefined },
): ServedLoadBalancers {
  const before: Record<string, string> = { ...labels };
  if (ours.setExclusion) delete before[excludeFromLoadBalancersLabel];
  if (ours.setExclusion && ours.priorExclusion !== undefined)
    before[excludeFromLoadBalancersLabel] = ours.priorExclusion;
  const targetGroups = served.targetGroups.filter(
    (g) => g.nodeSelectors === undefined || g.nodeSelectors.some((s) => matchesSelector(s, before)),
  );
  return { ...served, targetGroups };
}
