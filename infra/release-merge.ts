// Variants of one template merged into one template with conditions. The base is the construct
// with its defaults; each variant changes one setting (a dimension) and holds under its own
// condition. Where a variant differs from the base, the merged template says Fn::If; list items
// only one side has become Fn::If with AWS::NoValue; resources only a variant has get its
// condition, resources it lacks get the dimension's inverse condition. Dependencies that hold
// only under a condition move from DependsOn (which takes no intrinsic function) into Metadata,
// where a conditional Ref orders the resources just the same.
// https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/conditions-section-structure.html
import { isDeepStrictEqual } from 'node:util';
import { isObject, mapJson, type Json, type JsonObject } from './release-rewrite.js';

export interface ConditionalVariant {
  /** Holds where this variant applies. */
  readonly condition: string;
  /** Holds where it does not: the condition of the resources only the base has. */
  readonly inverse?: string;
  /**
   * Variants whose conditions never hold where this one's inverse does: a resource all of them drop takes this inverse.
   */
  readonly covers?: readonly string[];
  readonly template: JsonObject;
}

/** Whether two conditions never hold at once (a leaf both change needs that). */
export type Exclusive = (a: string, b: string) => boolean;

const missing = Symbol('missing');
type Slot = Json | typeof missing;
interface Change {
  readonly condition: string;
  readonly value: Slot;
}

const noValue: Json = { Ref: 'AWS::NoValue' };
const toJson = (slot: Slot): Json => (slot === missing ? noValue : slot);
const isIntrinsic = (o: JsonObject): boolean => {
  const keys = Object.keys(o);
  return keys.length === 1 && (keys[0] === 'Ref' || keys[0] === 'Condition' || keys[0]!.startsWith('Fn::'));
};
const isPlain = (slot: Slot): slot is JsonObject => slot !== missing && isObject(slot) && !isIntrinsic(slot);

/** The base and its variants as one template: Resources merged resource by resource, the rest node by node. */
export function mergeConditional(
  base: JsonObject,
  variants: readonly ConditionalVariant[],
  exclusive: Exclusive,
): JsonObject {
  const { Resources: baseResources, ...baseRest } = base;
  const withoutResources = (t: JsonObject): JsonObject =>
    Object.fromEntries(Object.entries(t).filter(([key]) => key !== 'Resources'));
  const rest = mergeNode(
    baseRest,
    variants.map((v) => ({ condition: v.condition, value: withoutResources(v.template) })),
    exclusive,
  ) as JsonObject;
  const resources = mergeResourceMaps(baseResources as JsonObject, variants, exclusive);
  return { ...rest, Resources: mapJson(resources, conditionalDependencies) };
}

function mergeResourceMaps(
  base: JsonObject,
  variants: readonly ConditionalVariant[],
  exclusive: Exclusive,
): JsonObject {
  const out: JsonObject = {};
  const ids = [
    ...new Set([...Object.keys(base), ...variants.flatMap((v) => Object.keys(v.template['Resources'] as JsonObject))]),
  ];
  for (const id of ids) {
    const having = variants.filter((v) => (v.template['Resources'] as JsonObject)[id] !== undefined);
    const changes = having.map((v) => ({
      condition: v.condition,
      value: (v.template['Resources'] as JsonObject)[id]!,
    }));
    if (base[id] === undefined) {
      if (having.length !== 1)
        throw new Error(
          `release: ${id} is made by more than one variant (${having.map((v) => v.condition).join(', ')}) but not by ` +
            `the base`,
        );
      out[id] = withCondition(id, changes[0]!.value as JsonObject, having[0]!.condition);
      continue;
    }
    const dropping = variants.filter((v) => !having.includes(v));
    const merged = mergeNode(base[id], changes, exclusive) as JsonObject;
    const covering = dropping.find((v) => dropping.every((d) => d === v || v.covers?.includes(d.condition)));
    const lacking = covering === undefined ? dropping : [covering];
    if (lacking.length > 1)
      throw new Error(
        `release: ${id} is dropped by more than one variant (${lacking.map((v) => v.condition).join(', ')})`,
      );
    const inverse = lacking[0]?.inverse;
    if (lacking.length === 1 && inverse === undefined)
      throw new Error(`release: ${id} is dropped where ${lacking[0]!.condition} holds, which has no inverse condition`);
    out[id] = inverse === undefined ? merged : withCondition(id, merged, inverse);
  }
  return out;
}

function withCondition(id: string, resource: JsonObject, condition: string): JsonObject {
  if (!isObject(resource) || resource['Condition'] !== undefined)
    throw new Error(`release: ${id} already has a condition`);
  return { ...resource, Condition: condition };
}

