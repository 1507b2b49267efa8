// Graceful termination for the node groups of aws-cdk-lib's eks.Cluster without a line per
// group: an Aspect that finds the Auto Scaling groups each cluster got from
// addAutoScalingGroupCapacity or connectAutoScalingGroupCapacity, serves them with one
// GracefulNodeTermination per cluster, and takes away the Spot handler aws-cdk-lib installed for
// them, so no Spot node is drained by two handlers.
//
// How the groups are found: connectAutoScalingGroupCapacity tags every group it connects
// `kubernetes.io/cluster/<clusterName>=owned` (Tags.of(group).add, an aspect on the group), and
// for a group with a spotPrice it installs aws-node-termination-handler 0.27 (the Helm chart
// `chart-spot-interrupt-handler` under the cluster, in IMDS mode on the nodes labelled
// lifecycle=Ec2Spot) unless told `spotInterruptHandler: false`.
// https://github.com/aws/aws-cdk/blob/main/packages/aws-cdk-lib/aws-eks/lib/cluster.ts
import { Annotations, Aspects, Tag, aws_autoscaling as autoscaling, aws_eks as eks, type IAspect } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { GracefulNodeTermination } from './graceful-node-termination.js';
import type { GracefulNodeTerminationProps } from './props.js';
import { mapThroughAwsAuth } from './aws-auth-access.js';

/**
 * The id aws-cdk-lib gives its Spot handler's Helm chart under the cluster (addHelmChart('spot-interrupt-handler')).
 */
export const spotHandlerChartId = 'chart-spot-interrupt-handler';

/** What the aspect decides for itself: passing one of these is refused. */
const foundByTheAspect = ['cluster', 'clusterName', 'autoScalingGroupNames', 'autoScalingGroups'] as const;

/**
 * Serves every Auto Scaling group an `eks.Cluster` got from `addAutoScalingGroupCapacity` or
 * `connectAutoScalingGroupCapacity`, with one GracefulNodeTermination per cluster (beside the
 * cluster, id `<cluster id>GracefulNodeTermination`), in every cluster below where it is added:
 * `Aspects.of(app).add(new GracefulNodeTerminationAspect({ alarmEmail: '...' }))`.
 *
 * Groups a GracefulNodeTermination of the app serves already are left to it. With Spot groups
 * the construct drains Spot interruption warnings (`spotInterruptions`) and aws-cdk-lib's own
 * Spot handler (aws-node-termination-handler, installed by the cluster for Spot capacity) is
 * removed, unless a Spot group is served by another construct: then it stays, with a warning.
 * On an aws-auth cluster (the cluster's default authentication mode, CONFIG_MAP) the drainer's
 * role is mapped in the cluster's aws-auth ConfigMap and its RBAC applied through the cluster's
 * own kubectl provider; on API and API_AND_CONFIG_MAP clusters through access entries.
 */
export class GracefulNodeTerminationAspect implements IAspect {
  private readonly props: GracefulNodeTerminationProps;
  private visited = false;

  /** @param props every setting of the constructs it makes, but the cluster and the groups, which it finds. */
  constructor(props: GracefulNodeTerminationProps = {}) {
    const given = foundByTheAspect.filter((key) => props[key] !== undefined);
    if (given.length > 0) {
      throw new Error(
        `GracefulNodeTerminationAspect finds the cluster and its groups itself: leave out ${given.join(', ')}, ` +
          'or use the GracefulNodeTermination construct for groups it should not find',
      );
    }
    this.props = props;
  }

  /** Does all its work on the first node it visits: the one it was added to, before any below it. */
  visit(node: IConstruct): void {
    if (this.visited) return;
    this.visited = true;
    const everything = node.node.root.node.findAll();
    const served = new Set(
      everything.filter((c) => c instanceof GracefulNodeTermination).flatMap((g) => g.autoScalingGroupNames),
    );
    const groups = everything.filter(
      (c): c is autoscaling.AutoScalingGroup => c instanceof autoscaling.AutoScalingGroup,
    );
    for (const cluster of node.node.findAll().filter((c): c is eks.Cluster => c instanceof eks.Cluster)) {
      const own = groups.filter((g) => isCapacityOf(g, cluster));
      const mine = own.filter((g) => !served.has(g.autoScalingGroupName));
      if (mine.length > 0) this.serve(cluster, mine, own);
    }
  }

  private serve(
    cluster: eks.Cluster,
    groups: autoscaling.AutoScalingGroup[],
    all: autoscaling.AutoScalingGroup[],
  ): void {
    const spot = groups.some((g) => g.spotPrice !== undefined);
    if (spot && this.props.spotInterruptions === false) {
      throw new Error(
        `GracefulNodeTerminationAspect: cluster ${cluster.node.path} has Spot groups, whose interruption warnings ` +
          "it drains in place of aws-cdk-lib's handler: leave out spotInterruptions: false",
      );
    }
    const viaAwsAuth = this.props.manageKubernetesAccess === undefined && !managesAccessEntries(cluster);
    const scope = cluster.node.scope!;
    const gnt = new GracefulNodeTermination(scope, `${cluster.node.id}GracefulNodeTermination`, {
      ...this.props,
      cluster,
      autoScalingGroups: groups,
      ...(spot ? { spotInterruptions: true } : {}),
      ...(viaAwsAuth ? { manageKubernetesAccess: false } : {}),
    });
    if (viaAwsAuth) mapThroughAwsAuth(cluster, gnt, this.props);
    this.removeSpotHandler(
      cluster,
      all.filter((g) => g.spotPrice !== undefined && !groups.includes(g)),
    );
  }

  /** aws-cdk-lib's handler goes when every Spot group of the cluster is ours to drain. */
  private removeSpotHandler(cluster: eks.Cluster, spotGroupsOfOthers: autoscaling.AutoScalingGroup[]): void {
    if (cluster.node.tryFindChild(spotHandlerChartId) === undefined) return;
    if (spotGroupsOfOthers.length > 0) {
      Annotations.of(cluster).addWarningV2(
        'graceful-node-termination:spot-handler-kept',
        `aws-node-termination-handler stays for Spot groups another GracefulNodeTermination serves ` +
          `(${spotGroupsOfOthers.map((g) => g.node.path).join(', ')}): give them spotInterruptHandler: false ` +
          'and their construct spotInterruptions: true, or Spot warnings are drained twice',
      );
      return;
    }
    cluster.node.tryRemoveChild(spotHandlerChartId);
    Annotations.of(cluster).addInfo(
      "aws-node-termination-handler (aws-cdk-lib's Spot handler) removed: GracefulNodeTermination drains the Spot " +
        'groups on their interruption warnings and lifecycle hooks',
    );
  }
}

/** connectAutoScalingGroupCapacity's mark: the tag `kubernetes.io/cluster/<clusterName>=owned` on the group. */
function isCapacityOf(group: autoscaling.AutoScalingGroup, cluster: eks.Cluster): boolean {
  const key = `kubernetes.io/cluster/${cluster.clusterName}`;
  return Aspects.of(group).all.some((a) => a instanceof Tag && a.key === key && a.value === 'owned');
}

/** Access entries need the API in the cluster's authentication mode (aws-cdk-lib's default is CONFIG_MAP). */
function managesAccessEntries(cluster: eks.Cluster): boolean {
  const mode = cluster.authenticationMode;
  return mode === eks.AuthenticationMode.API || mode === eks.AuthenticationMode.API_AND_CONFIG_MAP;
}
