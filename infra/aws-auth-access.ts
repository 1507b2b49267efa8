// The drainer's way into an aws-auth cluster of this app (an eks.Cluster in CONFIG_MAP mode, the
// aws-cdk-lib default): its role mapped to the deployment's group in the cluster's aws-auth
// ConfigMap, and the same RBAC the installer applies on access-entry clusters (ClusterRole,
// binding, flow control, surge's policy) applied through the cluster's own kubectl provider.
// Flow control is flowcontrol.apiserver.k8s.io/v1, served from Kubernetes 1.29: on an older
// cluster kubectl's apply fails the deploy (the installer's version check is not on this path).
import { aws_autoscaling as autoscaling, type aws_eks as eks } from 'aws-cdk-lib';
import { DeadlinePolicy } from '../lambda/shared/config.js';
import { installedObjects } from '../lambda/installer/installed-objects.js';
import type { GracefulNodeTermination } from './graceful-node-termination.js';
import type { GracefulNodeTerminationProps } from './props.js';

export function mapThroughAwsAuth(
  cluster: eks.Cluster,
  gnt: GracefulNodeTermination,
  props: GracefulNodeTerminationProps,
): void {
  if (props.rolePath !== undefined && props.rolePath !== '/') {
    throw new Error(
      `rolePath ${JSON.stringify(props.rolePath)} cannot be mapped in aws-auth, which matches role ARNs without ` +
        `their ` +
        `` +
        `path: leave rolePath out for cluster ${cluster.node.path}, or give it authenticationMode API_AND_CONFIG_MAP`,
    );
  }
  const group = props.kubernetesGroup ?? gnt.deploymentName;
  cluster.awsAuth.addRoleMapping(gnt.role, { username: gnt.deploymentName, groups: [group] });
  const objects = installedObjects(group, props.deadlinePolicy ?? DeadlinePolicy.FORCE, gnt.deploymentName, {
    surge: props.surgeBeforeEvict !== undefined,
  });
  const rbac = cluster.addManifest(`${gnt.node.id}Rbac`, ...objects.map((o) => ({ ...o })));
  // A termination during the first deploy must reach a drainer the cluster already admits.
  for (const hook of gnt.node.findAll().filter((c) => c instanceof autoscaling.CfnLifecycleHook)) {
    hook.node.addDependency(rbac, cluster.awsAuth);
  }
}
