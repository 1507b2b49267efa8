// After the drain: the waits for the load balancers and the volumes, what follows an undrained
// release, and surge before evict.
import { Duration } from 'aws-cdk-lib';
import { configVariables as v } from '../../lambda/shared/config.js';
import { flag, list, secondsOf, text } from './kinds.js';
import { option, type OptionGroup } from './option.js';

const seconds = (d: number): Duration => Duration.seconds(d);
const surgeOn = { option: 'SurgeBeforeEvict', value: 'true' } as const;

export const settleOptions: OptionGroup = {
  label: 'After the drain',
  options: [
    option({
      name: 'WaitForTargets',
      label: 'Wait for the load balancers',
      description:
        "After the drain, wait until the cluster's load balancers let the instance go (true), " +
        'or LoadBalancerDelaySeconds (false).',
      kind: flag(v.waitForTargets.default!),
      props: (waitForTargets) => ({ waitForTargets }),
    }),
    option({
      name: 'LoadBalancerMinWaitSeconds',
      label: 'Shortest load-balancer wait (seconds)',
      description: 'With WaitForTargets: the shortest wait after the drain. At most LoadBalancerMaxWaitSeconds.',
      kind: secondsOf(v.loadBalancerMinWaitSeconds),
      props: (d) => ({ loadBalancerMinWait: seconds(d) }),
    }),
    option({
      name: 'LoadBalancerMaxWaitSeconds',
      label: 'Longest load-balancer wait (seconds)',
      description: 'With WaitForTargets: the longest wait after the drain for the load balancers.',
      kind: secondsOf(v.loadBalancerMaxWaitSeconds),
      props: (d) => ({ loadBalancerMaxWait: seconds(d) }),
    }),
    option({
      name: 'LoadBalancerDelaySeconds',
      label: 'Fixed load-balancer wait (seconds)',
      description: 'Fixed wait after the drain when WaitForTargets is false or the load balancers cannot be read.',
      kind: secondsOf(v.loadBalancerDelaySeconds),
      props: (d) => ({ loadBalancerDelay: seconds(d) }),
    }),
    option({
      name: 'LoadBalancerTags',
      label: 'More load-balancer tags',
      description:
        'key=value or key, comma-separated: also scan the account for target groups and Classic Load Balancers ' +
        'with these tags (load balancers the cluster does not name). Empty: no account-wide scan.',
      kind: text({
        accepts: v.loadBalancerTags.accepts,
        default: '',
        check: (t) => v.loadBalancerTags.parse(t) !== undefined,
      }),
      // A key alone matches any value: the prop says so with an empty value.
      props: (t) => ({
        loadBalancerTags: Object.fromEntries(
          [...v.loadBalancerTags.parse(t)!].map(([key, value]) => [key, value ?? '']),
        ),
      }),
    }),
    option({
      name: 'WaitForVolumeDetach',
      label: 'Wait for volumes to detach',
      description:
        "Release the instance only once its departed pods' volumes are detached (within the drain deadline).",
      kind: flag(v.waitForVolumeDetach.default!),
      props: (waitForVolumeDetach) => ({ waitForVolumeDetach }),
    }),
    option({
      name: 'OutOfServiceAfterRelease',
      label: 'Out-of-service after an undrained release',
      description:
        'Taint a node out-of-service once EC2 says its instance is terminated, when our drain released it with pods ' +
        'still on it (an EventBridge rule for terminated instances).',
      kind: flag(v.outOfServiceAfterRelease.default!),
      props: (outOfServiceAfterRelease) => ({ outOfServiceAfterRelease }),
    }),
  ],
};

export const surgeOptions: OptionGroup = {
  label: 'Surge before evict',
  options: [
    option({
      name: 'SurgeBeforeEvict',
      label: 'Surge before evict',
      description:
        'Restart a Deployment before evicting its last Ready pod off the leaving nodes (opt-in per workload or with ' +
        'SurgeNamespaces and SurgePodSelector); grants patch on Deployments, fenced by an admission policy ' +
        '(docs/surge.md).',
      kind: flag(false),
      props: (on) => (on ? { surgeBeforeEvict: {} } : {}),
    }),
    option({
      name: 'SurgeNamespaces',
      label: 'Surge: namespaces',
      description: 'With SurgeBeforeEvict: the Deployments of these namespaces surge without an annotation.',
      kind: list({ accepts: 'namespaces, comma-separated' }),
      needs: surgeOn,
      props: (namespaces) => ({ surgeBeforeEvict: { namespaces } }),
    }),
    option({
      name: 'SurgePodSelector',
      label: 'Surge: pod selector',
      description: "With SurgeBeforeEvict: the Deployments whose pod template's labels this selector matches surge.",
      kind: text({
        accepts: v.surgePodSelector.accepts,
        default: '',
        check: (t) => v.surgePodSelector.parse(t) !== undefined,
      }),
      needs: surgeOn,
      props: (podSelector) => ({ surgeBeforeEvict: { podSelector } }),
    }),
    option({
      name: 'SurgeTimeoutSeconds',
      label: 'Surge: timeout (seconds)',
      description:
        "How long one pod waits for its Deployment's replacement to be Ready; then it is evicted as any other.",
      kind: secondsOf(v.surgeTimeoutSeconds),
      needs: surgeOn,
      props: (d) => ({ surgeBeforeEvict: { timeout: seconds(d) } }),
    }),
    option({
      name: 'SurgeUntouchableManagers',
      label: 'Surge: untouchable field managers',
      description: 'With SurgeBeforeEvict: Deployments written by these field managers are never restarted.',
      kind: list({ accepts: 'field manager names, comma-separated, each optionally /subresource' }),
      needs: surgeOn,
      props: (untouchableManagers) => ({ surgeBeforeEvict: { untouchableManagers } }),
    }),
  ],
};
