// Every option, in the order the template lists its parameters and the console groups them.
import { clusterOptions } from './cluster-options.js';
import { drainOptions } from './drain-options.js';
import { alarmOptions, placementOptions } from './operations-options.js';
import type { AnyOption, OptionGroup } from './option.js';
import { settleOptions, surgeOptions } from './settle-options.js';
import { terminationPolicyOptions, triggerOptions } from './trigger-options.js';

export const optionGroups: readonly OptionGroup[] = [
  clusterOptions,
  drainOptions,
  settleOptions,
  surgeOptions,
  triggerOptions,
  terminationPolicyOptions,
  alarmOptions,
  placementOptions,
];

export const allOptions: readonly AnyOption[] = optionGroups.flatMap((g) => g.options);
