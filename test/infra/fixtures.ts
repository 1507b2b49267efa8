// Stacks and template helpers shared by the infra tests.
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { join } from 'node:path';
import { buildApp } from '../../infra/app.js';
import { GracefulNodeTermination, type GracefulNodeTerminationProps } from '../../infra/graceful-node-termination.js';

export type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DependsOn?: string[];
  Metadata?: Record<string, unknown>;
  Condition?: string;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
export type Resources = Record<string, Resource>;
export type Statement = {
  Action: string | string[];
  Resource: unknown;
  Effect: string;
  Sid?: string;
  Condition?: Record<string, Record<string, unknown>>;
  Principal?: unknown;
};

export const root = join(import.meta.dirname, '..', '..');
/** The example cluster and groups `npm run synth` passes (package.json's synth script; app-context.test.ts checks). */
export const exampleContext: Record<string, string> = {
  clusterName: 'example-cluster',
  autoScalingGroupNames: 'example-nodes-a,example-nodes-b',
};

/** The app `npm run synth` builds, from the example context or the given one. */
export function exampleStack(context: Record<string, string> = exampleContext): { app: App; stack: Stack } {
  const app = new App({ context });
  return { app, stack: buildApp(app) };
}

/** The construct as `Gnt` in stack `Test`, for cluster `prod` and group `nodes-a` unless props say otherwise. */
export function stackWith(
  props: Partial<GracefulNodeTerminationProps> & { setup?: (stack: Stack) => Partial<GracefulNodeTerminationProps> },
) {
  const app = new App();
  const stack = new Stack(app, 'Test');
  const extra = props.setup?.(stack) ?? {};
  const construct = new GracefulNodeTermination(stack, 'Gnt', {
    clusterName: 'prod',
    autoScalingGroupNames: ['nodes-a'],
    ...props,
    ...extra,
  });
  return { app, stack, construct };
}

export function resourcesOf(stack: Stack): Resources {
  return Template.fromStack(stack).toJSON()['Resources'] as Resources;
}

/** Every statement of every AWS::IAM::Policy (identity policies, not trust or resource policies). */
export function statements(resources: Resources): Statement[] {
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .flatMap((r) => (r.Properties['PolicyDocument'] as { Statement: Statement[] }).Statement);
}

/** The statements that grant `action`. */
export function grantsOf(resources: Resources, action: string): Statement[] {
  return statements(resources).filter((s) => [s.Action].flat().includes(action));
}

/** The one resource whose logical ID starts with `name` (or matches it). */
export function resourceNamed(resources: Resources, name: string | RegExp): [string, Resource] {
  const found = Object.entries(resources).filter(([id]) =>
    typeof name === 'string' ? id.startsWith(name) : name.test(id),
  );
  if (found.length !== 1)
    throw new Error(
      `expected one resource named ${String(name)}, found ${found.map(([id]) => id).join(', ') || 'none'}`,
    );
  return found[0]!;
}

/** Apps whose validation plugins already include cdk-nag (buildApp adds it itself). */
export const appsWithNag = new WeakSet<App>();

/**
 * Synthesizes with cdk-nag's AwsSolutions pack as a validation plugin, the way the app
 * runs it: any unacknowledged finding makes synth throw, naming the rule.
 */
export function synthWithNag(app: App): void {
  if (!appsWithNag.has(app)) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  appsWithNag.add(app);
  app.synth({ force: true });
}

/** The test's own VPC and group are fixtures, not part of what we ship. */
export function fixtureOnly(construct: Construct, ...rules: string[]): void {
  for (const rule of rules)
    Validations.of(construct).acknowledge({
      id: `AwsSolutions::AwsSolutions-${rule}`,
      reason: 'test fixture, not part of the construct',
    });
}
