// `ingest nightly --tier mock|gateway|vendor [--sidecar URL] [--timeout S] [--full-reprocess]
// [--json]`: the nightly lane against a running sidecar (cli/nightly/lane.ts), one line per step
// with its duration as it ends. Exit 0 the lane passed, 1 a step failed (named on the last line),
// 2 bad usage or a tier the environment contradicts. With --json the step lines go to stderr
// and stdout carries one JSON report. No line carries a secret (each is scrubbed).

import { parseArgs } from 'node:util';
import type { Config } from '../../lib/config.ts';
import { lineScrubber } from '../../lib/log.ts';
import { LLM_TIERS, type LlmTier } from '../../lib/llm/client.ts';
import { runNightlyLane, type StepReport } from './lane.ts';
import { usageError } from '../usage.ts';

const DEFAULT_TIMEOUT_S = 3600;

export async function nightlyCommand(args: string[], { config }: { config: Config }): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      tier: { type: 'string' },
      sidecar: { type: 'string' },
      timeout: { type: 'string', default: String(DEFAULT_TIMEOUT_S) },
      'full-reprocess': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const tier = values.tier as LlmTier | undefined;
  if (tier === undefined || !LLM_TIERS.includes(tier)) {
    throw usageError(`--tier must be one of ${LLM_TIERS.join(', ')} (mock is the scheduled default)`);
  }
  const timeoutS = Number(values.timeout);
  if (!(timeoutS > 0) || timeoutS > 7 * 24 * 3600) throw usageError('--timeout must be a number of seconds above 0');
  // The scheduled walk calls the sidecar on loopback (docs/behaviour/routes.md#post-walk), on the
  // port it listens on.
  const sidecarUrl = values.sidecar ?? `http://127.0.0.1:${config.http.port}`;
  if (!URL.canParse(sidecarUrl) || !['http:', 'https:'].includes(new URL(sidecarUrl).protocol)) {
    throw usageError('--sidecar must be an http(s) URL such as http://127.0.0.1:8790');
  }

  const scrub = lineScrubber(config.secretValues);
  const lines = values.json ? process.stderr : process.stdout;
  const width = Math.max(...['sidecar_health', 'rows_landed'].map((s) => s.length));
  lines.write(scrub(`nightly lane: tier ${tier}, sidecar ${new URL(sidecarUrl).origin}\n`));
  const report = await runNightlyLane({
    tier,
    sidecarUrl,
    timeoutMs: timeoutS * 1000,
    fullReprocess: values['full-reprocess'],
    config,
    onStep: (step: StepReport) =>
      lines.write(
        scrub(
          `  ${step.ok ? 'ok  ' : 'FAIL'}  ${step.name.padEnd(width)}  ${seconds(step.ms).padStart(7)}  ` +
            `${step.error === undefined ? '' : `${step.error}: `}${step.detail}\n`,
        ),
      ),
  });
  lines.write(
    scrub(
      report.ok
        ? `nightly lane passed in ${seconds(report.ms)}\n`
        : `nightly lane FAILED at ${report.failedStep} after ${seconds(report.ms)} (exit ${report.exitCode})\n`,
    ),
  );
  if (values.json) process.stdout.write(scrub(JSON.stringify(report)) + '\n');
  return report.exitCode;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
