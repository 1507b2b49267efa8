// The JSON rewrites that turn a synthesized template into the release template's parameterised
// form: sentinel values into Ref / Fn::Sub, per-group resources into one Fn::ForEach, lists of
// groups into the list parameter (release-merge.ts merges the variants into conditions).
// Every rewrite is exact or throws: nothing of a sentinel may be left behind.
import { isDeepStrictEqual } from 'node:util';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Maps a JSON tree bottom-up: `fn` may replace a node (its children already mapped). */
export function mapJson(node: Json, fn: (node: Json) => Json): Json {
  if (Array.isArray(node)) return fn(node.map((n) => mapJson(n, fn)));
  if (isObject(node)) return fn(Object.fromEntries(Object.entries(node).map(([k, v]) => [k, mapJson(v, fn)])));
  return fn(node);
}

/** Every occurrence of `from` in strings and keys, replaced by `to`. */
export function replaceText(node: Json, from: string, to: string): Json {
  if (typeof node === 'string') return node.split(from).join(to);
  if (Array.isArray(node)) return node.map((n) => replaceText(n, from, to));
  if (isObject(node))
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k.split(from).join(to), replaceText(v, from, to)]));
  return node;
}

export const containsText = (node: Json, text: string): boolean => JSON.stringify(node).includes(text);

/**
 * Scalars and lists equal to a sentinel become its replacement (`exact`, keyed by the JSON of the
 * value: numbers, enum values and lists, which must never match inside text; mostly a `Ref`);
 * strings that contain a `within` sentinel become `Fn::Sub` with `${parameter}` in its place
 * (inside an existing Fn::Sub, in place), and one equal to it a `Ref`.
 */
export function parameterise(node: Json, exact: ReadonlyMap<string, Json>, within: ReadonlyMap<string, string>): Json {
  const substitute = (text: string): string =>
    [...within].reduce((s, [sentinel, parameter]) => s.split(sentinel).join(`\${${parameter}}`), text);
  return mapJson(node, (n) => {
    if (isObject(n) && typeof n['Fn::Sub'] === 'string') return { 'Fn::Sub': substitute(n['Fn::Sub']) };
    const replacement = exact.get(JSON.stringify(n));
    if (replacement !== undefined) return replacement;
    if (typeof n === 'string' && within.has(n)) return { Ref: within.get(n)! };
    if (typeof n !== 'string' || ![...within.keys()].some((s) => n.includes(s))) return n;
    return { 'Fn::Sub': substitute(n.split('${').join('${!')) };
  });
}

export interface GroupLoop {
  /** The two sentinel group names the template was synthesized with. */
  readonly groups: readonly [string, string];
  /** The CommaDelimitedList parameter. */
  readonly parameter: string;
  /** Fn::ForEach's identifier. */
  readonly identifier: string;
  /** Fn::ForEach's loop name. */
  readonly loopName: string;
}

/**
 * Resources made once per group (the lifecycle hooks) become one Fn::ForEach over the list
 * parameter: each first-group resource must have a second-group twin equal to it but for the
 * name. Their logical IDs lose CDK's hash and carry `&{identifier}` (the name, alphanumerics only).
 */
export function loopPerGroupResources(resources: JsonObject, loop: GroupLoop): JsonObject {
  const [first, second] = loop.groups;
  const rest: JsonObject = {};
  const perGroup: JsonObject = {};
  const twins = new Map(
    Object.entries(resources).filter(([, r]) => containsText(r, second) && !containsText(r, first)),
  );
  const twinIds = new Set(twins.keys());
  for (const [id, resource] of Object.entries(resources)) {
    if (twinIds.has(id)) continue;
    if (!containsText(resource, first) || containsText(resource, second)) {
      rest[id] = resource;
      continue;
    }
    const twin = [...twins].find(([, r]) => isDeepStrictEqual(r, replaceText(resource, first, second)));
    if (twin === undefined)
      throw new Error(`release: ${id} names group ${first} but has no twin for ${second}: not a per-group resource`);
    twins.delete(twin[0]);
    const key = id
      .replace(/[0-9A-F]{8}$/, '')
      .split(first)
      .join(`&{${loop.identifier}}`);
    if (key === id.replace(/[0-9A-F]{8}$/, ''))
      throw new Error(`release: per-group resource ${id} does not carry the group's name in its logical ID`);
    perGroup[key] = mapJson(resource, (n) =>
      n === first
        ? { Ref: loop.identifier }
        : typeof n === 'string'
          ? n.split(first).join(`\${${loop.identifier}}`)
          : n,
    );
  }
  if (twins.size > 0) throw new Error(`release: ${[...twins.keys()].join(', ')} name only group ${second}`);
  if (Object.keys(perGroup).length === 0) return rest;
  return { ...rest, [`Fn::ForEach::${loop.loopName}`]: [loop.identifier, { Ref: loop.parameter }, perGroup] };
}

