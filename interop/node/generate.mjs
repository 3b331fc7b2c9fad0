// Regenerates ../testdata/*.json: one OTLP/JSON trace export per library and
// scenario (sequential: one tool call per model turn; parallel: both calls
// in one turn, run at once, so their tool spans tie on start time). Each
// library runs in its own Node process (they register global providers and
// patch the openai module).
//
//   cd interop/node && npm ci && node generate.mjs [library ...]
//       both scenarios into ../testdata; a parallel capture is retried (at
//       most 10 runs) until its tool spans tie on start time
//   node generate.mjs --repeat 10 --out DIR [library ...]
//       ten captures per library and scenario into DIR/<run>/, and how many
//       of them tie (see README.md)
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import fs from "node:fs";
import path from "node:path";
import { tieReport } from "./lib/ties.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const testdata = path.resolve(here, "..", "testdata");
const all = [
  "openinference",
  "openllmetry-0.22",
  "openllmetry-0.27",
  "otel-instrumentation-openai",
  "otel-instrumentation-openai-responses",
  "vercel-ai-v5",
  "langchain",
];
const scenarios = ["sequential", "parallel"];

const args = process.argv.slice(2);
let repeat = 0;
let out = "";
const chosen = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--repeat") repeat = Number(args[++i]);
  else if (args[i] === "--out") out = args[++i];
  else chosen.push(args[i]);
}
const libs = chosen.length ? chosen : all;
if (repeat && !out) {
  console.error("--repeat needs --out DIR");
  process.exit(2);
}

function capture(lib, scenario, dir) {
  const r = spawnSync(process.execPath, [path.join(here, "runs", `${lib}.mjs`)], {
    stdio: "inherit",
    cwd: here,
    env: {
      ...process.env,
      INTEROP_SCENARIO: scenario,
      INTEROP_OUT: dir,
      TRACELOOP_SYNC_ENABLED: "false",
      TRACELOOP_TELEMETRY: "false",
    },
  });
  if (r.status !== 0) {
    throw new Error(`${lib} (${scenario}): failed (exit ${r.status})`);
  }
  return path.join(dir, `${lib}${scenario === "parallel" ? "-parallel" : ""}.json`);
}

let failed = 0;
const rows = [];
// The Responses API run has the sequential script only (lib/responses.mjs).
const sequentialOnly = new Set(["otel-instrumentation-openai-responses"]);
for (const lib of libs) {
  for (const scenario of scenarios) {
    if (scenario === "parallel" && sequentialOnly.has(lib)) {
      continue;
    }
    try {
      if (!repeat) {
        let report;
        let runs = 0;
        do {
          report = tieReport(capture(lib, scenario, testdata));
          runs++;
        } while (scenario === "parallel" && !report.tie && runs < 10);
        console.log(`${lib} ${scenario}: tie=${report.tie} start-then-end wrong=${report.startEndWrong} (${runs} run(s))`);
        if (scenario === "parallel" && !report.tie) {
          console.error(`${lib}: no tie in ${runs} parallel runs`);
          failed++;
        }
        continue;
      }
      let ties = 0;
      let wrong = 0;
      for (let k = 1; k <= repeat; k++) {
        const dir = path.join(out, String(k));
        fs.mkdirSync(dir, { recursive: true });
        const report = tieReport(capture(lib, scenario, dir));
        ties += report.tie;
        wrong += report.startEndWrong;
      }
      rows.push(`| ${lib} | ${scenario} | ${ties}/${repeat} | ${wrong}/${repeat} |`);
    } catch (e) {
      console.error(e.message);
      failed++;
    }
  }
}
if (rows.length) {
  console.log("| library | scenario | tool spans tie on start | start-then-end order wrong |");
  console.log("|---|---|---|---|");
  for (const r of rows) console.log(r);
}
process.exit(failed ? 1 : 0);
