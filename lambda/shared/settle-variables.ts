// The settle phase's variables (termination/settle.ts): the wait after the drain for the load balancers
// and the departed pods' volumes. Defined here, spread into the one list (config-variables.ts).
import { flag, integer, variable } from './variable.js';

const tagList = (raw: string): ReadonlyMap<string, string | undefined> | undefined => {
  const tags = new Map<string, string | undefined>();
  for (const part of raw.split(',').map((s) => s.trim())) {
    if (part === '') continue;
    const at = part.indexOf('=');
    const key = (at < 0 ? part : part.slice(0, at)).trim();
    if (key === '' || key.length > 128) return undefined;
    tags.set(key, at < 0 ? undefined : part.slice(at + 1).trim());
  }
  return tags.size > 0 ? tags : undefined;
};

export const settleVariables = {
  loadBalancerDelaySeconds: variable<number>({
    name: 'LOAD_BALANCER_DELAY_SECONDS',
    description: 'Wait after the drain so load balancers deregister the node (EKS: 60).',
    accepts: 'an integer from 0 to 3600',
    default: 60,
    parse: integer(0, 3600),
    format: String,
  }),
  waitForTargets: variable<boolean>({
    name: 'WAIT_FOR_TARGETS',
    description:
      'After the drain, read the load balancers the cluster serves (the target groups of its TargetGroupBindings, ' +
      'and the Classic and Network Load Balancers the in-tree service controller made for Services of type ' +
      'LoadBalancer) and release the instance once none still has it registered or draining, between ' +
      'LOAD_BALANCER_MIN_WAIT_SECONDS and LOAD_BALANCER_MAX_WAIT_SECONDS; one that cannot be read holds it at ' +
      'least LOAD_BALANCER_DELAY_SECONDS; false, or when none can be read: LOAD_BALANCER_DELAY_SECONDS.',
    accepts: 'true or false',
    default: true,
    parse: flag,
    format: String,
  }),
  loadBalancerMinWaitSeconds: variable<number>({
    name: 'LOAD_BALANCER_MIN_WAIT_SECONDS',
    description:
      'With WAIT_FOR_TARGETS: the shortest wait after the drain, so the controllers react to the exclusion label, ' +
      'even when no load balancer holds the instance.',
    accepts: 'an integer from 0 to 3600',
    default: 5,
    parse: integer(0, 3600),
    format: String,
  }),
  loadBalancerMaxWaitSeconds: variable<number>({
    name: 'LOAD_BALANCER_MAX_WAIT_SECONDS',
    description:
      'With WAIT_FOR_TARGETS: the longest wait after the drain for target groups and Classic Load Balancers to ' +
      "let the instance go (ELBv2's default deregistration delay is 300 s); then it is released anyway, with a " +
      'Warning Event naming what still held it.',
    accepts: 'an integer from 0 to 3600',
    default: 300,
    parse: integer(0, 3600),
    format: String,
  }),
  loadBalancerTags: variable<ReadonlyMap<string, string | undefined>>({
    name: 'LOAD_BALANCER_TAGS',
    description:
      "Opt-in: also scan the account's instance target groups and Classic Load Balancers (paged, at most 4 calls " +
      'in flight, the list kept a minute) for those tagged with these tags, elbv2.k8s.aws/cluster=<cluster> or ' +
      'kubernetes.io/cluster/<cluster>: for load balancers other tools made and the cluster does not name; a key ' +
      'alone matches any value. Unset: no account-wide scan.',
    accepts: 'a comma-separated list of key=value or key',
    parse: tagList,
    format: (v) => [...v].map(([k, value]) => (value === undefined ? k : `${k}=${value}`)).join(','),
  }),
  waitForVolumeDetach: variable<boolean>({
    name: 'WAIT_FOR_VOLUME_DETACH',
    description:
      'After the drain, wait (within the drain deadline, batch-extended when batch pods were waited for) until ' +
      "the VolumeAttachments of the volumes the node had attached are gone (read by name from the node's " +
      'status.volumesAttached; listed cluster-wide only for a volume that is not CSI), so their replacements ' +
      "attach them elsewhere at once instead of after EC2's forced detach.",
    accepts: 'true or false',
    default: true,
    parse: flag,
    format: String,
  }),
} as const;
