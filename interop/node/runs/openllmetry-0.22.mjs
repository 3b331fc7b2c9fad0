// @traceloop/node-server-sdk 0.22.8 (instrumentation-openai 0.22.5: legacy
// flattened gen_ai.prompt.N / gen_ai.completion.N attributes) on openai 5
// (the instrumentation supports <6), both under npm aliases.
import { run } from "./openllmetry.mjs";

await run({
  sdkPackage: "traceloop-sdk-0.22",
  openaiPackage: "openai-v5",
  file: "openllmetry-0.22.json",
  appName: "interop-openllmetry-0.22",
});
process.exit(0);
