// The Auto Scaling group tags we read and write, defined once.
/**
 * The Auto Scaling group tag `upgrade --strategy minimal` sets around its refresh: cordon the
 * outdated nodes at the start (managed groups' MINIMAL) instead of only tainting them. Its
 * value names the refresh (refresh/strategy-tag.ts).
 */
export const refreshStrategyTag = 'graceful-node-termination/refresh-strategy';
