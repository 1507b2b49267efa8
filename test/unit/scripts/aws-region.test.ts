// The commands' region and credentials come from the SDK's own chain (scripts/aws-access.ts):
// a profile's `region` in ~/.aws/config is asked, --profile and --region are honoured, and with
// no region anywhere the command says so (exit 2) instead of going to us-east-1. Auto Scaling is
// a local HTTP stub (AWS_ENDPOINT_URL_AUTO_SCALING): never a real AWS host.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { noRegionMessage, resolveAwsAccess } from '../../../scripts/aws-access.js';
import { main } from '../../../scripts/check.js';
import { UsageError } from '../../../scripts/command-options.js';

interface Asked {
  readonly authorization: string;
  readonly body: string;
}

const home = mkdtempSync(join(tmpdir(), 'gnt-region-'));
const asked: Asked[] = [];
let stub: Server;
const credentials =
  '[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = secret\n[other]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = secret\n';

const describeGroupsAnswer = `<DescribeAutoScalingGroupsResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><DescribeAutoScalingGroupsResult><AutoScalingGroups><member>
<AutoScalingGroupName>workers</AutoScalingGroupName><MinSize>0</MinSize><MaxSize>4</MaxSize><DesiredCapacity>0</DesiredCapacity><Instances></Instances>
</member></AutoScalingGroups></DescribeAutoScalingGroupsResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>`;

/** A fresh home per case: the SDK caches what it read of ~/.aws by path, for the process. */
function writeAwsFiles(config: string): void {
  const own = mkdtempSync(join(home, 'home-'));
  mkdirSync(join(own, '.aws'));
  writeFileSync(join(own, '.aws', 'config'), config);
  writeFileSync(join(own, '.aws', 'credentials'), credentials);
  vi.stubEnv('HOME', own);
}

beforeAll(async () => {
  mkdirSync(join(home, '.aws'), { recursive: true });
  writeFileSync(
    join(home, '.aws', 'credentials'),
    '[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = secret\n[other]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = secret\n',
  );
  // Never contacted: the group has no instance, so there is no node to read.
  writeFileSync(
    join(home, 'kubeconfig'),
    'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:7"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: prod, context: {cluster: c, user: u}}]\ncurrent-context: prod\n',
  );
  stub = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      asked.push({ authorization: String(req.headers['authorization']), body });
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(describeGroupsAnswer);
    });
  });
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise((resolve) => stub.close(resolve));
  rmSync(home, { recursive: true, force: true });
});

beforeEach(() => {
  asked.length = 0;
  vi.stubEnv('HOME', home);
  for (const name of [
    'AWS_REGION',
    'AWS_DEFAULT_REGION',
    'AWS_PROFILE',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
    'AWS_SESSION_TOKEN',
    'AWS_CONFIG_FILE',
    'AWS_SHARED_CREDENTIALS_FILE',
  ]) {
    vi.stubEnv(name, '');
  }
  vi.stubEnv('AWS_ENDPOINT_URL_AUTO_SCALING', `http://127.0.0.1:${(stub.address() as { port: number }).port}`);
  vi.stubEnv('KUBECONFIG', join(home, 'kubeconfig'));
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe('the region of the operator commands', () => {
  it("check <group> asks Auto Scaling in the profile's region (~/.aws/config), signed for that region", async () => {
    writeAwsFiles('[default]\nregion = eu-west-1\n');
    const printed: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(line));

    await expect(main(['workers'])).resolves.toBe(0);

    expect(asked).toHaveLength(1);
    expect(asked[0]!.body).toMatch(/Action=DescribeAutoScalingGroups/);
    expect(asked[0]!.body).toMatch(/AutoScalingGroupNames\.member\.1=workers/);
    expect(asked[0]!.authorization).toMatch(/Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/autoscaling\/aws4_request/);
    expect(printed).toEqual(['0 node(s) checked: every pod can leave now.']);
  });

  it('--profile and AWS_PROFILE pick the profile, its region and its credentials; --region wins over both', async () => {
    writeAwsFiles('[default]\nregion = eu-west-1\n[profile other]\nregion = ap-south-1\n');
    await expect(resolveAwsAccess({ profile: 'other' })).resolves.toMatchObject({
      region: 'ap-south-1',
      profile: 'other',
    });
    vi.stubEnv('AWS_PROFILE', 'other');
    await expect(resolveAwsAccess({})).resolves.toMatchObject({ region: 'ap-south-1', profile: 'other' });
    await expect(resolveAwsAccess({ region: 'ca-central-1' })).resolves.toMatchObject({ region: 'ca-central-1' });

    vi.spyOn(console, 'log').mockImplementation(() => {});
    await expect(main(['workers', '-o', 'json'])).resolves.toBe(0);
    expect(asked[0]!.authorization).toMatch(/Credential=AKIDOTHER\/\d{8}\/ap-south-1\/autoscaling\/aws4_request/);
  });

  it('with no region anywhere, says so and how to set it (bad usage, exit 2), and asks nobody', async () => {
    writeAwsFiles('[default]\noutput = json\n');
    await expect(resolveAwsAccess({})).rejects.toThrow(new UsageError(noRegionMessage));
    await expect(main(['workers'])).rejects.toBeInstanceOf(UsageError);
    expect(asked).toHaveLength(0);
  });

  it('a profile in neither file is said to be missing, with the profiles there are (not "no AWS region")', async () => {
    writeAwsFiles(
      '[default]\nregion = eu-west-1\n[profile other]\nregion = ap-south-1\n' +
        '[sso-session corp]\nsso_region = eu-west-1\n',
    );
    const missing =
      'the AWS profile nosuch is in neither ~/.aws/config nor ~/.aws/credentials (profiles there: default, other); ' +
      'pass one of them with --profile, or set it up: aws configure --profile nosuch';
    await expect(resolveAwsAccess({ profile: 'nosuch' })).rejects.toThrow(new UsageError(missing));
    vi.stubEnv('AWS_PROFILE', 'nosuch');
    await expect(resolveAwsAccess({})).rejects.toThrow(new UsageError(missing));
    // --region does not make it exist: the credentials would not be found either.
    await expect(main(['workers', '--region', 'eu-west-1'])).rejects.toThrow(missing);
    expect(asked).toHaveLength(0);
  });

  it('reads the files AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE name, as the SDK does', async () => {
    writeAwsFiles('[default]\nregion = eu-west-1\n');
    const own = mkdtempSync(join(home, 'files-'));
    writeFileSync(join(own, 'config'), '[profile ci]\nregion = us-west-2\n');
    writeFileSync(
      join(own, 'credentials'),
      '[ci]\naws_access_key_id = AKIDCI\naws_secret_access_key = secret\n' +
        '[keys-only]\naws_access_key_id = AKIDK\naws_secret_access_key = secret\n',
    );
    vi.stubEnv('AWS_CONFIG_FILE', join(own, 'config'));
    vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', join(own, 'credentials'));
    await expect(resolveAwsAccess({ profile: 'ci' })).resolves.toMatchObject({ region: 'us-west-2', profile: 'ci' });
    // A profile with keys and no region is found: what is missing then is the region.
    await expect(resolveAwsAccess({ profile: 'keys-only' })).rejects.toThrow(new UsageError(noRegionMessage));
    await expect(resolveAwsAccess({ profile: 'default' })).rejects.toThrow(
      `the AWS profile default is in neither ${join(own, 'config')} nor ${join(own, 'credentials')} ` +
        '(profiles there: ci, keys-only)',
    );
  });
});
