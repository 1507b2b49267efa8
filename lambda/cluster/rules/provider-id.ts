// A node's spec.providerID names its instance: aws:///<zone>/<instance id>. Only the providerID
// decides which node is an instance's, never its name alone.

/** spec.providerID is aws:///<zone>/<instance-id>: the id after the last slash, exactly. */
export function instanceMatches(providerId: string, instanceId: string): boolean {
  return providerId.endsWith(`/${instanceId}`);
}

/** spec.providerID is aws:///<zone>/<instance-id>. */
export function instanceIdOf(providerId: string): string | undefined {
  const id = providerId.split('/').pop();
  return id !== undefined && /^i-[0-9a-f]{8,17}$/.test(id) ? id : undefined;
}
