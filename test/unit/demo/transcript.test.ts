// The demo output the docs quote (demo/transcript.ts): each quote is a block marked with the
// command that printed it, CI runs each of those commands with --check-docs (which compares the
// run's own output with the block, line shape by line shape), and the shapes leave out only what
// never repeats. The quotes themselves show what the issue asked the demo to show again: the
// target group read and waited for, and observe mode changing nothing.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  differences,
  quotedBlock,
  quotedCommands,
  quotedIn,
  shapeOf,
  shapes,
  withQuote,
} from '../../../demo/transcript.js';

const root = join(import.meta.dirname, '..', '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name.startsWith('.') || ['node_modules', 'cdk.out', 'dist'].includes(e.name)) return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(path);
    return e.name.endsWith('.md') ? [relative(root, path)] : [];
  });
}

/** The block quoting `command`, which must exist. */
function quote(command: string): string {
  const block = quotedBlock(read(quotedIn[command]!), command);
  if (block === undefined) throw new Error(`${quotedIn[command]} has no block for ${command}`);
  return block;
}

describe('line shapes', () => {
  it('leave out times, instance ids, dates, the random part of pod names and counts', () => {
    expect(shapeOf('  + 13.30s  elb         elbv2 DescribeTargetHealth  instance i-00d4af933453a4f8d: draining')).toBe(
      '+<s> elb elbv<n> DescribeTargetHealth instance <instance>: draining',
    );
    expect(shapeOf('[demo  43.2s] summary: 5 pods evicted, 1 batch pod finished in place, 2 budget waits')).toBe(
      '[demo <s>] summary: <n> pod evicted, <n> batch pod finished in place, <n> budget wait',
    );
    expect(
      shapeOf(
        '  +  0.21s  handler     batch wait  not evicting batch/nightly-report-6qdm5 (Job pod): ' +
          'letting it finish (up to 2026-11-28T23:34:20.718Z)',
      ),
    ).toBe(
      '+<s> handler batch wait not evicting batch/nightly-report-<pod> (Job pod): letting it finish (up to <time>)',
    );
    // How many nginx pods the scheduler put on the node is not the code's doing.
    expect(
      shapeOf('runs 8 pods: shop/db-7df9dcdd4f-2hg54, shop/nginx-6bb84c4bb9-ttqmj, shop/nginx-6bb84c4bb9-vwmqd'),
    ).toBe(shapeOf('runs 7 pods: shop/db-74b46875bc-zpjpl, shop/nginx-6bb84c4bb9-cnxr5'));
    expect(
      shapeOf('  Normal  Drained      11s   graceful-node-termination  All pods left the node in 13.3 s (5 evicted).'),
    ).toBe('Normal Drained <n>s graceful-node-termination All pods left the node in <n> s (<n> evicted).');
  });

  it('keep the words: a line told differently, or missing, is a difference', () => {
    const quoted = [
      '+ 1.00s  handler  LB wait  k8s-web (draining): released once none does',
      '+ 2.00s  elb  elbv2 DescribeTargetHealth  instance i-0123456789abcdef0: draining',
    ].join('\n');
    const fresh = '+ 1.10s  handler  LB wait  no target group holds the instance: released once none does';
    expect(differences(quoted, fresh)).toEqual({
      onlyQuoted: [
        '+<s> elb elbv<n> DescribeTargetHealth instance <instance>: draining',
        '+<s> handler LB wait k<n>s-web (draining): released once none does',
      ],
      onlyFresh: ['+<s> handler LB wait no target group holds the instance: released once none does'],
    });
  });

  it('leave out the shapes a race decides (a budget refusing an eviction once), on either side', () => {
    const racy = '  +  0.22s  handler     PDB wait  shop/nginx-6bb84c4bb9-f7pnl held by budget nginx; retrying';
    expect(differences(`a\n${racy}`, 'a')).toEqual({ onlyQuoted: [], onlyFresh: [] });
    expect(shapes(racy)).toEqual([]);
  });
});

describe('the quoted blocks', () => {
  it('are found by their marker and replaced whole', () => {
    const markdown = ['intro', '<!-- demo-output: npm run demo -->', '```', 'old 1', 'old 2', '```', 'after'].join(
      '\n',
    );
    expect(quotedBlock(markdown, 'npm run demo')).toBe('old 1\nold 2');
    expect(quotedBlock(markdown, 'npm run demo -- --observe')).toBeUndefined();
    expect(withQuote(markdown, 'npm run demo', 'new')).toBe(
      ['intro', '<!-- demo-output: npm run demo -->', '```', 'new', '```', 'after'].join('\n'),
    );
  });

  it('every quote of demo output in the Markdown is one the demo checks, and each has its block', () => {
    const quoted = markdownFiles(root).flatMap((file) =>
      quotedCommands(read(file)).map((command) => ({ file, command })),
    );
    expect(quoted).toEqual(
      expect.arrayContaining(Object.entries(quotedIn).map(([command, file]) => ({ file, command }))),
    );
    for (const { file, command } of quoted) {
      expect(quotedIn[command], `${file} quotes ${command}, which demo/transcript.ts does not know`).toBe(file);
      expect(quotedBlock(read(file), command), `${file}: the block after the marker of ${command}`).toBeDefined();
    }
  });

  it('CI runs each quoted command with --check-docs, and the README lists those runs as CI does', () => {
    const ci = read('.ci/run').split('\n');
    const readme = read('README.md').split('\n');
    for (const command of Object.keys(quotedIn)) {
      const checked = `${command}${command.includes(' -- ') ? '' : ' --'} --check-docs`;
      expect(ci, `.ci/run runs ${checked}`).toContain(checked);
      expect(
        readme.some((line) => line.split('#')[0]!.trim() === checked),
        `README.md lists ${checked}`,
      ).toBe(true);
    }
  });

  it('the scale-in shows the settle phase: the target group read and waited for, and the volume', () => {
    const block = quote('npm run demo');
    for (const line of [
      /elb +elbv2 DescribeTargetHealth {2}whole group \(\d+ targets\), instance i-\w+: draining/,
      /handler +LB wait {2}k8s-shop-nginx-\w+ \(draining\): released once none does/,
      /handler +LB let go {2}k8s-shop-nginx-\w+ after [\d.]+ s/,
      /handler +volumes detached {2}pvc-\w+-db after [\d.]+ s/,
      /handler +settled {2}[\d.]+ s after the drain: no load balancer holds the instance/,
      /autoscaling CompleteLifecycleAction CONTINUE/,
      /Normal +TargetsDeregistered /,
    ])
      expect(block).toMatch(line);
    expect(block).not.toMatch(/no target group holds the instance/);
  });

  it('observe mode says what it would do, completes at once and changes nothing', () => {
    const block = quote('npm run demo -- --observe');
    expect(block).toMatch(/handler +observed {2}would evict .*held up now: shop\/db-\w+-\w+ by budget db/);
    expect(block).toMatch(/handler +completed {2}CompleteLifecycleAction CONTINUE, without draining/);
    expect(block).toMatch(/is as it was: still schedulable, not excluded from load balancers/);
    expect(block).toMatch(/Normal +TerminationObserved /);
    expect(block).toMatch(/Warning EvictionWouldBeBlocked pod\/shop\/db-/);
    expect(block).not.toMatch(/handler +(marked|evicted|drain started) /);
  });
});
