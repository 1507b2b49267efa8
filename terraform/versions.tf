terraform {
  # Terraform 1.5.7 (the floor terraform-aws-eks sets) or OpenTofu 1.6 and later.
  required_version = ">= 1.5.7"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
  }
}
