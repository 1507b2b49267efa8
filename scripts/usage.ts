// The commands' usage texts, apart from the commands: the installed command answers --help
// without loading the AWS SDK and the Kubernetes client (a third of a second on a small machine).
import { commonUsage } from './command-options.js';

export const cliUsage = `usage: graceful-node-termination <command> [options]

commands:
  check <auto-scaling-group>     which pods cannot leave the group's nodes now, and why
  upgrade <auto-scaling-group>   roll the group on instance refresh with managed-node-group parity
  cleanup --deployment NAME      take back every mark a deployment left on nodes and groups
  migrate --from OLD --to NEW    move every node of a group to a new group, drained, then leave the old one at zero
  termination-policy <enable|disable> <auto-scaling-group>
                                 make the drainer the group's custom termination policy, or stop
  install --bucket B --group G   deploy this release as a CloudFormation stack (or --eksctl-cluster C)
  uninstall --cluster C          termination policy off, stack deleted, marks taken back
  rbac --deployment NAME         the Kubernetes RBAC of a deployment on an aws-auth cluster: print it, or --apply

graceful-node-termination <command> --help shows a command's options; --version its version.
exit codes: 0 done, 1 failed, 2 bad usage, 3 a blocker found (docs/cli.md)`;

export const checkUsage = `usage: graceful-node-termination check <auto-scaling-group> [options]   (npm run check -- <group> [options])

The drainability preflight: for each node of the group, the pods that cannot leave now and why.
Reads the group with your AWS credentials and the cluster with your kubeconfig.

options:
  --strategy S             default or minimal (minimal: the node is terminated before its replacement is up)
  --nodes a,b              these nodes instead of the group's (no AWS call)
  --function F             show each pod under the drain rules of this deployed function (name or ARN)
  --drain-rules J          ...or under these rules (DRAIN_RULES' JSON, or @file)
  --evict-daemonset-pods   ...with DaemonSet pods evicted last (EVICT_DAEMONSET_PODS=true)
${commonUsage}

exit code: 0, 3 when a node has a certain blocker, 2 on bad usage (or no region, no kubeconfig), 1 on a failure`;

export const upgradeUsage = `usage: graceful-node-termination upgrade <auto-scaling-group> [options]   (npm run upgrade -- <group> [options])

A node group upgrade on Auto Scaling instance refresh: the drainability preflight and the plan,
then (with --approve, or a "yes" on a terminal) a refresh with managed-node-group preferences and
the deployment's alarms, followed until it ends. Without either, nothing is changed.

options:
  --approve                        start the refresh without asking
  --launch-template-version V      the launch template version to roll to
  --release R                      latest, or a release of the group's EKS-optimized AMI (AL2023 v20251120,
                                   Bottlerocket 1.26.1): a new launch template version with only its image changed
  --kubernetes-version 1.N         with --release: move the nodes to this minor version (one at a time,
                                   never newer than the control plane)
  --available-timeout S            with --release: how long the checks after the refresh wait (default 300)
  --max-unavailable N              nodes replaced at once
  --max-unavailable-percentage P   the same, as a percentage of the group
  --strategy S                     default (surge, then drain) or minimal (terminate first)
  --force                          start even when the preflight finds a certain blocker
  --auto-rollback                  roll back when an alarm stops the refresh
  --deployment NAME                the deployment whose alarms stop the refresh (default: found from the group's lifecycle hooks)
${commonUsage}

With --release, afterwards every Deployment, StatefulSet and DaemonSet available before must be
available again and every node of the group Ready at the new version (exit 1 naming those that
are not). Ctrl-C stops following and leaves the refresh running. exit code: 0 when the refresh
succeeded (or only the plan was shown), 1 when it did not, 2 on bad usage, 3 when the preflight
or the version-skew check refused, 130 when interrupted`;