/** Marks a rewritten list of group ARNs whose statement must pin what the wildcards left open. */
const pinKey = 'release:pin';

/**
 * Lists of one value per group become values of the list parameter: the names themselves a
 * `Ref`; ARNs of the groups (an Fn::Join of pseudo parameters and the name) an Fn::Split of the
 * names joined with the ARN's prefix. A Join's delimiter cannot hold an intrinsic function, so
 * partition, region and account are `*` there, and the statement pins them again (pinStatements).
 * `a,b` (the handler's environment) becomes the names joined with ",".
 */
export function rewriteGroupLists(node: Json, loop: GroupLoop): Json {
  const [first, second] = loop.groups;
  const list = { Ref: loop.parameter };
  const rewritten = mapJson(node, (n): Json => {
    if (n === `${first},${second}`) return { 'Fn::Join': [',', list] };
    if (
      !Array.isArray(n) ||
      n.length !== 2 ||
      !containsText(n[0]!, first) ||
      !isDeepStrictEqual(replaceText(n[0]!, first, second), n[1])
    )
      return n;
    if (n[0] === first) return list;
    const join = isObject(n[0]) ? n[0]['Fn::Join'] : undefined;
    const parts = Array.isArray(join) && join[0] === '' && Array.isArray(join[1]) ? join[1] : [];
    const pseudo = (p: Json) => isObject(p) && typeof p['Ref'] === 'string' && p['Ref'].startsWith('AWS::');
    const last = parts.at(-1);
    if (
      parts.length === 0 ||
      typeof last !== 'string' ||
      !last.endsWith(first) ||
      !parts.every((p) => typeof p === 'string' || pseudo(p))
    ) {
      throw new Error(`release: cannot rewrite the per-group list ${JSON.stringify(n[0])}`);
    }
    const prefix = (ref: (name: string) => string) =>
      parts
        .map((p) => (typeof p === 'string' ? p : ref(String((p as JsonObject)['Ref']))))
        .join('')
        .slice(0, -first.length);
    const wild = prefix(() => '*');
    return {
      [pinKey]: `${prefix((name) => `\${${name}}`)}*`,
      value: { 'Fn::Split': [',', { 'Fn::Join': ['', [wild, { 'Fn::Join': [`,${wild}`, list] }]] }] },
    };
  });
  const pinned = mapJson(rewritten, pinStatement);
  if (containsText(pinned, pinKey)) throw new Error('release: a list of group ARNs outside a policy statement');
  for (const group of loop.groups)
    if (containsText(pinned, group)) throw new Error(`release: group ${group} left in the template`);
  return pinned;
}

/**
 * A policy statement whose Resource lists group ARNs with wildcards gets aws:RequestedRegion
 * (the account and partition are the role's own: Auto Scaling has no cross-account access);
 * one whose condition lists them gets the exact prefix as a second condition on the same key.
 */
function pinStatement(node: Json): Json {
  if (!isObject(node) || node['Effect'] === undefined) return node;
  const statement = { ...node };
  const condition: JsonObject = isObject(statement['Condition']) ? { ...statement['Condition'] } : {};
  const resource = statement['Resource'];
  if (isObject(resource) && resource[pinKey] !== undefined) {
    statement['Resource'] = resource['value']!;
    condition['StringEquals'] = {
      ...(isObject(condition['StringEquals']) ? condition['StringEquals'] : {}),
      'aws:RequestedRegion': { Ref: 'AWS::Region' },
    };
  }
  for (const [operator, keys] of Object.entries(condition)) {
    if (!isObject(keys)) continue;
    for (const [key, value] of Object.entries(keys)) {
      if (!isObject(value) || value[pinKey] === undefined) continue;
      condition[operator] = { ...(condition[operator] as JsonObject), [key]: value['value']! };
      const like = isObject(condition['StringLike']) ? condition['StringLike'] : {};
      if (like[key] !== undefined) throw new Error(`release: StringLike ${key} is taken`);
      condition['StringLike'] = { ...like, [key]: { 'Fn::Sub': value[pinKey]! } };
    }
  }
  return Object.keys(condition).length > 0 ? { ...statement, Condition: condition } : statement;
}

/** The first path where two JSON trees differ, for an error that says where. */
export function firstDifference(a: Json, b: Json, path = ''): string | undefined {
  if (isDeepStrictEqual(a, b)) return undefined;
  if ((Array.isArray(a) && Array.isArray(b)) || (isObject(a) && isObject(b))) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const found = firstDifference((a as JsonObject)[k] ?? null, (b as JsonObject)[k] ?? null, `${path}/${k}`);
      if (found) return found;
    }
  }
  return `${path}: ${JSON.stringify(a)?.slice(0, 200)} vs ${JSON.stringify(b)?.slice(0, 200)}`;
}
