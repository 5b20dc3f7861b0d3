# syntax=docker/dockerfile:1
# Node 24, the current LTS line (the service supports 22 and 24: see package.json "engines").
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
# The code belongs to root and is only readable by the app's user: a compromised process
# cannot rewrite what runs after its restart. Only the embedded database's directory is its own.
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
# Liveness, not readiness: a Redis or Postgres outage makes every instance unready at once,
# and an orchestrator acting on this check would restart them all together. Readiness
# (/api/health/ready) stays the load balancer's signal.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/api/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/main.js"]
