// @engine
// .github/workflows/nightly.yml cannot run here, so it is read: the schedule and the manual
// dispatch with its `llm_tier` choice, the job calling scripts/nightly.sh with that input, and
// the environment each tier gets. The `${{ }}` expressions of the job's env are evaluated (the
// subset the file uses: || && == ( ) strings and context paths, with GitHub's falsy rules) for a
// scheduled run and for each dispatch, and the result must satisfy the lane's own tier check and
// expose each credential to its own tier only.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { accessSync, constants, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { checkTierEnvironment, LLM_TIERS, type LlmTier } from '../lib/llm/client.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const workflow = parse(readFileSync(path.join(ROOT, '.github', 'workflows', 'nightly.yml'), 'utf8')) as {
  on: {
    schedule: { cron: string }[];
    workflow_dispatch: {
      inputs: Record<string, { type: string; options: string[]; default: string; required?: boolean }>;
    };
  };
  jobs: Record<
    string,
    {
      env: Record<string, string>;
      services?: Record<string, { image: string }>;
      steps: { name?: string; run?: string; uses?: string; if?: string }[];
    }
  >;
};
const [job] = Object.values(workflow.jobs);

type Value = string | null;

/** Evaluates one GitHub expression of the subset the workflow uses. */
export function evaluate(expression: string, contexts: Record<string, Record<string, string>>): Value {
  const tokens = expression.match(/'(?:[^']|'')*'|\|\||&&|==|[()]|[A-Za-z_][\w.-]*/g) ?? [];
  if (tokens.join('').replace(/\s/g, '') !== expression.replace(/\s/g, '')) {
    throw new Error(`unsupported expression: ${expression}`);
  }
  let at = 0;
  const truthy = (v: Value) => v !== null && v !== '';
  const primary = (): Value => {
    const token = tokens[at++];
    if (token === '(') {
      const value = or();
      if (tokens[at++] !== ')') throw new Error(`missing ) in ${expression}`);
      return value;
    }
    if (token?.startsWith("'")) return token.slice(1, -1).replace(/''/g, "'");
    const [context, key] = token!.split('.') as [string, string];
    if (!(context in contexts)) throw new Error(`unknown context ${context} in ${expression}`);
    return contexts[context]![key] ?? null;
  };
  const equality = (): Value => {
    const left = primary();
    if (tokens[at] !== '==') return left;
    at++;
    const right = primary();
    // GitHub compares strings ignoring case; null equals only null.
    return String(left?.toLowerCase() === right?.toLowerCase() && (left === null) === (right === null));
  };
  const toBoolean = (v: Value) => (v === 'true' ? true : v === 'false' ? false : truthy(v));
  const and = (): Value => {
    let value = equality();
    while (tokens[at] === '&&') {
      at++;
      const right = equality();
      value = toBoolean(value) ? right : value;
    }
    return value;
  };
  const or = (): Value => {
    let value = and();
    while (tokens[at] === '||') {
      at++;
      const right = and();
      value = toBoolean(value) ? value : right;
    }
    return value;
  };
  const value = or();
  if (at !== tokens.length) throw new Error(`trailing tokens in ${expression}`);
  return value;
}

const SECRETS = {
  ANTHROPIC_API_KEY: 'secret-vendor-key',
  LLM_GATEWAY_TOKEN: 'secret-gateway-token',
  OPENAI_API_KEY: 'secret-openai-key',
};
const VARS = { LLM_GATEWAY_URL: 'https://gateway.example/anthropic' };

/** The job's environment for one run: `tier` dispatched by hand, or null for the schedule (no inputs). */
function jobEnv(tier: LlmTier | null): Record<string, string> {
  const contexts: Record<string, Record<string, string>> = {
    inputs: tier === null ? {} : { llm_tier: tier },
    secrets: SECRETS,
    vars: VARS,
    github: { sha: '0123abcd' },
  };
  return Object.fromEntries(
    Object.entries(job!.env).map(([name, value]) => [
      name,
      String(value).replace(/\$\{\{(.*?)\}\}/g, (_, expression: string) => evaluate(expression.trim(), contexts) ?? ''),
    ]),
  );
}

test('the expression reader follows GitHub: || and && return operands, == compares, missing is null', () => {
  const c = { inputs: { a: 'x' }, secrets: {} };
  assert.is(evaluate("inputs.a || 'd'", c), 'x');
  assert.is(evaluate("inputs.b || 'd'", c), 'd');
  assert.is(evaluate("inputs.a == 'X' && 'yes' || 'no'", c), 'yes');
  assert.is(evaluate("(inputs.b == 'x' && secrets.k) || ''", c), '');
  assert.throws(() => evaluate('format(inputs.a)', c));
});

