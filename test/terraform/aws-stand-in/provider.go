// A local stand-in for the hashicorp/aws provider, for `npm run terraform:check` only: the
// real provider cannot be had on the machines this is built on (no registry; the Go module
// proxy serves terraform-provider-aws only up to v1.60.0). It serves the three things the
// module uses, with the attribute names of the provider's documentation, over a directory:
//
//	data "aws_s3_bucket"              a bucket is a directory <root>/s3/<bucket>
//	resource "aws_s3_object"          the source file copied to <root>/s3/<bucket>/<key>
//	resource "aws_cloudformation_stack"
//	    the template read back from template_url as S3 reads a URL path (a bare "+" is a space),
//	    the parameters checked as CloudFormation checks them (unknown, missing, allowed values,
//	    pattern, range, length), the capabilities the template needs, the Lambda code object
//	    present; the stack recorded as <root>/cloudformation/<name>.json, its outputs stand-ins.
//
// <root> is GNT_AWS_STAND_IN_ROOT. Nothing here talks to AWS; it is not shipped.
package main

import (
	"context"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// world is what every resource and data source of a configured provider shares.
type world struct {
	root   string
	region string
}

type standIn struct{}

func newProvider() provider.Provider { return &standIn{} }

func (p *standIn) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "aws"
	resp.Version = "6.999.0"
}

func (p *standIn) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{"region": schema.StringAttribute{Optional: true}}}
}

func (p *standIn) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var config struct {
		Region types.String `tfsdk:"region"`
	}
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	root := os.Getenv("GNT_AWS_STAND_IN_ROOT")
	if root == "" {
		resp.Diagnostics.AddError("stand-in provider", "GNT_AWS_STAND_IN_ROOT names no directory")
		return
	}
	region := config.Region.ValueString()
	if region == "" {
		region = "eu-west-1"
	}
	w := &world{root: root, region: region}
	resp.DataSourceData = w
	resp.ResourceData = w
}

func (p *standIn) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{func() datasource.DataSource { return &bucket{} }}
}

func (p *standIn) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		func() resource.Resource { return &object{} },
		func() resource.Resource { return &stack{} },
	}
}
