// Label selectors as Kubernetes reads them (matchLabels and matchExpressions, ANDed), over
// plain label maps: PodDisruptionBudgets, drain rules and the deployment-wide settings share it.
// https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#resources-that-support-set-based-requirements
export interface SelectorRequirement {
  readonly key: string;
  readonly operator: string;
  readonly values?: readonly string[] | undefined;
}

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>> | undefined;
  readonly matchExpressions?: readonly SelectorRequirement[] | undefined;
}

export const selectorOperators: readonly string[] = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/**
 * True when every requirement holds; an empty selector selects everything. A label is one the map holds itself: a
 * key such as `toString` or `constructor` would otherwise find what every object inherits, and `Exists` hold.
 */
export function matchesSelector(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  const labelOf = (key: string) => (Object.hasOwn(labels, key) ? labels[key] : undefined);
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labelOf(k) !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const value = labelOf(e.key);
    const values = e.values ?? [];
    if (e.operator === 'In' && (value === undefined || !values.includes(value))) return false;
    if (e.operator === 'NotIn' && value !== undefined && values.includes(value)) return false;
    if (e.operator === 'Exists' && value === undefined) return false;
    if (e.operator === 'DoesNotExist' && value !== undefined) return false;
  }
  return true;
}

/** What is wrong with a selector given in configuration (empty: nothing). */
export function selectorProblems(selector: unknown, where: string): string[] {
  if (typeof selector !== 'object' || selector === null || Array.isArray(selector))
    return [`${where} must be an object with matchLabels and/or matchExpressions`];
  const s = selector as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(s))
    if (key !== 'matchLabels' && key !== 'matchExpressions') problems.push(`${where}.${key} is not a selector field`);
  const labels = s['matchLabels'];
  if (
    labels !== undefined &&
    (typeof labels !== 'object' || labels === null || Object.values(labels).some((v) => typeof v !== 'string'))
  ) {
    problems.push(`${where}.matchLabels must map label keys to string values`);
  }
  const expressions = s['matchExpressions'];
  if (expressions !== undefined && !Array.isArray(expressions))
    problems.push(`${where}.matchExpressions must be a list`);
  (Array.isArray(expressions) ? expressions : []).forEach((e: unknown, i) => {
    const r = e as Partial<Record<string, unknown>> | null;
    const at = `${where}.matchExpressions[${i}]`;
    if (r === null || typeof r !== 'object' || typeof r['key'] !== 'string') return problems.push(`${at} needs a key`);
    if (typeof r['operator'] !== 'string' || !selectorOperators.includes(r['operator']))
      return problems.push(`${at}.operator must be one of ${selectorOperators.join(', ')}`);
    const values = r['values'];
    const needsValues = r['operator'] === 'In' || r['operator'] === 'NotIn';
    if (needsValues && (!Array.isArray(values) || values.length === 0 || values.some((v) => typeof v !== 'string')))
      return problems.push(`${at}.values must be a non-empty list of strings`);
    if (!needsValues && values !== undefined && (!Array.isArray(values) || values.length > 0))
      return problems.push(`${at}.values must be empty with ${r['operator']}`);
    return undefined;
  });
  return problems;
}
