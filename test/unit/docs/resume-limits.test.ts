// docs/limits.md, "Resuming a lost hand-off": every number the page quotes is the one the rule
// computes (lambda/shared/resume-window.ts), so the page cannot drift from what the
// reconciler, the cold start and the construct do.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  defaultInterval,
  latestResumeSeconds,
  longestIntervalMinutes,
  shortestHeartbeatSeconds,
  staleAfterSeconds,
  stretchSeconds,
} from '../../../lambda/shared/resume-window.js';

const page = readFileSync(new URL('../../../docs/limits.md', import.meta.url), 'utf8');
const margin = 20;

/** The rows of the table between `<!-- name:start ... -->` and `<!-- name:end -->`, cells trimmed, header dropped. */
function rows(name: string): string[][] {
  const start = page.indexOf(`<!-- ${name}:start`);
  const end = page.indexOf(`<!-- ${name}:end -->`);
  expect(start, `the ${name} markers`).toBeGreaterThan(0);
  return page
    .slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('|') && !line.startsWith('|---'))
    .slice(1)
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

const seconds = (cell: string) => Number(/^([\d.]+) s\b/.exec(cell)![1]);
const minutes = (n: number) => (n >= 1 ? `${n} min` : 'none');

describe('docs/limits.md: resuming a lost hand-off', () => {
  it('quotes, for each heartbeat timeout, the stretch, the staleness, the longest and default intervals and the latest resume the rule computes', () => {
    const table = rows('resume-table');
    expect(table.length).toBeGreaterThanOrEqual(8);
    for (const [heartbeatCell, stretch, stale, longest, byDefault, latest] of table) {
      const t = { heartbeatTimeoutSeconds: seconds(heartbeatCell!), invocationMarginSeconds: margin };
      const interval = defaultInterval(t);
      expect([stretch, stale, longest, byDefault, latest], heartbeatCell).toEqual([
        `${stretchSeconds(t)} s`,
        `${staleAfterSeconds(t)} s`,
        minutes(longestIntervalMinutes(t)),
        interval >= 1 ? minutes(interval) : 'refused',
        interval >= 1 ? `${latestResumeSeconds(t, interval)} s` : 'never',
      ]);
    }
    // The range's ends and the default are there.
    expect(table.map((r) => seconds(r[0]!))).toEqual(expect.arrayContaining([30, 749, 750, 1800, 7200]));
  });

  it('quotes the shortest heartbeat timeout of each interval', () => {
    for (const [interval, heartbeat] of rows('resume-intervals')) {
      expect(heartbeat, interval).toBe(
        `${shortestHeartbeatSeconds(Number(/^(\d+) min$/.exec(interval!)![1]), margin)} s`,
      );
    }
    expect(shortestHeartbeatSeconds(104, margin)).toBeUndefined();
  });

  it('quotes the bound with the defaults and the thresholds in its prose', () => {
    const t = { heartbeatTimeoutSeconds: 1800, invocationMarginSeconds: margin };
    const latest = latestResumeSeconds(t, 5);
    expect(page).toContain(
      `resumed at most ${latest} s after its last write,\n${1800 - latest} s before Auto Scaling would end the action`,
    );
    expect(page).toContain(`from ${shortestHeartbeatSeconds(1, margin)} s on`);
    expect(page).toContain(`the default 5-minute schedule needs ${shortestHeartbeatSeconds(5, margin)} s`);
    expect(page).toContain(
      `no interval over ${longestIntervalMinutes({ heartbeatTimeoutSeconds: 7200, invocationMarginSeconds: margin })} minutes`,
    );
    expect(page).toContain('**`S + 30 s + I + 60 s <= H`**');
    expect(page).toContain(`\`HeartbeatTimeoutSeconds\` is at least ${shortestHeartbeatSeconds(5, margin)}`);
  });
});
