// The group tag `upgrade --strategy minimal` sets so the drainer cordons (rather than taints)
// the outdated nodes when the refresh starts. The value names its owner: `minimal@<epoch s>`
// while the command is about to start the refresh (a few seconds), `minimal:<refresh id>`
// once it has. A tag left behind by a killed command or bound to a refresh that is over is
// never read as leave to cordon a whole group, and the reconciler removes it.
export const pendingTagSeconds = 300;

export function pendingStrategyTag(nowMs: number): string {
  return `minimal@${Math.floor(nowMs / 1000)}`;
}

export function boundStrategyTag(refreshId: string): string {
  return `minimal:${refreshId}`;
}

type Parsed = { readonly bound: string } | { readonly pendingSinceMs: number } | { readonly unknown: string };

function parse(value: string): Parsed {
  if (value.startsWith('minimal:')) return { bound: value.slice('minimal:'.length) };
  const pending = /^minimal@(\d+)$/.exec(value);
  if (pending) return { pendingSinceMs: Number(pending[1]) * 1000 };
  return { unknown: value };
}

/** Whether the tag asks for the minimal strategy for this refresh, now. */
export function isMinimalFor(value: string | undefined, refreshId: string, nowMs: number): boolean {
  if (value === undefined) return false;
  const p = parse(value);
  if ('bound' in p) return p.bound === refreshId;
  if ('pendingSinceMs' in p) return nowMs - p.pendingSinceMs < pendingTagSeconds * 1000;
  return false;
}

/** The refresh a bound tag names, for the reconciler to ask about. */
export function boundRefresh(value: string): string | undefined {
  const p = parse(value);
  return 'bound' in p ? p.bound : undefined;
}

/**
 * Whether the tag has no owner left: its refresh is not active, its command is long gone, or it is not ours to read.
 */
export function isStaleStrategyTag(value: string, activeRefreshIds: ReadonlySet<string>, nowMs: number): boolean {
  const p = parse(value);
  if ('bound' in p) return !activeRefreshIds.has(p.bound);
  if ('pendingSinceMs' in p) return nowMs - p.pendingSinceMs >= pendingTagSeconds * 1000;
  // A plain `minimal` from the version before owner-named tags: it would cordon the next refresh anyone starts.
  return true;
}
