// npm run release: the CloudFormation template for users without CDK and the Lambda zip it
// deploys, into dist/release/ (then cfn-lint on the template; see package.json). Generated from
// the construct (infra/release.ts); docs/cloudformation.md explains both.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateRelease } from '../infra/release.js';
import { projectRoot } from '../infra/bundling.js';
import { zipDirectory } from './zip.js';

export const releaseDirectory = join(projectRoot, 'dist', 'release');
export const templateFile = 'graceful-node-termination.template.json';
/** Above this `aws cloudformation deploy` needs --s3-bucket to upload the template. */
export const templateBodyLimit = 51_200;

const started = Date.now();
const { version } = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string };
const release = generateRelease(version);
rmSync(releaseDirectory, { recursive: true, force: true });
mkdirSync(releaseDirectory, { recursive: true });
// Compact: the template must stay under the TemplateBody limit (`jq . <file>` shows it indented).
const template = `${JSON.stringify(release.template)}\n`;
writeFileSync(join(releaseDirectory, templateFile), template);
const zip = zipDirectory(release.assetDirectory);
writeFileSync(join(releaseDirectory, release.codeKey), zip);
const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
const parameters = Object.keys(release.template['Parameters'] as object);
console.log(`release ${version} in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
console.log(
  `  dist/release/${templateFile}  ${kib(Buffer.byteLength(template))}, ${Object.keys(release.template['Resources'] as object).length} resource entries, parameters: ${parameters.join(', ')}`,
);
console.log(`  dist/release/${release.codeKey}  ${kib(zip.length)}`);
if (Buffer.byteLength(template) > templateBodyLimit)
  console.warn(`warning: the template is over ${templateBodyLimit} bytes: aws cloudformation deploy needs --s3-bucket`);
