# graceful-node-termination beside terraform-aws-eks: an EKS cluster with one self-managed
# node group, and the module giving that group's nodes a graceful termination. The module's
# one link to the cluster is two of terraform-aws-eks's outputs.
#
# Order matters once: apply the module on its own before the first launch template change of
# a group it serves (docs/terraform.md#order-it-before-a-launch-template-change). Every later
# change rolls the group on Auto Scaling's instance refresh with the hooks in place, so each
# replaced node is drained.

provider "aws" {
  region = var.region
}

module "eks" {
  source  = "terraform-aws-modules/eks/aws"
  version = "~> 21.0"

  name               = var.cluster_name
  kubernetes_version = "1.34"
  # The drainer's stack creates its own access entry (authentication mode API or API_AND_CONFIG_MAP).
  authentication_mode = "API_AND_CONFIG_MAP"
  vpc_id              = var.vpc_id
  subnet_ids          = var.subnet_ids

  self_managed_node_groups = {
    workers = {
      ami_type      = "AL2023_x86_64_STANDARD"
      instance_type = "m6i.large"
      min_size      = 2
      max_size      = 6
      desired_size  = 3
      # terraform-aws-eks's default instance refresh (Rolling, min_healthy_percentage 66) stays:
      # it terminates up to a third of the nodes at a time, each through the terminate hook, so
      # each is drained before it goes.
    }
  }
}

module "graceful_node_termination" {
  # The module is two folders up, in this repository and in the release archive
  # (graceful-node-termination-terraform-<version>.zip, whose release/ folder holds the template
  # and the Lambda zip the module deploys). From a clone, also set
  # release_directory = "<clone>/dist/release" after `npm run release`.
  source = "../.."

  cluster_name            = module.eks.cluster_name
  autoscaling_group_names = module.eks.self_managed_node_groups_autoscaling_group_names
  artifact_bucket         = var.artifact_bucket

  # Every setting of the template is an input (settings.tf); for a first rollout:
  mode        = "observe"
  alarm_email = var.alarm_email
}

output "drainer_function_name" {
  value = module.graceful_node_termination.function_name
}

output "termination_policy_function_arn" {
  value = module.graceful_node_termination.termination_policy_function_arn
}
