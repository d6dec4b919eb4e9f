# Steward's container image (docs/deploy/docker.md). Two stages on one pinned Debian slim base:
# `build` installs every dependency (a compiler for better-sqlite3 included), compiles
# dist/ and prunes to production dependencies; the runtime stage copies only that.
# Base: node:24-bookworm-slim, pinned by its multi-platform index digest (Node 24.18.0). Update it with
#   docker buildx imagetools inspect node:24-bookworm-slim --format '{{json .Manifest.Digest}}'
# (docs/deploy/docker.md, "Pinning the base").
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d

FROM ${NODE_IMAGE} AS build
# better-sqlite3 has no prebuilt binary reachable offline: node-gyp compiles it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
COPY packages/sandbox-hub/package.json packages/sandbox-hub/
ENV npm_config_build_from_source=true
# --ignore-scripts here, `npm rebuild` below: better-sqlite3 is compiled once, from source, explicitly.
RUN npm ci --no-audit --no-fund --ignore-scripts && npm rebuild --no-audit --no-fund better-sqlite3
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    STEWARD_DATA_DIR=/var/lib/steward \
    PORT=3000
WORKDIR /app
# The same files scripts/assemble-runtime.sh copies (the test that starts this tree runs that script).
COPY --from=build /src/package.json /src/package-lock.json /src/app.yml ./
COPY --from=build /src/bin ./bin
COPY --from=build /src/cjs ./cjs
COPY --from=build /src/dist ./dist
COPY --from=build /src/node_modules ./node_modules
# The image's `node` user (uid 1000) owns nothing but the data directory: the code is root's, read-only to it.
RUN mkdir -p /var/lib/steward && chown node:node /var/lib/steward && chmod 0700 /var/lib/steward
USER node
VOLUME ["/var/lib/steward"]
EXPOSE 3000
# No curl in slim: node's fetch. /healthz answers 200 while the process is alive.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Node itself is PID 1 (no npm, no shell): `steward start` installs its own SIGTERM/SIGINT handlers.
ENTRYPOINT ["node", "bin/steward.js"]
CMD ["start"]
