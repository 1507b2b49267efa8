# graceful-node-termination as a Terraform module: the release's own CloudFormation template
# and Lambda zip (the artifacts `npm run release` builds and CI lints and tests), uploaded to a
# bucket you name and deployed as one stack with aws_cloudformation_stack. The template is the
# same one CloudFormation users deploy, so the hooks, the topic, the drainer, its IAM and RBAC
# and the alarms are exactly those of the construct. docs/terraform.md explains the inputs and
# how to order the first apply before a launch template change.

locals {
  release_directory = var.release_directory != null ? var.release_directory : "${path.module}/release"
  templates         = fileset(local.release_directory, "graceful-node-termination-*.template.json")
  codes             = fileset(local.release_directory, "graceful-node-termination-*-lambda-*.zip")
  # try(): one() fails on two or more; the preconditions below say what is wrong instead.
  template_file = try(one(local.templates), null)
  code_file     = try(one(local.codes), null)
  stack_name    = var.stack_name != null ? var.stack_name : "graceful-node-termination-${replace(var.cluster_name, "_", "-")}"
}

data "aws_s3_bucket" "artifacts" {
  bucket = var.artifact_bucket
}

resource "aws_s3_object" "code" {
  bucket      = var.artifact_bucket
  key         = "${var.artifact_key_prefix}${coalesce(local.code_file, "missing.zip")}"
  source      = local.code_file == null ? null : "${local.release_directory}/${local.code_file}"
  source_hash = local.code_file == null ? null : filemd5("${local.release_directory}/${local.code_file}")
  tags        = var.tags

  lifecycle {
    # A new release is a new key, so a new object: create it first and delete the old one only
    # after the stack's update, which CloudFormation may roll back to the old code.
    create_before_destroy = true

    precondition {
      condition     = length(local.codes) == 1
      error_message = "release_directory (${local.release_directory}) must hold exactly one graceful-node-termination-*-lambda-*.zip; it holds ${length(local.codes)}. Use the release archive as it is, or point release_directory at the dist/release/ of npm run release."
    }
  }
}

resource "aws_s3_object" "template" {
  bucket       = var.artifact_bucket
  key          = "${var.artifact_key_prefix}${coalesce(local.template_file, "missing.template.json")}"
  source       = local.template_file == null ? null : "${local.release_directory}/${local.template_file}"
  source_hash  = local.template_file == null ? null : filemd5("${local.release_directory}/${local.template_file}")
  content_type = "application/json"
  tags         = var.tags

  lifecycle {
    create_before_destroy = true

    precondition {
      condition     = length(local.templates) == 1
      error_message = "release_directory (${local.release_directory}) must hold exactly one graceful-node-termination-*.template.json; it holds ${length(local.templates)}."
    }
  }
}

resource "aws_cloudformation_stack" "this" {
  name = local.stack_name
  # A dev build's version has a "+" (0.4.0-dev.312+abc1234): in a URL path S3 reads a bare "+"
  # as a space, so it is sent as %2B. The key names the version, so a new release is a new URL
  # and an update of the stack.
  template_url = "https://${data.aws_s3_bucket.artifacts.bucket_regional_domain_name}/${replace(aws_s3_object.template.key, "+", "%2B")}"
  # The roles have no fixed names (no CAPABILITY_NAMED_IAM); the template's
  # AWS::LanguageExtensions transform needs CAPABILITY_AUTO_EXPAND.
  capabilities = ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"]
  parameters = merge(local.setting_parameters, {
    ClusterName           = var.cluster_name
    AutoScalingGroupNames = join(",", var.autoscaling_group_names)
    LambdaCodeS3Bucket    = var.artifact_bucket
    LambdaCodeS3Key       = aws_s3_object.code.key
  })
  tags = var.tags

  timeouts {
    create = "30m"
    update = "30m"
    delete = "30m"
  }
}
