// What CloudFormation makes of the release template for given parameter values, as far as the
// tests need it: the AWS::LanguageExtensions transform's Fn::ForEach expanded, conditions
// decided (resources whose condition is false dropped, Fn::If chosen, AWS::NoValue removed), and
// Ref, Fn::Sub, Fn::Join, Fn::Split and Fn::FindInMap of parameters and pseudo parameters resolved. References
// to resources stay as they are, so the template checks can follow them.
import type { Resources } from './fixtures.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const noValue = Symbol('AWS::NoValue');

export const pseudo = {
  'AWS::Partition': 'aws',
  'AWS::Region': 'eu-west-1',
  'AWS::AccountId': '123456789012',
} as const;

function replaceIdentifier(node: Json, id: string, value: string): Json {
  const text = (s: string) =>
    s
      .split(`\${${id}}`)
      .join(value)
      .split(`&{${id}}`)
      .join(value.replace(/[^A-Za-z0-9]/g, ''));
  if (typeof node === 'string') return text(node);
  if (Array.isArray(node)) return node.map((n) => replaceIdentifier(n, id, value));
  if (isObject(node)) {
    if (node['Ref'] === id) return value;
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [text(k), replaceIdentifier(v, id, value)]));
  }
  return node;
}

/** Fn::ForEach in the Resources section, over a list parameter. */
function expandForEach(resources: JsonObject, values: Record<string, string | string[]>): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(resources)) {
    if (!key.startsWith('Fn::ForEach::')) {
      out[key] = value;
      continue;
    }
    const [id, collection, fragment] = value as [string, JsonObject, JsonObject];
    const items = values[String(collection['Ref'])] as string[];
    for (const item of items) Object.assign(out, replaceIdentifier(fragment, id, item));
  }
  return out;
}

export function expandRelease(template: JsonObject, values: Record<string, string | string[]>): Resources {
  const parameters = template['Parameters'] as Record<string, { Type?: string; Default?: string | number }>;
  const value = (name: string): string | string[] => {
    const v = (pseudo as Record<string, string>)[name] ?? values[name] ?? parameters[name]?.Default;
    if (v === undefined) throw new Error(`no value for ${name}`);
    if (typeof v === 'string' && parameters[name]?.Type === 'CommaDelimitedList') return v.split(',');
    return typeof v === 'number' ? String(v) : v;
  };
  const isParameter = (name: string) => name in pseudo || name in parameters;
  const conditions = new Map<string, boolean>();
  const resolve = (node: Json): Json | typeof noValue => {
    if (Array.isArray(node)) return node.map(resolve).filter((n): n is Json => n !== noValue);
    if (!isObject(node)) return node;
    const [fn, arg] = Object.entries(node)[0] ?? [];
    if (fn === 'Ref' && arg === 'AWS::NoValue') return noValue;
    if (fn === 'Ref' && typeof arg === 'string' && isParameter(arg)) return value(arg);
    if (fn === 'Fn::Sub' && typeof arg === 'string')
      return arg
        .replace(/\$\{([^}!]+)\}/g, (m, name: string) => (isParameter(name) ? String(value(name)) : m))
        .split('${!')
        .join('${');
    if (fn === 'Fn::Join') return (resolve((arg as Json[])[1]!) as string[]).join(String((arg as Json[])[0]));
    if (fn === 'Fn::Split') return String(resolve((arg as Json[])[1]!)).split(String((arg as Json[])[0]));
    if (fn === 'Fn::Equals') return resolve((arg as Json[])[0]!) === resolve((arg as Json[])[1]!);
    if (fn === 'Fn::Not') return !resolve((arg as Json[])[0]!);
    if (fn === 'Fn::And') return (arg as Json[]).every((c) => resolve(c) === true);
    if (fn === 'Fn::Or') return (arg as Json[]).some((c) => resolve(c) === true);
    if (fn === 'Fn::FindInMap') {
      const [map, key, column] = (arg as Json[]).map((a) => String(resolve(a)));
      return ((template['Mappings'] as Record<string, Record<string, JsonObject>>)[map!]![key!]![column!] ??
        null) as Json;
    }
    if (fn === 'Fn::If')
      return resolve(conditions.get(String((arg as Json[])[0]))! ? (arg as Json[])[1]! : (arg as Json[])[2]!);
    const entries = Object.entries(node).map(([k, v]) => [k, resolve(v)] as const);
    return Object.fromEntries(entries.filter(([, v]) => v !== noValue)) as JsonObject;
  };
  for (const [name, condition] of Object.entries(template['Conditions'] as JsonObject))
    conditions.set(name, resolve(condition) === true);
  const resources = expandForEach(template['Resources'] as JsonObject, values);
  const kept = Object.entries(resources).filter(
    ([, r]) => !isObject(r) || r['Condition'] === undefined || conditions.get(String(r['Condition'])),
  );
  return Object.fromEntries(kept.map(([id, r]) => [id, resolve(r)])) as Resources;
}
