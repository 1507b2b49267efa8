package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// stack: resource "aws_cloudformation_stack", deployed as far as a directory can: the template
// fetched from its URL, the parameters and capabilities checked, the stack recorded.
type stack struct{ w *world }

type stackModel struct {
	ID           types.String `tfsdk:"id"`
	Name         types.String `tfsdk:"name"`
	TemplateURL  types.String `tfsdk:"template_url"`
	TemplateBody types.String `tfsdk:"template_body"`
	Capabilities types.Set    `tfsdk:"capabilities"`
	Parameters   types.Map    `tfsdk:"parameters"`
	Tags         types.Map    `tfsdk:"tags"`
	OnFailure    types.String `tfsdk:"on_failure"`
	Outputs      types.Map    `tfsdk:"outputs"`
	Timeouts     types.Object `tfsdk:"timeouts"`
}

func (s *stack) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cloudformation_stack"
}

func (s *stack) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"id":            schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name":          schema.StringAttribute{Required: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"template_url":  schema.StringAttribute{Optional: true},
			"template_body": schema.StringAttribute{Optional: true},
			"capabilities":  schema.SetAttribute{Optional: true, ElementType: types.StringType},
			"parameters":    schema.MapAttribute{Optional: true, ElementType: types.StringType},
			"tags":          schema.MapAttribute{Optional: true, ElementType: types.StringType},
			"on_failure":    schema.StringAttribute{Optional: true},
			"outputs":       schema.MapAttribute{Computed: true, ElementType: types.StringType},
		},
		Blocks: map[string]schema.Block{
			"timeouts": schema.SingleNestedBlock{Attributes: map[string]schema.Attribute{
				"create": schema.StringAttribute{Optional: true},
				"update": schema.StringAttribute{Optional: true},
				"delete": schema.StringAttribute{Optional: true},
			}},
		},
	}
}

func (s *stack) Configure(_ context.Context, req resource.ConfigureRequest, _ *resource.ConfigureResponse) {
	if w, ok := req.ProviderData.(*world); ok {
		s.w = w
	}
}

type template struct {
	Transform  any                      `json:"Transform"`
	Parameters map[string]templateParam `json:"Parameters"`
	// Raw: AWS::LanguageExtensions puts Fn::ForEach loops (arrays) among the resources.
	Resources map[string]json.RawMessage `json:"Resources"`
	Outputs   map[string]any             `json:"Outputs"`
}

type templateParam struct {
	Type           string   `json:"Type"`
	Default        any      `json:"Default"`
	AllowedValues  []any    `json:"AllowedValues"`
	AllowedPattern string   `json:"AllowedPattern"`
	MinValue       *float64 `json:"MinValue"`
	MaxValue       *float64 `json:"MaxValue"`
	MaxLength      *int     `json:"MaxLength"`
}

type templateResource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// resources are the template's plain resources (a Fn::ForEach loop is not one).
func (t *template) resources() map[string]templateResource {
	plain := map[string]templateResource{}
	for id, raw := range t.Resources {
		var r templateResource
		if json.Unmarshal(raw, &r) == nil {
			plain[id] = r
		}
	}
	return plain
}

// fetch reads the template the URL names, as S3 would serve it: the path decoded as S3 decodes
// it, "+" as a space and %2B as "+".
func (s *stack) fetch(raw string) (*template, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" {
		return nil, fmt.Errorf("TemplateURL must be an https Amazon S3 URL: %s", raw)
	}
	suffix := fmt.Sprintf(".s3.%s.amazonaws.com", s.w.region)
	if !strings.HasSuffix(u.Host, suffix) {
		return nil, fmt.Errorf("TemplateURL must be a virtual-hosted S3 URL in %s: %s", s.w.region, raw)
	}
	bucketName := strings.TrimSuffix(u.Host, suffix)
	key, err := url.PathUnescape(strings.ReplaceAll(strings.TrimPrefix(u.EscapedPath(), "/"), "+", " "))
	if err != nil {
		return nil, err
	}
	body, err := os.ReadFile(filepath.Join(s.w.root, "s3", bucketName, filepath.FromSlash(key)))
	if err != nil {
		return nil, fmt.Errorf("S3 error: Access Denied (no object %q in bucket %s)", key, bucketName)
	}
	var t template
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("Template format error: %w", err)
	}
	return &t, nil
}

