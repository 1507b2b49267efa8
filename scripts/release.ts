// npm run release: every artifact of a release, at the build's version (build-version.ts), into
// dist/release/, with SHA256SUMS and an SBOM:
//   graceful-node-termination-<v>.template.json         the CloudFormation template (cfn-lint checked)
//   graceful-node-termination-<v>-lambda-<hash>.zip     the Lambda code it deploys
//   cdk-graceful-node-termination@<v>.jsii.tgz          the construct, npm  (npm run package)
//   cdk_graceful_node_termination-<pep440>-py3-none-any.whl   the construct, Python
//   graceful-node-termination-<v>.tgz                   the CLI (npm)
//   graceful-node-termination-terraform-<v>.zip         the Terraform module with the template and zip inside
//   graceful-node-termination-<v>.cdx.json              CycloneDX SBOM of the runtime dependencies
// The template and zip are generated from the construct (infra/release.ts); docs/packaging.md
// and docs/cloudformation.md explain them.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../infra/bundling.js';
import { generateRelease } from '../infra/release.js';
import { buildVersion } from './build-version.js';
import { checksums, cycloneDx, terraformArchive } from './release-artifacts.js';
import { moduleDrift } from './terraform-module.js';
import { zipDirectory } from './zip.js';

export const releaseDirectory = join(projectRoot, 'dist', 'release');
/** Above this `aws cloudformation deploy` needs --s3-bucket to upload the template. */
export const templateBodyLimit = 51_200;

const started = Date.now();
const { version } = buildVersion(projectRoot);
process.env['GNT_BUILD_VERSION'] = version;
const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
const out = (name: string) => join(releaseDirectory, name);
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

function step(what: string, run: () => string | void): void {
  const t0 = Date.now();
  const said = run();
  console.log(`release: ${what}${said ? `: ${said}` : ''} (${seconds(t0)})`);
}

rmSync(releaseDirectory, { recursive: true, force: true });
mkdirSync(releaseDirectory, { recursive: true });

const templateFile = `graceful-node-termination-${version}.template.json`;
const release = generateRelease(version);
step('the template and the Lambda zip', () => {
  // Compact: under the TemplateBody limit where it fits (`jq . <file>` shows it indented).
  const template = `${JSON.stringify(release.template)}\n`;
  writeFileSync(out(templateFile), template);
  writeFileSync(out(release.codeKey), zipDirectory(release.assetDirectory));
  const resources = Object.keys(release.template['Resources'] as object).length;
  const parameters = Object.keys(release.template['Parameters'] as object).length;
  if (Buffer.byteLength(template) > templateBodyLimit)
    console.warn(`release: the template is over ${templateBodyLimit} bytes: deploy it from S3 (--s3-bucket)`);
  return `${templateFile} ${kib(Buffer.byteLength(template))}, ${resources} resource entries, ${parameters} parameters; ${release.codeKey}`;
});

step('cfn-lint on the template', () => {
  execFileSync('bash', [join(projectRoot, 'scripts', 'cfn-lint.sh'), out(templateFile)], { stdio: 'inherit' });
});

step("the Terraform module's settings and outputs are the template's", () => {
  const drift = moduleDrift(release.template);
  if (drift) throw new Error(`${drift}: run npm run terraform:generate`);
});

step('the construct and CLI packages (npm run package)', () => {
  execFileSync('npx', ['tsx', join(projectRoot, 'scripts', 'package.ts')], { stdio: 'inherit', cwd: projectRoot });
  const dist = join(projectRoot, 'dist');
  const picked = [
    ...readdirSync(join(dist, 'js'))
      .filter((f) => f.endsWith('.jsii.tgz'))
      .map((f) => join(dist, 'js', f)),
    ...readdirSync(join(dist, 'python'))
      .filter((f) => f.endsWith('.whl'))
      .map((f) => join(dist, 'python', f)),
    ...readdirSync(join(dist, 'cli'))
      .filter((f) => f.endsWith('.tgz'))
      .map((f) => join(dist, 'cli', f)),
  ];
  if (picked.length !== 3)
    throw new Error(`expected one construct tarball, one wheel and one CLI tarball, found ${picked.join(', ')}`);
  for (const file of picked) copyFileSync(file, out(file.slice(file.lastIndexOf('/') + 1)));
});

step('the Terraform module archive', () => {
  const name = `graceful-node-termination-terraform-${version}.zip`;
  writeFileSync(out(name), terraformArchive(join(projectRoot, 'terraform'), [out(templateFile), out(release.codeKey)]));
  return name;
});

step('the SBOM (npm sbom, CycloneDX 1.5, from package-lock.json)', () => {
  const name = `graceful-node-termination-${version}.cdx.json`;
  const raw = execFileSync(
    'npm',
    ['sbom', '--sbom-format=cyclonedx', '--sbom-type=application', '--omit=dev', '--package-lock-only'],
    { cwd: projectRoot, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  writeFileSync(out(name), `${JSON.stringify(cycloneDx(raw, version), null, 2)}\n`);
  return name;
});

step('SHA256SUMS', () => {
  writeFileSync(out('SHA256SUMS'), checksums(releaseDirectory));
});

console.log(`release ${version} in ${seconds(started)}: dist/release/`);
for (const name of readdirSync(releaseDirectory).sort()) console.log(`  ${name}`);
