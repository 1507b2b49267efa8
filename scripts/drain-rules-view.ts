// The drainer's drain rules as the CLI reads them (one import point for scripts/).
export { defaultDrainRuleSettings, type DrainRuleSettings } from '../lambda/cluster/drain-rules.js';
export { podRules, type PodRuleRow } from '../lambda/adapters/kubernetes/drainability.js';
