// The Terraform module (terraform/) against the one config definition: settings.tf is what the
// generator writes from the release template's parameters today (so a parameter added, renamed
// or given another default in infra/release-parameters.ts or lambda/shared/config-variables.ts
// fails here until `npm run terraform:generate`), and every parameter reaches the stack: as a
// generated variable, or set by main.tf.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { releaseParameters } from '../../../infra/release-parameters.js';
import {
  handSetParameters,
  outputsFile,
  settingsFile,
  terraformName,
  type TemplateParameter,
} from '../../../scripts/terraform-module.js';

const moduleDir = join(import.meta.dirname, '..', '..', '..', 'terraform');
const read = (file: string) => readFileSync(join(moduleDir, file), 'utf8');
const parameters = releaseParameters('graceful-node-termination-0.0.0-lambda-0.zip') as unknown as Record<
  string,
  TemplateParameter
>;
/** `variable "name" { ... }` blocks of a file: name -> body. */
const variables = (text: string) =>
  new Map([...text.matchAll(/^variable "([a-z0-9_]+)" \{\n([\s\S]*?)^\}/gm)].map((m) => [m[1]!, m[2]!]));
const squeeze = (s: string) => s.replace(/\s+/g, ' ');

describe('the Terraform module', () => {
  it('has the settings the generator writes from the release parameters now (else: npm run terraform:generate)', () => {
    expect(read('settings.tf')).toBe(settingsFile(parameters));
  });

  it('passes every template parameter to the stack: a generated variable with its default, or one main.tf sets', () => {
    const generated = variables(read('settings.tf'));
    const main = squeeze(read('main.tf'));
    for (const [name, p] of Object.entries(parameters)) {
      if (name in handSetParameters) {
        expect(main, name).toContain(
          `${name} = ${handSetParameters[name as keyof typeof handSetParameters]}`.replace(/\s+/g, ' '),
        );
        continue;
      }
      const body = generated.get(terraformName(name));
      expect(body, `${name} has no variable ${terraformName(name)}`).toBeDefined();
      expect(squeeze(read('settings.tf'))).toMatch(
        new RegExp(` ${name} = (tostring\\(|join\\(",", )?var\\.${terraformName(name)}\\b`),
      );
      if (p.Default === undefined) expect(body).not.toContain('default');
      else expect(body).toMatch(/default {5}= /);
    }
    // Nothing else: no variable that stands for no parameter.
    expect([...generated.keys()].sort()).toEqual(
      Object.keys(parameters)
        .filter((n) => !(n in handSetParameters))
        .map(terraformName)
        .sort(),
    );
  });

  it("keeps the template's defaults in Terraform's types", () => {
    const settings = read('settings.tf');
    const body = (name: string) => variables(settings).get(name)!;
    expect(body('heartbeat_timeout_seconds')).toContain(
      `default     = ${String(parameters['HeartbeatTimeoutSeconds']!.Default)}\n`,
    );
    expect(body('heartbeat_timeout_seconds')).toContain('type        = number');
    expect(body('wait_for_targets')).toMatch(/type {8}= bool\n {2}default {5}= (true|false)\n/);
    expect(body('subnet_ids')).toContain('type        = list(string)\n  default     = []\n');
    expect(body('mode')).toContain(`default     = "${String(parameters['Mode']!.Default)}"`);
    expect(body('mode')).toContain('contains(["enforce", "observe"], var.mode)');
  });

  it('names units whole and refuses a name it cannot split', () => {
    expect(terraformName('MemorySizeMiB')).toBe('memory_size_mib');
    expect(terraformName('LambdaCodeS3Key')).toBe('lambda_code_s3_key');
    expect(terraformName('AlarmTopicArn')).toBe('alarm_topic_arn');
    expect(terraformName('TerminationDeferralMaxSeconds')).toBe('termination_deferral_max_seconds');
    expect(() => terraformName('bad name')).toThrow(/snake_case/);
  });

  it('writes a new parameter as a variable without edits: type, default, range, pattern and values', () => {
    const text = settingsFile({
      ...parameters,
      SurgeTimeoutSeconds: { Type: 'Number', Description: 'How long.', Default: 300, MinValue: 30, MaxValue: 3600 },
      EvictDaemonSetPods: { Type: 'String', Description: 'Last.', Default: 'false', AllowedValues: ['true', 'false'] },
      LoadBalancerTags: { Type: 'CommaDelimitedList', Description: 'k=v.', Default: '', AllowedPattern: '^[^=]+=.*$' },
    });
    const surge = variables(text).get('surge_timeout_seconds')!;
    expect(surge).toContain('default     = 300');
    expect(surge).toContain('var.surge_timeout_seconds >= 30 && var.surge_timeout_seconds <= 3600');
    expect(variables(text).get('evict_daemon_set_pods')).toContain('type        = bool\n  default     = false\n');
    expect(variables(text).get('load_balancer_tags')).toContain(
      'alltrue([for s in var.load_balancer_tags : can(regex(',
    );
    expect(text).toMatch(/ EvictDaemonSetPods +=\s+tostring\(var\.evict_daemon_set_pods\)/);
    expect(text).toMatch(/ LoadBalancerTags +=\s+join\(",", var\.load_balancer_tags\)/);
  });

  it('leaves a pattern RE2 cannot compile to CloudFormation, and refuses a template without the parameters main.tf sets', () => {
    const role = variables(read('settings.tf')).get('role_path')!;
    expect(role).not.toContain('regex(');
    expect(role).toContain('is checked by CloudFormation only');
    const { ClusterName: _, ...withoutCluster } = parameters;
    expect(() => settingsFile(withoutCluster)).toThrow('the template has no parameter ClusterName, which main.tf sets');
  });

  it('escapes HCL interpolation in generated strings', () => {
    const text = settingsFile({ ...parameters, Odd: { Type: 'String', Description: 'a ${b} %{c}', Default: '${x}' } });
    expect(variables(text).get('odd')).toContain('"a $${b} %%{c} (template parameter Odd)"');
    expect(variables(text).get('odd')).toContain('default     = "$${x}"');
  });

  it('outputs each stack output by its snake_case name, and all of them as a map', () => {
    const text = outputsFile({ FunctionName: {}, DeploymentName: { Description: 'The name' } });
    expect(text).toContain('output "function_name" {\n  description = "The stack output FunctionName."\n');
    expect(text).toContain('value       = aws_cloudformation_stack.this.outputs["DeploymentName"]');
    expect(text).toContain('output "stack_outputs"');
    // The committed file names the outputs infra/app.ts adds (release.ts checks them against the template).
    for (const name of ['function_name', 'termination_policy_function_arn', 'deployment_name'])
      expect(read('outputs.tf')).toContain(`output "${name}"`);
  });

  it('takes the cluster and groups as terraform-aws-eks gives them, and the example passes its outputs', () => {
    const vars = variables(read('variables.tf'));
    expect(vars.get('cluster_name')).toContain('type        = string');
    // terraform-aws-eks: output self_managed_node_groups_autoscaling_group_names = compact([for group in ... : group.autoscaling_group_name]), a list(string).
    expect(vars.get('autoscaling_group_names')).toContain('type        = list(string)');
    const example = squeeze(read('examples/terraform-aws-eks/main.tf'));
    expect(example).toContain('autoscaling_group_names = module.eks.self_managed_node_groups_autoscaling_group_names');
    expect(example).toContain('cluster_name = module.eks.cluster_name');
  });
});
