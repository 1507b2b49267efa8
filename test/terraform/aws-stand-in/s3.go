package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// bucket: data "aws_s3_bucket", a directory under <root>/s3.
type bucket struct{ w *world }

type bucketModel struct {
	Bucket                   types.String `tfsdk:"bucket"`
	ID                       types.String `tfsdk:"id"`
	Arn                      types.String `tfsdk:"arn"`
	Region                   types.String `tfsdk:"region"`
	BucketRegionalDomainName types.String `tfsdk:"bucket_regional_domain_name"`
}

func (b *bucket) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_s3_bucket"
}

func (b *bucket) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = dschema.Schema{Attributes: map[string]dschema.Attribute{
		"bucket":                      dschema.StringAttribute{Required: true},
		"id":                          dschema.StringAttribute{Computed: true},
		"arn":                         dschema.StringAttribute{Computed: true},
		"region":                      dschema.StringAttribute{Computed: true},
		"bucket_regional_domain_name": dschema.StringAttribute{Computed: true},
	}}
}

func (b *bucket) Configure(_ context.Context, req datasource.ConfigureRequest, _ *datasource.ConfigureResponse) {
	if w, ok := req.ProviderData.(*world); ok {
		b.w = w
	}
}

func (b *bucket) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m bucketModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	name := m.Bucket.ValueString()
	if info, err := os.Stat(filepath.Join(b.w.root, "s3", name)); err != nil || !info.IsDir() {
		resp.Diagnostics.AddError("reading S3 Bucket", fmt.Sprintf("NoSuchBucket: %s", name))
		return
	}
	m.ID = types.StringValue(name)
	m.Arn = types.StringValue("arn:aws:s3:::" + name)
	m.Region = types.StringValue(b.w.region)
	m.BucketRegionalDomainName = types.StringValue(fmt.Sprintf("%s.s3.%s.amazonaws.com", name, b.w.region))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// object: resource "aws_s3_object", the source file copied into the bucket's directory.
type object struct{ w *world }

type objectModel struct {
	ID          types.String `tfsdk:"id"`
	Bucket      types.String `tfsdk:"bucket"`
	Key         types.String `tfsdk:"key"`
	Source      types.String `tfsdk:"source"`
	SourceHash  types.String `tfsdk:"source_hash"`
	ContentType types.String `tfsdk:"content_type"`
	Tags        types.Map    `tfsdk:"tags"`
	Etag        types.String `tfsdk:"etag"`
	VersionID   types.String `tfsdk:"version_id"`
}

func (o *object) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_s3_object"
}

func (o *object) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{
		"id":           schema.StringAttribute{Computed: true, PlanModifiers: keep},
		"bucket":       schema.StringAttribute{Required: true, PlanModifiers: replace},
		"key":          schema.StringAttribute{Required: true, PlanModifiers: replace},
		"source":       schema.StringAttribute{Optional: true},
		"source_hash":  schema.StringAttribute{Optional: true},
		"content_type": schema.StringAttribute{Optional: true},
		"tags":         schema.MapAttribute{Optional: true, ElementType: types.StringType},
		"etag":         schema.StringAttribute{Computed: true},
		"version_id":   schema.StringAttribute{Computed: true},
	}}
}

func (o *object) Configure(_ context.Context, req resource.ConfigureRequest, _ *resource.ConfigureResponse) {
	if w, ok := req.ProviderData.(*world); ok {
		o.w = w
	}
}

func (o *object) path(m objectModel) string {
	return filepath.Join(o.w.root, "s3", m.Bucket.ValueString(), filepath.FromSlash(m.Key.ValueString()))
}

func (o *object) put(m *objectModel) error {
	if _, err := os.Stat(filepath.Join(o.w.root, "s3", m.Bucket.ValueString())); err != nil {
		return fmt.Errorf("NoSuchBucket: %s", m.Bucket.ValueString())
	}
	body, err := os.ReadFile(m.Source.ValueString())
	if err != nil {
		return fmt.Errorf("reading source: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(o.path(*m)), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.path(*m), body, 0o644); err != nil {
		return err
	}
	sum := md5.Sum(body)
	m.ID = types.StringValue(m.Key.ValueString())
	m.Etag = types.StringValue(hex.EncodeToString(sum[:]))
	m.VersionID = types.StringValue("")
	return nil
}

func (o *object) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m objectModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if err := o.put(&m); err != nil {
		resp.Diagnostics.AddError("uploading S3 Object", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (o *object) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m objectModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if _, err := os.Stat(o.path(m)); err != nil {
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (o *object) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m objectModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if err := o.put(&m); err != nil {
		resp.Diagnostics.AddError("uploading S3 Object", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (o *object) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m objectModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	_ = os.Remove(o.path(m))
}
