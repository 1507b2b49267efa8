// Where the drainer works: the cluster, its node groups, this deployment's name and how it gets
// into the cluster.
import { deploymentNamePattern, rbacName } from '../../lambda/installer/rbac.js';
import { clusterNamePattern } from '../prop-checks.js';
import { flag, list, text } from './kinds.js';
import { option, type OptionGroup } from './option.js';

export const clusterOptions: OptionGroup = {
  label: 'Cluster and node groups',
  options: [
    option({
      name: 'ClusterName',
      label: 'EKS cluster name',
      description: 'Name of the EKS cluster the node groups join (Kubernetes 1.29 or later).',
      kind: text({
        accepts: 'an EKS cluster name: 1 to 100 letters, digits, "-" or "_", starting with a letter or digit',
        pattern: clusterNamePattern,
      }),
      props: (clusterName) => ({ clusterName }),
    }),
    option({
      name: 'AutoScalingGroupNames',
      label: 'Auto Scaling groups',
      description: 'Existing Auto Scaling groups to serve, comma-separated: each gets a launch and a terminate hook.',
      kind: list({ accepts: 'Auto Scaling group names, comma-separated', required: true }),
      props: (autoScalingGroupNames) => ({ autoScalingGroupNames }),
    }),
    option({
      name: 'DeploymentName',
      label: 'Deployment name',
      description: 'Names the hooks, alarms, RBAC and metrics; one per deployment on a cluster. A DNS label.',
      kind: text({
        accepts: 'a DNS label: lowercase letters, digits and "-", at most 63, starting and ending alphanumeric',
        default: rbacName,
        pattern: deploymentNamePattern,
      }),
      props: (deploymentName) => ({ deploymentName }),
    }),
    option({
      name: 'KubernetesGroup',
      label: 'Kubernetes group',
      description:
        "Kubernetes group the drainer's role is mapped to; the deployment's ClusterRole is bound to it. " +
        'Empty: the deployment name.',
      kind: text({
        accepts: 'a Kubernetes group that does not start with "system:"',
        default: '',
        pattern: /^(?!system:).+$/,
      }),
      props: (kubernetesGroup) => ({ kubernetesGroup }),
    }),
    option({
      name: 'ManageKubernetesAccess',
      label: 'Manage Kubernetes access',
      description: 'Create the access entries and install the RBAC. false: aws-auth clusters (docs/deploy.md).',
      kind: flag(true),
      props: (manageKubernetesAccess) => ({ manageKubernetesAccess }),
    }),
  ],
};
