#!/usr/bin/env bash
# The nightly lane for the platform's scheduler (docs/behaviour/tiers.md#nightly-lane;
# docs/OPERATIONS.md "The nightly lane"):
#
#   scripts/nightly.sh [mock|gateway|vendor] [ingest nightly options: --sidecar URL --timeout S ...]
#
# The tier is the first argument, else $LLM_TIER, else mock (the scheduled default). It runs
# `ingest nightly` with the environment it was given (the sidecar's model variables, the
# trigger bearer, ENGINE_DB_DSN to read pipeline_runs) and exits with its code: 0 the lane
# passed, 1 a step failed (the last line names it), 2 bad usage or a tier the environment
# contradicts.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -gt 0 && $1 != -* ]]; then
  tier=$1
  shift
else
  tier=${LLM_TIER:-mock}
fi
# bin/ingest.ts finds a Node that runs it (bin/node24): the one on PATH, else the project's own.
exec "$root/bin/ingest.ts" nightly --tier "$tier" "$@"
