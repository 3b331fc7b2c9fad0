// Regenerates ../testdata/*.json: one OTLP/JSON trace export per library.
// Each library runs in its own Node process (they register global
// providers and patch the openai module).
//
//   cd interop/node && npm ci && node generate.mjs [library ...]
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const all = [
  "openinference",
  "openllmetry-0.22",
  "openllmetry-0.27",
  "otel-instrumentation-openai",
  "otel-instrumentation-openai-responses",
  "vercel-ai-v5",
];
const chosen = process.argv.length > 2 ? process.argv.slice(2) : all;
let failed = 0;
for (const lib of chosen) {
  const r = spawnSync(process.execPath, [path.join(here, "runs", `${lib}.mjs`)], {
    stdio: "inherit",
    cwd: here,
    env: { ...process.env, TRACELOOP_SYNC_ENABLED: "false", TRACELOOP_TELEMETRY: "false" },
  });
  if (r.status !== 0) {
    console.error(`${lib}: failed (exit ${r.status})`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