// checkParameters is CloudFormation's validation of a stack's parameters against its template.
func checkParameters(t *template, given map[string]string) []string {
	var problems, unknown, missing []string
	for name := range given {
		if _, ok := t.Parameters[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	for name, p := range t.Parameters {
		value, ok := given[name]
		if !ok {
			if p.Default == nil {
				missing = append(missing, name)
			}
			continue
		}
		problems = append(problems, checkValue(name, p, value)...)
	}
	sort.Strings(unknown)
	sort.Strings(missing)
	sort.Strings(problems)
	if len(unknown) > 0 {
		problems = append(problems, fmt.Sprintf("Parameters: [%s] do not exist in the template", strings.Join(unknown, ", ")))
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("Parameters: [%s] must have values", strings.Join(missing, ", ")))
	}
	return problems
}

func checkValue(name string, p templateParam, value string) []string {
	var problems []string
	if len(p.AllowedValues) > 0 {
		allowed := false
		for _, v := range p.AllowedValues {
			allowed = allowed || fmt.Sprint(v) == value
		}
		if !allowed {
			problems = append(problems, fmt.Sprintf("Parameter '%s' must be one of AllowedValues", name))
		}
	}
	if p.Type == "Number" {
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("Parameter '%s' must be a number not '%s'", name, value))
		} else if (p.MinValue != nil && n < *p.MinValue) || (p.MaxValue != nil && n > *p.MaxValue) {
			problems = append(problems, fmt.Sprintf("Parameter '%s' must be a number between MinValue and MaxValue", name))
		}
	}
	// Go's regexp is RE2: a lookaround pattern does not compile and is left unchecked here.
	if re, err := regexp.Compile("^(?:" + p.AllowedPattern + ")$"); p.AllowedPattern != "" && err == nil && !re.MatchString(value) {
		problems = append(problems, fmt.Sprintf("Parameter '%s' must match pattern %s", name, p.AllowedPattern))
	}
	if p.MaxLength != nil && len(value) > *p.MaxLength {
		problems = append(problems, fmt.Sprintf("Parameter '%s' must contain at most %d characters", name, *p.MaxLength))
	}
	return problems
}

// checkCapabilities: a transform needs CAPABILITY_AUTO_EXPAND; IAM resources CAPABILITY_IAM
// (or NAMED_IAM, which a named one needs).
func checkCapabilities(t *template, given []string) []string {
	has := map[string]bool{}
	for _, c := range given {
		has[c] = true
	}
	var need []string
	if t.Transform != nil && !has["CAPABILITY_AUTO_EXPAND"] {
		need = append(need, "CAPABILITY_AUTO_EXPAND")
	}
	iam, named := false, false
	for _, r := range t.resources() {
		if strings.HasPrefix(r.Type, "AWS::IAM::") {
			iam = true
			for _, k := range []string{"RoleName", "PolicyName", "ManagedPolicyName", "UserName", "GroupName", "InstanceProfileName"} {
				named = named || (r.Type != "AWS::IAM::Policy" && r.Properties[k] != nil)
			}
		}
	}
	if named && !has["CAPABILITY_NAMED_IAM"] {
		need = append(need, "CAPABILITY_NAMED_IAM")
	} else if iam && !has["CAPABILITY_IAM"] && !has["CAPABILITY_NAMED_IAM"] {
		need = append(need, "CAPABILITY_IAM")
	}
	if len(need) > 0 {
		return []string{fmt.Sprintf("Requires capabilities : [%s]", strings.Join(need, ", "))}
	}
	return nil
}

