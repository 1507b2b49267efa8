// What `upgrade` says about the group's custom termination policy: an instance refresh's
// terminations go through it, so outside its maintenance windows the refresh waits. The windows
// are the function's own variables, read with lambda:GetFunctionConfiguration (one SigV4-signed
// GET of Lambda's REST API, AWS_ENDPOINT_URL_LAMBDA honoured; no SDK client for one call).
// https://docs.aws.amazon.com/lambda/latest/api/API_GetFunctionConfiguration.html
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { nextOpening, openWindow, parseWindows } from '../lambda/shared/maintenance-windows.js';

/** A Lambda function's ARN, unqualified or with a version or alias: what a group's custom termination policy names. */
export const lambdaArnPattern =
  /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_-]+)?$/;

type LambdaAccess = {
  readonly region: string;
  readonly credentials: AwsCredentialIdentityProvider;
  readonly endpoint?: string | undefined;
};

/** A function's environment variables (name or ARN), or why they could not be read. */
export async function functionVariables(
  fn: string,
  o: LambdaAccess,
): Promise<{ readonly variables: Readonly<Record<string, string>> } | { readonly unreadable: string }> {
  const base = new URL(o.endpoint ?? `https://lambda.${o.region}.amazonaws.com`);
  const path = `/2015-03-31/functions/${encodeURIComponent(fn)}/configuration`;
  const signer = new SignatureV4({ credentials: o.credentials, region: o.region, service: 'lambda', sha256: Sha256 });
  const signed = await signer.sign(
    new HttpRequest({
      method: 'GET',
      protocol: base.protocol,
      hostname: base.hostname,
      port: base.port ? Number(base.port) : undefined,
      path,
      headers: { host: base.host },
    }),
  );
  const answer = await fetch(new URL(path, base), { headers: signed.headers as Record<string, string> });
  if (!answer.ok) return { unreadable: `lambda:GetFunctionConfiguration answered HTTP ${answer.status}` };
  return {
    variables:
      ((await answer.json()) as { Environment?: { Variables?: Record<string, string> } }).Environment?.Variables ?? {},
  };
}

/** The function's MAINTENANCE_WINDOWS and MAINTENANCE_TIME_ZONE, or why they could not be read. */
export async function functionWindows(
  arn: string,
  o: LambdaAccess,
): Promise<{ readonly windows?: string; readonly zone?: string } | { readonly unreadable: string }> {
  const read = await functionVariables(arn, o);
  if ('unreadable' in read) return read;
  return { windows: read.variables['MAINTENANCE_WINDOWS'], zone: read.variables['MAINTENANCE_TIME_ZONE'] };
}

/** One line for the plan: open now, or when the next window opens (UTC and the zone's own time). */
export function windowNote(windowsText: string | undefined, zone = 'UTC', nowMs = Date.now()): string {
  const windows = windowsText ? parseWindows(windowsText) : undefined;
  if (windows === undefined)
    return 'the termination policy has no maintenance windows: terminations are not held for one';
  const open = openWindow(windows, nowMs, zone);
  if (open !== undefined) return `a maintenance window is open now (${open.text}, ${zone})`;
  const next = nextOpening(windows, nowMs, zone);
  if (next === undefined)
    return `no maintenance window opens in the next 35 days (${windowsText}, ${zone}): the policy's maximum deferral decides`;
  const local = new Intl.DateTimeFormat('en-GB', { timeZone: zone, dateStyle: 'medium', timeStyle: 'short' }).format(
    next,
  );
  return `outside the maintenance windows (${windowsText}, ${zone}): the next opens ${new Date(next).toISOString().slice(0, 16)}Z (${local} ${zone}); until then each termination waits up to the policy's maximum deferral`;
}
