// @traceloop/node-server-sdk 0.27 (instrumentation-openai 0.27: OTel GenAI
// attributes as JSON strings) on openai 6 (the instrumentation supports <7).
import { run } from "./openllmetry.mjs";

await run({
  sdkPackage: "@traceloop/node-server-sdk",
  openaiPackage: "openai",
  file: "openllmetry-0.27.json",
  appName: "interop-openllmetry-0.27",
});
process.exit(0);
