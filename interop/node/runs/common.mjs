import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

export const require = createRequire(import.meta.url);
export const here = path.dirname(fileURLToPath(import.meta.url));
export const testdata = path.resolve(here, "..", "..", "testdata");

export function check(cond, msg) {
  if (!cond) {
    throw new Error(`check failed: ${msg}`);
  }
}

// Where a run writes its capture: <dir>/<library>[-parallel].json, dir
// $INTEROP_OUT or ../testdata (generate.mjs --repeat points it elsewhere).
export function outFile(lib) {
  const dir = process.env.INTEROP_OUT || testdata;
  const suffix = process.env.INTEROP_SCENARIO === "parallel" ? "-parallel" : "";
  return path.join(dir, `${lib}${suffix}.json`);
}

// Runs the agent twice and keeps the second run's spans: the first warms up
// the JIT and the libraries' lazy paths, as in a long-running service (cold,
// on a busy machine, each span of the first run costs milliseconds, which
// would keep parallel tool spans from sharing a start millisecond).
export async function warm(run, server, ...exporters) {
  await run();
  await new Promise((resolve) => setTimeout(resolve, 20)); // let the warm-up's spans end
  for (const e of exporters) e.reset();
  server.requests.length = 0;
  return run();
}
