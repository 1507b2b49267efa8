// Surge before evict (eviction/surge-gate.ts, docs/surge.md): defined here, spread into the one
// list (config-variables.ts), so the construct, the handler and the docs' table share them.
import { matchesSelector, type SelectorRequirement } from './label-selector.js';
import { variable, flag, integer } from './variable.js';

const list = (raw: string): readonly string[] | undefined => {
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return items.length > 0 ? items : undefined;
};

/** One requirement of an equality-based label selector: `key=value`, `key!=value`, `key`, `!key`. */
export interface LabelRequirement {
  readonly key: string;
  readonly op: '=' | '!=' | 'exists' | '!exists';
  readonly value?: string | undefined;
}

const labelKey = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** `app=web,tier!=batch,canary,!legacy`: every requirement must hold (as kubectl's -l). */
export function parseSelector(raw: string): readonly LabelRequirement[] | undefined {
  const out: LabelRequirement[] = [];
  for (const part of raw.split(',').map((s) => s.trim())) {
    if (part === '') continue;
    const m = /^(!?)([^=!]+?)\s*(?:(!=|==|=)\s*(.*))?$/.exec(part);
    if (m === null) return undefined;
    const [, not, key = '', op, value] = m;
    if (!labelKey.test(key) || (not && op)) return undefined;
    if (op === undefined) out.push({ key, op: not ? '!exists' : 'exists' });
    else if (labelValue.test(value!.trim())) out.push({ key, op: op === '!=' ? '!=' : '=', value: value!.trim() });
    else return undefined;
  }
  return out.length > 0 ? out : undefined;
}

export const formatSelector = (s: readonly LabelRequirement[]): string =>
  s.map((r) => (r.op === 'exists' ? r.key : r.op === '!exists' ? `!${r.key}` : `${r.key}${r.op}${r.value}`)).join(',');

/** Whether the labels meet every requirement: the equality form as the set-based selector reads it. */
export function selects(s: readonly LabelRequirement[], labels: Readonly<Record<string, string>>): boolean {
  return matchesSelector({ matchExpressions: s.map(asExpression) }, labels);
}

const asExpression = (r: LabelRequirement): SelectorRequirement =>
  r.op === 'exists' || r.op === '!exists'
    ? { key: r.key, operator: r.op === 'exists' ? 'Exists' : 'DoesNotExist' }
    : { key: r.key, operator: r.op === '=' ? 'In' : 'NotIn', values: [r.value!] };

export const surgeVariables = {
  surgeBeforeEvict: variable<boolean>({
    name: 'SURGE_BEFORE_EVICT',
    description:
      'Surge before evict (docs/surge.md), opt-in: before evicting the last Ready pod of a Deployment that is off ' +
      'the nodes leaving, restart the Deployment as `kubectl rollout restart` does and wait ' +
      '(SURGE_TIMEOUT_SECONDS) for a replacement Ready elsewhere. Applies to Deployments (or pods) annotated ' +
      'graceful-node-termination/surge-before-evict: "true" and to those SURGE_NAMESPACES or SURGE_POD_SELECTOR ' +
      'name. Grants patch on Deployments, fenced by a ValidatingAdmissionPolicy to that one annotation.',
    accepts: 'true or false',
    default: false,
    parse: flag,
    format: String,
  }),
  surgeNamespaces: variable<readonly string[]>({
    name: 'SURGE_NAMESPACES',
    description:
      'With SURGE_BEFORE_EVICT: the Deployments of these namespaces surge without an annotation (one annotated ' +
      '"false" does not).',
    accepts: 'a comma-separated list of namespaces',
    parse: list,
    format: (v) => v.join(','),
  }),
  surgePodSelector: variable<readonly LabelRequirement[]>({
    name: 'SURGE_POD_SELECTOR',
    description:
      "With SURGE_BEFORE_EVICT: the Deployments whose pod template's labels this selector matches surge without " +
      'an annotation.',
    accepts: 'an equality-based label selector: key=value, key!=value, key or !key, comma-separated (all must hold)',
    parse: parseSelector,
    format: formatSelector,
  }),
  surgeTimeoutSeconds: variable<number>({
    name: 'SURGE_TIMEOUT_SECONDS',
    description:
      "How long one pod waits for its Deployment's replacement to be Ready on a node that is not leaving; then it " +
      'is evicted as any other (its budget decides) and the deadline policy applies. Never past the drain ' +
      'deadline.',
    accepts: 'an integer from 10 to 3600',
    default: 300,
    parse: integer(10, 3600),
    format: String,
  }),
  surgeUntouchableManagers: variable<readonly string[]>({
    name: 'SURGE_UNTOUCHABLE_MANAGERS',
    description:
      'Deployments written by one of these field managers (metadata.managedFields) are never restarted: a GitOps ' +
      'tool that would undo or fight the restart (argocd-controller, kustomize-controller, helm-controller...), ' +
      'or `manager/scale` for whoever scales through the scale subresource (kube-controller-manager/scale: a ' +
      'HorizontalPodAutoscaler). Refused with SurgeRefused (untouchable-owner).',
    accepts: 'a comma-separated list of field manager names, each optionally /subresource',
    parse: list,
    format: (v) => v.join(','),
  }),
} as const;

export interface SurgeConfig {
  readonly surgeBeforeEvict: boolean;
  readonly surgeNamespaces: readonly string[] | undefined;
  readonly surgePodSelector: readonly LabelRequirement[] | undefined;
  readonly surgeTimeoutSeconds: number;
  readonly surgeUntouchableManagers: readonly string[] | undefined;
}

export interface SurgeConfigInput {
  readonly surgeBeforeEvict?: boolean;
  readonly surgeNamespaces?: readonly string[];
  /** As SURGE_POD_SELECTOR takes it. */
  readonly surgePodSelector?: string;
  readonly surgeTimeoutSeconds?: number;
  readonly surgeUntouchableManagers?: readonly string[];
}

/** What the drain needs of the surge configuration; undefined: off. */
export interface SurgeSettings {
  readonly namespaces: ReadonlySet<string>;
  readonly podSelector: readonly LabelRequirement[] | undefined;
  readonly timeoutMs: number;
  readonly untouchableManagers: readonly string[];
}

export function surgeSettings(c: SurgeConfig): SurgeSettings | undefined {
  if (!c.surgeBeforeEvict) return undefined;
  return {
    namespaces: new Set(c.surgeNamespaces ?? []),
    podSelector: c.surgePodSelector,
    timeoutMs: c.surgeTimeoutSeconds * 1000,
    untouchableManagers: c.surgeUntouchableManagers ?? [],
  };
}
