// Retry-After, as both the model clients' retry and the pipeline-run webhook read it.

/**
 * Retry-After as seconds (a fraction allowed) or an HTTP date, in milliseconds from `now`;
 * null when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
