// The app's context (`cdk deploy -c key=value`, or cdk.json's "context") read as options.ts
// defines it: every option under its camelCase key, each value checked by the option's own
// parser, an unknown key refused with the nearest known ones, and nothing synthesized without an
// explicit cluster and groups. A new option needs no change here or in app.ts.
import type { App } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { GracefulNodeTerminationProps } from '../props.js';
import { contextKey, type AnyOption } from './option.js';
import { allOptions } from './options.js';

/** A context the app cannot use: every problem said with its key, its value and what is expected. */
export class ContextError extends Error {
  override readonly name = 'ContextError';
}

/** Keys of the app itself (app.ts), not options of the construct. */
export const appContextKeys: readonly string[] = ['stackName'];

/**
 * aws-cdk's own context, never ours to refuse: its settings (`aws:cdk:...`), feature flags
 * (`@aws-cdk/...`), cached lookups (`availability-zones:account=...`), and the CLI's keys.
 */
export const isCdkOwnKey = (key: string): boolean =>
  key.startsWith('@') ||
  key.includes(':') ||
  key.startsWith('cdk-') ||
  key.startsWith('aws-cdk') ||
  key === 'acknowledged-issue-numbers';

export const deployCommand =
  'npx cdk deploy -c clusterName=<your EKS cluster> -c autoScalingGroupNames=<group>[,<group>...]';

/** cdk.json may hold lists, numbers and booleans; `-c` gives text. */
const textOf = (raw: unknown): string =>
  raw === undefined || raw === null ? '' : Array.isArray(raw) ? raw.join(',') : String(raw).trim();

/** The options the context sets, each with its parsed value; a ContextError names every problem. */
export function readOptions(app: App, options: readonly AnyOption[] = allOptions): ReadonlyMap<AnyOption, unknown> {
  const context = app.node.getAllContext() as Record<string, unknown>;
  const byKey = new Map(options.map((o) => [contextKey(o.name), o]));
  const known = [...byKey.keys(), ...appContextKeys];
  const problems = Object.keys(context)
    .filter((key) => !known.includes(key) && !isCdkOwnKey(key))
    .map((key) => `${key} is not an option (nearest: ${nearest(key, known).join(', ')})`);
  const values = new Map<AnyOption, unknown>();
  for (const [key, o] of byKey) {
    const text = textOf(context[key]);
    if (text === '') continue;
    const value = o.kind.parse(text);
    if (value === undefined) problems.push(`${key}=${text} is invalid: expected ${o.kind.accepts}`);
    else values.set(o, value);
  }
  problems.push(...unmetNeeds(options, context), ...missing(options, context));
  if (problems.length > 0) {
    throw new ContextError(
      `the context cannot be used:\n${problems.map((p) => `  ${p}`).join('\n')}\n` +
        `Every option: docs/deploy.md#options. Deploy: ${deployCommand}`,
    );
  }
  return values;
}

/** The construct's props for the options read: options that set parts of one prop add up. */
export function optionProps(values: ReadonlyMap<AnyOption, unknown>, scope: Construct): GracefulNodeTerminationProps {
  const props: Record<string, unknown> = {};
  for (const [o, value] of values) {
    for (const [key, part] of Object.entries(o.props(value, scope))) {
      const before = props[key];
      props[key] = isPlain(before) && isPlain(part) ? { ...before, ...part } : part;
    }
  }
  return props as GracefulNodeTerminationProps;
}

/** A plain object (terminationPolicy, surgeBeforeEvict), not a CDK object or a Duration. */
const isPlain = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

function unmetNeeds(options: readonly AnyOption[], context: Record<string, unknown>): string[] {
  return options.flatMap((o) => {
    if (o.needs === undefined || textOf(context[contextKey(o.name)]) === '') return [];
    const other = textOf(context[contextKey(o.needs.option)]);
    const met = o.needs.value === undefined ? other !== '' : other === o.needs.value;
    const wanted = `${contextKey(o.needs.option)}${o.needs.value === undefined ? '' : `=${o.needs.value}`}`;
    return met ? [] : [`${contextKey(o.name)} needs ${wanted}`];
  });
}

function missing(options: readonly AnyOption[], context: Record<string, unknown>): string[] {
  return options
    .filter((o) => o.kind.parameter['Default'] === undefined && textOf(context[contextKey(o.name)]) === '')
    .map((o) => `${contextKey(o.name)} is required: the cluster and its groups are never assumed`);
}

/** The known keys closest to `key` (edit distance, case ignored), nearest first. */
export function nearest(key: string, known: readonly string[], count = 3): string[] {
  const distance = (a: string, b: string): number => {
    let row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      const next = [i];
      for (let j = 1; j <= b.length; j++) {
        next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      }
      row = next;
    }
    return row[b.length]!;
  };
  const lower = key.toLowerCase();
  return [...known]
    .map((k) => ({ k, d: distance(lower, k.toLowerCase()) }))
    .sort((a, b) => a.d - b.d || a.k.localeCompare(b.k))
    .slice(0, count)
    .map(({ k }) => k);
}
