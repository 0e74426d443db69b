// The bid-worker's two jobs as poll-loop handlers: each payload validated first (a bad one
// fails its job with bad_payload), then the form read, analysed and, for template_fill, answered.

import type { EmbeddingClient } from '../lib/embed/client.ts';
import type { ModelCallContext } from '../lib/llm/run-extractor.ts';
import type { Converter } from '../stages/convert/index.ts';
import type { ZipLimits } from '../stages/convert/zip-guard.ts';
import { embedTexts } from '../stages/embed.ts';
import { assertEmbeddingModel } from '../lib/embed/recorded-model.ts';
import { analyseForm } from './analyse-form.ts';
import { JobError } from './errors.ts';
import { loadForm, type FormSources } from './form-source.ts';
import type { JobHandler } from './loop.ts';
import type { OutputLocation } from './output.ts';
import {
  AnalyseFormPayloadSchema,
  AnalyseFormResultSchema,
  payloadParser,
  TemplateFillPayloadSchema,
  type AnalyseFormResult,
} from './payloads.ts';
import { getJob } from './queue.ts';
import type { Embed } from './retrieval.ts';
import { templateFill } from './template-fill.ts';
import { validator } from '../lib/llm/schemas.ts';

export interface JobDeps {
  converter: Converter;
  models: ModelCallContext & { embedder: EmbeddingClient };
  sources: FormSources;
  output: OutputLocation;
  zipLimits: ZipLimits;
  evidenceK: number;
  /** Hears every retried model call (the worker logs them; a walk would count them). */
  onModelRetry?: () => void;
}

/** The query embedding, through the same client and retry as the walk's stage 4. */
export function embedder(deps: Pick<JobDeps, 'models' | 'onModelRetry'>): Embed {
  return async (text) =>
    (
      await embedTexts([text], {
        client: deps.models.embedder,
        queue: deps.models.queue,
        retry: deps.models.retry,
        onRetry: deps.onModelRetry,
      })
    )[0]!;
}

const parseAnalyse = payloadParser('analyse_form', AnalyseFormPayloadSchema);
const parseFill = payloadParser('template_fill', TemplateFillPayloadSchema);
const validAnalysis = validator(AnalyseFormResultSchema);

export function jobHandlers(deps: JobDeps): Record<string, JobHandler> {
  const embed = embedder(deps);
  return {
    async analyse_form(payload) {
      const { form } = parseAnalyse(payload);
      return analyseForm(await loadForm(form, deps.sources), deps);
    },
    async template_fill(payload, { job, db, signal }) {
      const parsed = parseFill(payload);
      // Before any model call: a question embedded by another model than the evidence's finds nothing true.
      await assertEmbeddingModel(db, deps.models.embedder.embeddingModel.name);
      let analysis: AnalyseFormResult;
      let analysisJob: string | null = null;
      let form;
      if ('analysis_job' in parsed) {
        analysisJob = parsed.analysis_job;
        const source = await getJob(db, parsed.analysis_job);
        if (source === null || source.job !== 'analyse_form')
          throw new JobError('form_not_analysed', `no analyse_form job ${parsed.analysis_job}`, { final: true });
        if (source.status !== 'done')
          throw new JobError('form_not_analysed', `analyse_form job ${source.id} is ${source.status}`, {
            // Queued or running: it may yet be done by the next attempt.
            final: source.status === 'failed',
          });
        if (!validAnalysis(source.result))
          throw new JobError('form_not_analysed', `analyse_form job ${source.id} holds no analysis`, { final: true });
        analysis = source.result;
        form = await loadForm(parseAnalyse(source.payload).form, deps.sources);
        if (form.info.sha256 !== analysis.form.sha256)
          throw new JobError('form_changed', `the form changed since analyse_form job ${source.id}`, { final: true });
      } else {
        form = await loadForm(parsed.form, deps.sources);
        analysis = await analyseForm(form, deps);
      }
      return templateFill(job.id, form, analysis, analysisJob, {
        db,
        embed,
        models: deps.models,
        onModelRetry: deps.onModelRetry,
        output: deps.output,
        zipLimits: deps.zipLimits,
        evidenceK: parsed.evidence_k ?? deps.evidenceK,
        signal,
      });
    },
  };
}