// checkCode: each function whose code is {Ref: bucket parameter}/{Ref: key parameter} finds its zip.
func (s *stack) checkCode(t *template, params map[string]string) []string {
	value := func(v any) string {
		ref, _ := v.(map[string]any)["Ref"].(string)
		if got, ok := params[ref]; ok {
			return got
		}
		return fmt.Sprint(t.Parameters[ref].Default)
	}
	var problems []string
	for id, r := range t.resources() {
		code, ok := r.Properties["Code"].(map[string]any)
		if r.Type != "AWS::Lambda::Function" || !ok || code["S3Key"] == nil {
			continue
		}
		bucketName, key := value(code["S3Bucket"]), value(code["S3Key"])
		if _, err := os.Stat(filepath.Join(s.w.root, "s3", bucketName, filepath.FromSlash(key))); err != nil {
			problems = append(problems, fmt.Sprintf("%s: Error occurred while GetObject. S3 Error Code: NoSuchKey (s3://%s/%s)", id, bucketName, key))
		}
	}
	sort.Strings(problems)
	return problems
}

func (s *stack) deploy(ctx context.Context, m *stackModel) []string {
	if m.TemplateURL.IsNull() {
		return []string{"the stand-in deploys from template_url only"}
	}
	t, err := s.fetch(m.TemplateURL.ValueString())
	if err != nil {
		return []string{err.Error()}
	}
	params := map[string]string{}
	caps := []string{}
	m.Parameters.ElementsAs(ctx, &params, false)
	m.Capabilities.ElementsAs(ctx, &caps, false)
	problems := append(checkCapabilities(t, caps), checkParameters(t, params)...)
	if len(problems) == 0 {
		problems = s.checkCode(t, params)
	}
	if len(problems) > 0 {
		return problems
	}
	outputs := map[string]attr.Value{}
	for key := range t.Outputs {
		outputs[key] = types.StringValue("stand-in:" + key)
	}
	m.Outputs = types.MapValueMust(types.StringType, outputs)
	m.ID = types.StringValue(fmt.Sprintf("arn:aws:cloudformation:%s:000000000000:stack/%s/stand-in", s.w.region, m.Name.ValueString()))
	record, _ := json.MarshalIndent(map[string]any{"template_url": m.TemplateURL.ValueString(), "parameters": params, "capabilities": caps}, "", "  ")
	dir := filepath.Join(s.w.root, "cloudformation")
	_ = os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, m.Name.ValueString()+".json"), record, 0o644); err != nil {
		return []string{err.Error()}
	}
	return nil
}

func (s *stack) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m stackModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if problems := s.deploy(ctx, &m); len(problems) > 0 {
		resp.Diagnostics.AddError("creating CloudFormation Stack: ValidationError", strings.Join(problems, "; "))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (s *stack) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m stackModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if _, err := os.Stat(filepath.Join(s.w.root, "cloudformation", m.Name.ValueString()+".json")); err != nil {
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Update deploys as Create does, and first checks what a rollback of the update would need:
// CloudFormation rolls a failed update back to the previous template and code, so the previous
// code object must still be in the bucket while the update runs.
func (s *stack) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior stackModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	before := map[string]string{}
	prior.Parameters.ElementsAs(ctx, &before, false)
	if key := before["LambdaCodeS3Key"]; key != "" {
		if _, err := os.Stat(filepath.Join(s.w.root, "s3", before["LambdaCodeS3Bucket"], filepath.FromSlash(key))); err != nil {
			resp.Diagnostics.AddError("updating CloudFormation Stack", fmt.Sprintf("the previous code object s3://%s/%s is gone while the update runs: a rollback would fail (UPDATE_ROLLBACK_FAILED)", before["LambdaCodeS3Bucket"], key))
			return
		}
	}
	if problems := s.deploy(ctx, &m); len(problems) > 0 {
		resp.Diagnostics.AddError("updating CloudFormation Stack: ValidationError", strings.Join(problems, "; "))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (s *stack) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m stackModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	_ = os.Remove(filepath.Join(s.w.root, "cloudformation", m.Name.ValueString()+".json"))
}