export const cleanupUsage = `usage: graceful-node-termination cleanup --deployment NAME [options]   (npm run cleanup -- --deployment NAME [options])

Takes back every mark the deployment left on nodes (its drains', its refreshes', the owner
label) and the refresh-strategy tag on its groups (docs/marks.md). Nothing else is touched.

options:
  --deployment NAME        the deployment (the stack's DeploymentName output, the owner label's value)
  --dry-run                show what would be taken back; change nothing
  --group G                also untag this group (repeatable), when its hooks are already gone
  --nodes-only             leave the groups alone (no AWS access needed)
${commonUsage}

exit code: 0 done (or nothing to do), 1 on a failure, 2 on bad usage`;

export const terminationPolicyUsage = `usage: graceful-node-termination termination-policy <enable|disable> <auto-scaling-group> [options]
       (npm run termination-policy -- <enable|disable> <group> [options])

enable puts the drainer first in the group's TerminationPolicies, the group's own policies after
it: on scale-in, AZ rebalancing, maximum instance lifetime and instance refresh, Auto Scaling asks
it which instances to terminate (the cheapest departures; docs/termination-policy.md). disable
takes it out and leaves the rest. The plan first; nothing changes without --approve or a "yes".
Disable it before you delete the stack: a group whose policy no longer answers stops scaling in.

options:
  --function-arn ARN       enable: the drainer's ARN (the stack output TerminationPolicyFunctionArn)
  --approve                change the group without asking
  -o, --output FORMAT      table (default), json or yaml; --json is -o json
  --region R               the AWS region (default: the SDK's chain: AWS_REGION, the profile's region)
  --profile P              the AWS profile (default: AWS_PROFILE, then default)
  -h, --help               this text

exit code: 0 done (or nothing to change), 1 on a failure, 2 on bad usage`;

export const migrateUsage = `usage: graceful-node-termination migrate --from OLD --to NEW [options]   (npm run migrate -- --from OLD --to NEW [options])

Moves a node group's work to a new group (both served by the deployment): the plan, then (with
--approve, or a "yes" on a terminal) it waits for the new group's Ready nodes, marks every old
node (PreferNoSchedule, or cordon), lets the batch pods on them finish, and shrinks the old group
a few instances at a time so the terminate hook drains each node; it stops on the first drain
that times out and leaves the old group at zero (delete it in your IaC). Without either, nothing
is changed.

options:
  --from OLD               the Auto Scaling group to leave
  --to NEW                 the Auto Scaling group to move to (create it first)
  --approve                start without asking
  --min-ready N            Ready nodes the new group needs first (default: the old group's nodes)
  --max-unavailable N      old instances terminated at a time (default 1)
  --cordon-all             cordon every old node at once instead of the PreferNoSchedule taint
  --lease S                how long the marks outlive a command that died, renewed meanwhile (default 300)
  --ready-timeout S        how long to wait for the new group's Ready nodes (default 900)
  --batch-timeout S        how long to wait for batch pods on old nodes to finish (default 3600)
  --deployment NAME        the deployment serving both groups (default: found from their lifecycle hooks)
${commonUsage}

Ctrl-C stops after the current step and takes the marks back. exit code: 0 when the old group is
at zero (or only the plan was shown), 1 when a drain timed out or the new group did not get
Ready, 2 on bad usage, 3 when a group is not served by the deployment, 130 when interrupted`;

