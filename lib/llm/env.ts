// The one rule both model-client factories share (docs/behaviour/tiers.md#blank-means-unset): a
// variable set to the empty string counts as unset. Compose files pass `${VAR:-}` through, and both
// SDKs would take an empty base URL as set (and break) or an empty key as a credential.

export function scrubBlankVariables(names: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value.trim() === '') delete env[name];
  }
}
