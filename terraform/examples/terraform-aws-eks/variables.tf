variable "region" {
  description = "AWS region of the cluster, the bucket and the stack."
  type        = string
}

variable "cluster_name" {
  description = "Name of the EKS cluster to create."
  type        = string
}

variable "vpc_id" {
  description = "VPC of the cluster."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets for the cluster and its nodes."
  type        = list(string)
}

variable "artifact_bucket" {
  description = "An existing S3 bucket in the region for the release's template and Lambda zip."
  type        = string
}

variable "alarm_email" {
  description = "Where the drainer's alarms go (confirm the subscription e-mail AWS sends)."
  type        = string
}
