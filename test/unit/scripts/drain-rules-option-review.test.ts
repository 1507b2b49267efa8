// Review: `check --drain-rules @file` with a file it cannot read is a usage error that names the option.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../scripts/command-options.js';
import { rulesFromOptions } from '../../../scripts/drain-rules-option.js';

describe('check --drain-rules @file', () => {
  it('names the option and the file it cannot read, as bad usage (exit 2), not a failure', () => {
    const read = () => rulesFromOptions({ 'drain-rules': '@no-such-rules.json' });
    expect(read).toThrow(UsageError);
    expect(read).toThrow(/--drain-rules: cannot read no-such-rules\.json/);
  });
});