test('nightly on a schedule, and a manual dispatch whose llm_tier chooses mock, gateway or vendor', () => {
  const [schedule] = workflow.on.schedule;
  assert.match(schedule!.cron, /^(\S+\s+){4}\S+$/, 'a five-field cron');
  assert.match(schedule!.cron, /^\d+ \d+ \* \* \*$/, 'once a night');
  const input = workflow.on.workflow_dispatch.inputs.llm_tier!;
  assert.is(input.type, 'choice');
  assert.equal(input.options, [...LLM_TIERS]);
  assert.is(input.default, 'mock');
});

test('the job calls scripts/nightly.sh with the tier, and the script is there to call', () => {
  assert.is(job!.env.LLM_TIER, "${{ inputs.llm_tier || 'mock' }}");
  const lane = job!.steps.filter((s) => s.run?.includes('scripts/nightly.sh'));
  assert.is(lane.length, 1);
  assert.match(lane[0]!.run!, /^scripts\/nightly\.sh "\$LLM_TIER" --sidecar http:\/\/127\.0\.0\.1:8790 /);
  accessSync(path.join(ROOT, 'scripts', 'nightly.sh'), constants.X_OK);
  // What the lane needs comes up before it: the schema, the mock on tier 1 only, the sidecar.
  const runs = job!.steps.map((s) => s.run ?? s.uses ?? '');
  const index = (pattern: RegExp) => runs.findIndex((r) => pattern.test(r));
  const mockStep = job!.steps[index(/ingest\.ts mock /)]!;
  assert.is(mockStep.if, "env.LLM_TIER == 'mock'");
  assert.match(mockStep.run!, /--port 8791/);
  for (const before of [/npm ci/, /ingest\.ts db migrate/, /ingest\.ts mock /, /ingest\.ts serve/]) {
    assert.ok(index(before) >= 0 && index(before) < index(/scripts\/nightly\.sh/), String(before));
  }
  assert.not.match(job!.services!.postgres!.image, /:latest$|^[^:]+$/, 'the database image is pinned');
});

test('each run gets the environment of its tier: the lane’s tier check passes, the schedule is tier 1', () => {
  for (const tier of [null, ...LLM_TIERS]) {
    const env = jobEnv(tier);
    const expected = tier ?? 'mock';
    assert.is(env.LLM_TIER, expected);
    assert.equal(checkTierEnvironment(expected, env), { mismatches: [], notes: [] }, tier ?? 'schedule');
    assert.is(env.IMAGE_SHA, '0123abcd', 'the run records extractor_version');
    assert.match(env.ENGINE_DB_DSN!, /^postgresql:\/\/.*@127\.0\.0\.1:5432\//, 'the lane reads pipeline_runs');
  }
  assert.is(jobEnv(null).ANTHROPIC_BASE_URL, 'http://127.0.0.1:8791');
  assert.is(jobEnv('gateway').ANTHROPIC_BASE_URL, VARS.LLM_GATEWAY_URL);
  assert.is(jobEnv('vendor').ANTHROPIC_BASE_URL, '', 'blank: the SDK default applies');
});

test('credentials reach their own tier only, through env, and no script prints one', () => {
  const exposed = (tier: LlmTier | null) => {
    const values = Object.values(jobEnv(tier));
    return Object.entries(SECRETS)
      .filter(([, secret]) => values.includes(secret))
      .map(([name]) => name);
  };
  assert.equal(exposed(null), []);
  assert.equal(exposed('mock'), []);
  assert.equal(exposed('gateway'), ['LLM_GATEWAY_TOKEN', 'OPENAI_API_KEY']);
  assert.equal(exposed('vendor'), ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY']);
  for (const step of job!.steps) {
    const run = step.run ?? '';
    assert.not.match(run, /\$\{\{\s*(secrets|inputs|vars)\./, `no expression is pasted into a script: ${run}`);
    assert.not.match(
      run,
      /\$\{?(ANTHROPIC_API_KEY|ANTHROPIC_AUTH_TOKEN|OPENAI_API_KEY|PIPELINE_TRIGGER_SECRET|ENGINE_DB_DSN)\b/,
      `no script expands a credential: ${run}`,
    );
  }
  // The per-run trigger bearer is masked before it is written anywhere.
  const bearer = job!.steps.find((s) => s.run?.includes('PIPELINE_TRIGGER_SECRET='))!.run!;
  assert.ok(bearer.indexOf('::add-mask::') < bearer.indexOf('GITHUB_ENV'));
});

test.run();