export const installUsage = `usage: graceful-node-termination install --bucket B (--group G ... | --eksctl-cluster C) [options]
       (npm run release:install -- ...)

Deploys this release (the template and Lambda zip shipped with this command, or --release-dir)
as a CloudFormation stack: uploads both to the bucket, shows the change set as the plan, and
deploys it only with --approve (or a "yes" on a terminal). Refused while an instance refresh runs
on a group. Run it again with a new release, or other --parameter values, to update the stack;
with nothing to change it says so and changes nothing.

options:
  --bucket B               an S3 bucket in the region for the template and the Lambda zip
  --group G                an Auto Scaling group to serve (repeatable)
  --eksctl-cluster C       ...or the groups of eksctl cluster C's unmanaged nodegroups (found by their tags)
  --nodegroup N            with --eksctl-cluster: only this nodegroup (repeatable)
  --cluster C              the EKS cluster (default: the --eksctl-cluster)
  --stack-name S           the stack (default graceful-node-termination-<cluster>)
  --parameter K=V          a template parameter, e.g. Mode=observe or AlarmEmail=<address> (repeatable;
                           on an update the others keep their values)
  --prefix P               key prefix in the bucket (default graceful-node-termination/)
  --release-dir DIR        the release's template and zip (default: those shipped with this command)
  --approve                deploy without asking
  -o, --output FORMAT      table (default), json or yaml; --json is -o json
  --region R               the AWS region (default: the SDK's chain: AWS_REGION, the profile's region)
  --profile P              the AWS profile (default: AWS_PROFILE, then default)
  -h, --help               this text

exit code: 0 deployed, nothing to change, or only the plan shown; 1 on a failure; 2 on bad usage;
3 when refused (an instance refresh running, the stack busy or failed)`;

export const uninstallUsage = `usage: graceful-node-termination uninstall (--cluster C | --stack-name S) [options]
       (npm run release:uninstall -- ...)

Removes a deployment in the safe order: the drainer taken out of the groups' termination
policies, the stack deleted (its hooks with it), then every mark the deployment left on nodes and
groups taken back (as cleanup does). The plan first; nothing changes without --approve or a "yes".
Refused while an instance refresh runs on a served group or a lifecycle action waits on an
instance. Safe to run again after a failure: each step finds its work done.

options:
  --cluster C              the stack graceful-node-termination-<C> (install's default name)
  --stack-name S           ...or the stack by name
  --deployment NAME        the deployment whose marks to take back (default: the stack's output
                           DeploymentName; once the stack is gone, name it)
  --group G                also untag this group (repeatable), when the stack is gone already
  --force                  go on while a lifecycle action waits (a drain in progress is cut short)
  --approve                uninstall without asking
${commonUsage}

exit code: 0 done (or only the plan shown), 1 on a failure, 2 on bad usage, 3 when refused`;

export const rbacUsage = `usage: graceful-node-termination rbac --deployment NAME [options]
       graceful-node-termination rbac --function F [options]

The drainer's Kubernetes objects, for a cluster whose stack does not install them (aws-auth
clusters: manageKubernetesAccess=false, ManageKubernetesAccess=false): its ClusterRole and the
binding to the deployment's group, its FlowSchema and PriorityLevelConfiguration, and with surge
before evict the ValidatingAdmissionPolicy that fences it; the objects the stack's installer
applies on a cluster with access entries. Printed as YAML for kubectl apply -f -, or applied
with --apply. Then map the function's role to the group in aws-auth (docs/deploy.md).

options:
  --deployment NAME        the deployment (the stack output DeploymentName)
  --deadline-policy P      the deployment's deadline policy: force (default), leave or retain
                           (leave and retain: no pods delete)
  --surge                  the deployment has surge before evict on (Kubernetes 1.30 or later)
  --function F             read all three from the deployed function instead (the stack output
                           FunctionName, or its ARN; lambda:GetFunctionConfiguration)
  --group G                the Kubernetes group the role is mapped to (default: the deployment name)
  --apply                  server-side apply them with the kubeconfig instead of printing them
  -o, --output FORMAT      yaml (default) or json (a v1 List); --json is -o json
  --region R               with --function: the AWS region (default: the SDK's chain)
  --profile P              with --function: the AWS profile (default: AWS_PROFILE, then default)
  --kubeconfig FILE        with --apply: the kubeconfig (default: KUBECONFIG, then ~/.kube/config)
  --context C              with --apply: the kubeconfig context (default: its current context)
  -h, --help               this text

exit code: 0 done, 1 on a failure (the cluster older than 1.29, objects a stack installed), 2 on bad usage`;
