# One image for every role of the service: the sidecar (`serve`, the default), the bid-worker
# (`worker`), the mock model server (`mock`), a one-off `walk` and `watch`. The command picks the
# role: `docker run IMAGE worker`. Build with the commit it was made from:
#   docker build --build-arg IMAGE_SHA=$(git rev-parse HEAD) -t ingest-sidecar .
# test/image-install.test.ts lays out this file's COPY lines and runs its install, since no
# Docker engine runs where the tests do: keep the two in step.

FROM node:24.21.0-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only, and no install script runs: the native ones (lmdb, msgpackr,
# @napi-rs/canvas) load prebuilt binaries that npm installs as optional packages. OCR's engine
# (tesseract.js and its wasm core) and its language data (@tesseract.js-data/eng, osd) are
# npm packages too: nothing is fetched at run time (docs/DECISIONS.md "Scanned documents read").
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM node:24.21.0-bookworm-slim
# tini is PID 1: it forwards SIGTERM to Node (which stops gracefully) and reaps children.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY bin ./bin
COPY cli ./cli
COPY http ./http
COPY engine ./engine
COPY stages ./stages
COPY lib ./lib
COPY mock ./mock
COPY worker ./worker
COPY schema ./schema

# IMAGE_SHA is stamped on every run as result.extractor_version
# (docs/behaviour/versioning.md#extractor_version); an image without it would make every run fail
# the platform's cross-reference checks, so the build refuses.
ARG IMAGE_SHA
RUN test -n "$IMAGE_SHA" || { echo 'build with --build-arg IMAGE_SHA=<commit>' >&2; exit 1; }
ENV IMAGE_SHA=$IMAGE_SHA \
    NODE_ENV=production \
    INGEST_HOST=0.0.0.0 \
    INGEST_PORT=8790 \
    INGEST_DATA_DIR=/data \
    ENGINE_SOURCE_PATH=/corpus

# The volumes belong to the unprivileged user the service runs as. /data holds the engine
# state store, which cannot be rebuilt (docs/behaviour/tiers.md#engine-state-store): mount it, never
# leave it in the container.
RUN mkdir -p /data /corpus && chown node:node /data /corpus
USER node
VOLUME ["/data", "/corpus"]
EXPOSE 8790

HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["node", "bin/ingest.ts", "health"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=16", "--heap-growing-percent=50", "bin/ingest.ts"]
CMD ["serve"]
