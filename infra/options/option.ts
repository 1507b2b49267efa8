// One option a deployer sets without writing CDK code: a CloudFormation parameter of the
// release template and, under its camelCase twin, a `cdk deploy -c` context key of the app.
// The list (options.ts) is the one definition both are generated from: the template's
// parameters, groups and labels (release-parameters.ts), the app's context (context.ts), and
// through the template the Terraform module's variables.
import type { Construct } from 'constructs';
import type { GracefulNodeTerminationProps } from '../props.js';
import type { Kind } from './kinds.js';

export interface Option<T> {
  /** The parameter's name, as the template and the docs spell it (`DrainTimeoutSeconds`). */
  readonly name: string;
  /** What the console shows beside it. */
  readonly label: string;
  /** The parameter's Description: what it does, in one or two sentences. */
  readonly description: string;
  readonly kind: Kind<T>;
  /** Another option this one only makes sense with, set (to `value`): the context refuses it alone. */
  readonly needs?: { readonly option: string; readonly value?: string };
  /** The construct props that mean what the value means. */
  props(value: T, scope: Construct): Partial<GracefulNodeTerminationProps>;
}

/** An option in the list, its value type erased: what reaches props() always comes from its own kind. */
export type AnyOption = Option<unknown>;

/** Options shown together, under one label (the template's ParameterGroups). */
export interface OptionGroup {
  readonly label: string;
  readonly options: readonly AnyOption[];
}

/** `DrainTimeoutSeconds` -> `drainTimeoutSeconds`: the context key of an option. */
export const contextKey = (name: string): string => name.charAt(0).toLowerCase() + name.slice(1);

/** Defines one option, its value type checked against its kind and its props. */
export const option = <T>(o: Option<T>): AnyOption => o as unknown as AnyOption;
