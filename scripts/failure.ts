// A command's failure as one line that names what failed, where (API server and context; group,
// region and profile) and what to try next, instead of `fetch failed`.
import { UsageError } from './command-options.js';

export interface Where {
  readonly server?: string | undefined;
  readonly context?: string | undefined;
  readonly region?: string | undefined;
  readonly profile?: string | undefined;
  readonly group?: string | undefined;
}

/** The innermost reason: `connect ECONNREFUSED 127.0.0.1:6443` rather than `fetch failed`. */
export function rootCause(error: unknown): string {
  let e: unknown = error;
  const seen = new Set<unknown>();
  while (e instanceof Error && e.cause !== undefined && !seen.has(e)) {
    seen.add(e);
    e = e.cause;
  }
  const text = e instanceof Error ? e.message : String(e);
  return text.split('\n')[0]!.trim();
}

/** An error met while talking to the Kubernetes API, said with the server and the context. */
export class KubernetesError extends Error {
  override readonly name = 'KubernetesError';
}

/** An error met while talking to AWS, said with the region, profile and group. */
export class AwsError extends Error {
  override readonly name = 'AwsError';
}

/**
 * client-node's ApiException says `code`, our KubeApiError `statusCode`; the gateway's errors
 * (AccessDeniedError, say) carry the KubeApiError as their cause.
 */
const httpStatus = (error: unknown): number | undefined => {
  const seen = new Set<unknown>();
  for (let e = error; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    const { code, statusCode } = e as { code?: unknown; statusCode?: unknown };
    if (typeof code === 'number') return code;
    if (typeof statusCode === 'number') return statusCode;
  }
  return undefined;
};

/** Wraps a Kubernetes call: its failure names the API server, the context and the next step. */
export async function atKubernetes<T>(where: Where, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof UsageError || error instanceof KubernetesError || error instanceof AwsError) throw error;
    const at = `the Kubernetes API at ${where.server ?? '?'} (context ${where.context ?? '?'})`;
    const status = httpStatus(error);
    const message =
      status === 401 || status === 403
        ? `${at} refused to ${what} (${status}): check the context's credentials and that your identity may ${what}`
        : status !== undefined
          ? `${at} answered ${status} to ${what}: ${rootCause(error)}`
          : `cannot reach ${at}: ${rootCause(error)}; check the kubeconfig (--kubeconfig, --context) and the network`;
    throw new KubernetesError(message, { cause: error });
  }
}

const credentialsHint = (where: Where) =>
  `check the credentials of ${where.profile ? `profile ${where.profile}` : 'the default profile'} (aws sts get-caller-identity${where.profile ? ` --profile ${where.profile}` : ''}; aws sso login when it uses SSO)`;

/** Wraps an AWS call: its failure names the call, the group, the region, the profile and the next step. */
export async function atAws<T>(where: Where, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof UsageError || error instanceof KubernetesError || error instanceof AwsError) throw error;
    const name = error instanceof Error ? error.name : 'Error';
    const at = `${what}${where.group ? ` for group ${where.group}` : ''} in ${where.region ?? '?'}${where.profile ? ` (profile ${where.profile})` : ''}`;
    const credentials =
      /Credential|ExpiredToken|InvalidClientTokenId|UnrecognizedClient|SignatureDoesNotMatch|AccessDenied|TokenRefresh/i.test(
        `${name} ${rootCause(error)}`,
      );
    const next = credentials
      ? credentialsHint(where)
      : 'check the region (--region) and the network, or AWS_ENDPOINT_URL_* when set';
    throw new AwsError(
      `${at} failed: ${name === 'Error' || name === 'TypeError' ? '' : `${name}: `}${rootCause(error)}; ${next}`,
      { cause: error },
    );
  }
}

/** The API object with every method's failure said as atKubernetes says it. */
export function guardKubernetes<T extends object>(api: T, where: Where, what: string): T {
  return new Proxy(api, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        atKubernetes(where, what, async () => (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
}
