// The version a build says it is: the base version of package.json on a commit tagged
// v<base> (a release), otherwise <base>-dev.<commits>+<short commit> so that a build from main
// can never pass for the release it precedes. It is what `--version` prints, what the release
// template's Description and the artifacts' file names carry, and the packages' version.
//
// Why `dev.<commits>` and not a bare `dev`: the Python wheel's version comes from the same
// string, and PEP 440 maps a development release only with a number (jsii-pacmak turns
// `0.4.0-dev.312+abc1234` into `0.4.0.dev312+abc1234` and refuses a bare `dev`); the number of
// commits on the branch also makes later dev builds sort after earlier ones.
// https://peps.python.org/pep-0440/#developmental-releases
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface BuildVersion {
  /** What the build says it is: `0.4.0` on a release tag, `0.4.0-dev.312+abc1234` otherwise. */
  readonly version: string;
  /** package.json's version. */
  readonly base: string;
  /** The short commit, undefined outside a git work tree. */
  readonly commit: string | undefined;
  /** True only on a commit tagged v<base>, with no tracked file changed. */
  readonly release: boolean;
}

/** What git says about the work tree; undefined when there is none (a source archive). */
export interface GitFacts {
  readonly commit: string;
  readonly commits: number;
  readonly tags: readonly string[];
  readonly dirty: boolean;
}

/** The version from package.json's base and the work tree's facts. */
export function versionOf(base: string, git: GitFacts | undefined): BuildVersion {
  if (!/^\d+\.\d+\.\d+$/.test(base))
    throw new Error(
      `package.json's version ${JSON.stringify(base)} must be MAJOR.MINOR.PATCH (the build adds the rest)`,
    );
  if (git === undefined) return { version: `${base}-dev.0+unknown`, base, commit: undefined, release: false };
  const release = git.tags.includes(`v${base}`) && !git.dirty;
  const build = git.dirty ? `${git.commit}.dirty` : git.commit;
  return { version: release ? base : `${base}-dev.${git.commits}+${build}`, base, commit: git.commit, release };
}

function gitFacts(root: string): GitFacts | undefined {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return {
      commit: git('rev-parse', '--short=7', 'HEAD'),
      commits: Number(git('rev-list', '--count', 'HEAD')),
      tags: git('tag', '--points-at', 'HEAD').split('\n').filter(Boolean),
      // Untracked files (dist/, caches) do not make a build dirty; a changed tracked file does.
      dirty: git('status', '--porcelain', '--untracked-files=no') !== '',
    };
  } catch {
    return undefined;
  }
}

/**
 * The build's version, read from the repository at `root`. A build step that starts another
 * (package.ts runs npm pack, whose prepack bundles the CLI) passes its version down in
 * GNT_BUILD_VERSION, so the child says the same version while the manifests are rewritten.
 */
export function buildVersion(root: string, env: NodeJS.ProcessEnv = process.env): BuildVersion {
  const { version: base } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const given = env['GNT_BUILD_VERSION'];
  if (given) {
    if (!given.startsWith(base))
      throw new Error(`GNT_BUILD_VERSION ${given} is not a build of package.json's version ${base}`);
    return { version: given, base, commit: /\+([0-9a-f]+)/.exec(given)?.[1], release: given === base };
  }
  return versionOf(base, gitFacts(root));
}

/** A version in a URL path or an S3 key: `+` written as %2B (S3 reads a bare `+` in a path as a space). */
export function urlSafe(name: string): string {
  return name.replaceAll('+', '%2B');
}

// `npx tsx scripts/build-version.ts` prints it (not when bundled into the CLI).
if (import.meta.url.endsWith('.ts') && import.meta.url === `file://${process.argv[1]}`)
  console.log(buildVersion(join(import.meta.dirname, '..')).version);