function mergeNode(base: Slot, changes: readonly Change[], exclusive: Exclusive): Slot {
  const differing = changes.filter((c) => !isDeepStrictEqual(c.value, base));
  if (differing.length === 0) return base;
  if (isPlain(base) && differing.every((c) => isPlain(c.value))) {
    const keys = [...new Set([...Object.keys(base), ...differing.flatMap((c) => Object.keys(c.value as JsonObject))])];
    const out: JsonObject = {};
    for (const key of keys) {
      const merged = mergeNode(
        base[key] ?? missing,
        differing.map((c) => ({ condition: c.condition, value: (c.value as JsonObject)[key] ?? missing })),
        exclusive,
      );
      if (merged !== missing) out[key] = merged;
    }
    return out;
  }
  if (Array.isArray(base) && differing.every((c) => Array.isArray(c.value)))
    return mergeLists(base, differing, exclusive);
  return mergeLeaf(base, differing, exclusive);
}

/** A value two variants both change is an Fn::If chain: sound only when they never hold at once. */
function mergeLeaf(base: Slot, differing: readonly Change[], exclusive: Exclusive): Json {
  for (const [i, a] of differing.entries())
    for (const b of differing.slice(i + 1)) {
      if (!isDeepStrictEqual(a.value, b.value) && !exclusive(a.condition, b.condition)) {
        throw new Error(
          `release: ${a.condition} and ${b.condition} both change ${JSON.stringify(toJson(base)).slice(0, 120)}, and ` +
            `may hold at once`,
        );
      }
    }
  return differing.reduceRight<Json>(
    (otherwise, c) => ({ 'Fn::If': [c.condition, toJson(c.value), otherwise] }),
    toJson(base),
  );
}

/**
 * Lists: each variant aligned with the base (longest common subsequence); between two items
 * both keep, as many removed as inserted pair up as changed items, the rest are items only
 * one side has.
 */
function mergeLists(base: readonly Json[], differing: readonly Change[], exclusive: Exclusive): Json[] {
  const replaced = new Map<number, Change[]>();
  const inserted = new Map<number, Change[]>();
  const add = (map: Map<number, Change[]>, at: number, change: Change) => map.set(at, [...(map.get(at) ?? []), change]);
  for (const { condition, value } of differing) {
    for (const gap of gaps(base, value as Json[])) {
      const paired = gap.removed.length === gap.added.length;
      gap.removed.forEach((at, i) => add(replaced, at, { condition, value: paired ? gap.added[i]! : missing }));
      if (!paired) for (const item of gap.added) add(inserted, gap.before, { condition, value: item });
    }
  }
  const out: Json[] = [];
  for (let at = 0; at <= base.length; at++) {
    for (const c of inserted.get(at) ?? []) out.push({ 'Fn::If': [c.condition, toJson(c.value), noValue] });
    if (at < base.length) out.push(toJson(mergeNode(base[at]!, replaced.get(at) ?? [], exclusive)));
  }
  return out;
}

interface Gap {
  /** Base indices the variant does not keep. */
  readonly removed: number[];
  /** The variant's items in their place. */
  readonly added: Json[];
  /** The base index they stand before. */
  readonly before: number;
}

function gaps(a: readonly Json[], b: readonly Json[]): Gap[] {
  const lcs = Array.from({ length: a.length + 1 }, () => Array.from({ length: b.length + 1 }, () => 0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i]![j] = isDeepStrictEqual(a[i], b[j]) ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: Gap[] = [];
  let gap: Gap = { removed: [], added: [], before: 0 };
  const flush = (before: number) => {
    if (gap.removed.length > 0 || gap.added.length > 0) out.push({ ...gap, before: gap.removed[0] ?? before });
    gap = { removed: [], added: [], before };
  };
  let [i, j] = [0, 0];
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && isDeepStrictEqual(a[i], b[j])) {
      flush(i);
      [i, j] = [i + 1, j + 1];
    } else if (j < b.length && (i === a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) gap.added.push(b[j++]!);
    else gap.removed.push(i++);
  }
  flush(a.length);
  return out;
}

/**
 * DependsOn takes only names: an entry that holds under a condition becomes a conditional Ref in
 * the resource's Metadata, which orders the two resources just as DependsOn does.
 * https://cloudonaut.io/optional-dependson-with-cloudformation-metadata-to-the-rescue
 */
function conditionalDependencies(node: Json): Json {
  if (!isObject(node) || node['Type'] === undefined || node['DependsOn'] === undefined) return node;
  const entries = [node['DependsOn']].flat();
  const fixed = entries.filter((e): e is string => typeof e === 'string');
  if (fixed.length === entries.length) return node;
  const asRef = (e: Json): Json => (typeof e === 'string' ? { Ref: e } : isDeepStrictEqual(e, noValue) ? '' : e);
  const conditional = entries
    .filter((e) => typeof e !== 'string')
    .map((e) => {
      const [condition, yes, no] = (e as JsonObject)['Fn::If'] as [string, Json, Json];
      return { 'Fn::If': [condition, asRef(yes), asRef(no)] };
    });
  const { DependsOn: _, ...rest } = node;
  const metadata = isObject(node['Metadata']) ? node['Metadata'] : {};
  return {
    ...rest,
    ...(fixed.length > 0 ? { DependsOn: fixed } : {}),
    Metadata: { ...metadata, ConditionalDependsOn: conditional },
  };
}
