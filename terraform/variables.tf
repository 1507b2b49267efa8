# The inputs this module sets by hand: where the drainer serves, where the release's artifacts
# are and how the stack is named. Every other setting is in settings.tf, generated from the
# release template's parameters.

variable "cluster_name" {
  description = "Name of the EKS cluster the node groups join (Kubernetes 1.29 or later; authentication mode API or API_AND_CONFIG_MAP unless manage_kubernetes_access is false). terraform-aws-eks: module.eks.cluster_name."
  type        = string
  nullable    = false

  validation {
    condition     = can(regex("^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$", var.cluster_name))
    error_message = "cluster_name must be an EKS cluster name: letters, digits, - and _, at most 100 characters."
  }
}

variable "autoscaling_group_names" {
  description = "Auto Scaling groups to serve: each gets a launch and a terminate lifecycle hook. terraform-aws-eks: module.eks.self_managed_node_groups_autoscaling_group_names."
  type        = list(string)
  nullable    = false

  validation {
    condition     = length(var.autoscaling_group_names) > 0 && alltrue([for g in var.autoscaling_group_names : g != ""])
    error_message = "autoscaling_group_names must name at least one Auto Scaling group, without empty names."
  }
}

variable "artifact_bucket" {
  description = "An existing S3 bucket in the stack's region: the module uploads the release's template and Lambda zip to it (Lambda reads its code from the same region)."
  type        = string
  nullable    = false
}

variable "artifact_key_prefix" {
  description = "Prefix of the two objects' keys in artifact_bucket; the file names carry the release's version."
  type        = string
  default     = "graceful-node-termination/"
  nullable    = false
}

variable "release_directory" {
  description = "Directory holding exactly one release's template (graceful-node-termination-<version>.template.json) and Lambda zip. Default: release/ inside the module, where the release archive puts them; from a clone, the dist/release/ that npm run release writes."
  type        = string
  default     = null
}

variable "stack_name" {
  description = "Name of the CloudFormation stack. Default: graceful-node-termination-<cluster_name>."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags for the stack (CloudFormation passes them on to the resources it creates) and the two S3 objects."
  type        = map(string)
  default     = {}
  nullable    = false
}
