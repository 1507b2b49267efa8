// The settle phase's properties: what the drainer waits for after the drain before it lets the
// instance go (the load balancers, the volumes; docs/how-it-works.md, "The settle phase").
import type { Duration } from 'aws-cdk-lib';

export interface SettleProps {
  /**
   * Wait after the drain so load balancers deregister the node. EKS waits 60 seconds.
   * @default Duration.seconds(60)
   */
  readonly loadBalancerDelay?: Duration;
  /**
   * Release the instance when the load balancers really let it go: after the drain, read the
   * ELBv2 instance target groups and Classic Load Balancers tagged for the cluster (by the AWS
   * Load Balancer Controller or the in-tree service controller, or with `loadBalancerTags`) and
   * wait until none still has the instance registered or draining, between `loadBalancerMinWait`
   * and `loadBalancerMaxWait`. Grants the elasticloadbalancing Describe actions. When false, or
   * when they cannot be read, `loadBalancerDelay` applies.
   * @default true
   */
  readonly waitForTargets?: boolean;
  /**
   * With `waitForTargets`: the shortest wait after the drain, for the controllers to react.
   * @default Duration.seconds(5)
   */
  readonly loadBalancerMinWait?: Duration;
  /**
   * With `waitForTargets`: the longest wait after the drain for the load balancers to let the
   * instance go (ELBv2's default deregistration delay is 300 s).
   * @default Duration.seconds(300)
   */
  readonly loadBalancerMaxWait?: Duration;
  /**
   * More tags that make a target group or Classic Load Balancer the cluster's; an empty value
   * matches any value.
   * @default - only elbv2.k8s.aws/cluster=<clusterName> and kubernetes.io/cluster/<clusterName>
   */
  readonly loadBalancerTags?: Record<string, string>;
  /**
   * Release the instance only once the volumes of the pods that left it are detached (their
   * VolumeAttachments gone), within the drain deadline, so their replacements attach them
   * elsewhere at once.
   * @default true
   */
  readonly waitForVolumeDetach?: boolean;
}
