// OpenInference: @arizeai/openinference-instrumentation-openai on openai 7,
// AGENT and TOOL spans from @arizeai/openinference-core's traceAgent /
// traceTool helpers.
import { memoryTracing } from "./tracing.mjs";
import { OpenAIInstrumentation } from "@arizeai/openinference-instrumentation-openai";
import { traceAgent, traceTool } from "@arizeai/openinference-core";
import { startServer, USER_REQUEST, FINAL_TEXT, MODEL_CALLS } from "../lib/server.mjs";
import { runAgent } from "../lib/agent.mjs";
import { writeTraces } from "../lib/otlp.mjs";
import { require, check, outFile, warm } from "./common.mjs";

const { exporter, provider } = memoryTracing("interop-openinference");

const instrumentation = new OpenAIInstrumentation({ tracerProvider: provider });
const openaiModule = require("openai-v7"); // openai 7 under an npm alias
instrumentation.manuallyInstrument(openaiModule);
const OpenAI = openaiModule.OpenAI;

const server = await startServer();
const client = new OpenAI({ apiKey: "sk-interop", baseURL: server.baseURL, maxRetries: 0 });
const tracer = provider.getTracer("travel-agent-app");

const agent = traceAgent(
  (request) =>
    runAgent(client, request, (name, fn) => {
      const traced = traceTool(fn, { name, tracer });
      return (args) => traced(args); // the tool span records the arguments only
    }),
  { name: "travel-agent", tracer },
);
const out = await warm(() => agent(USER_REQUEST), server, exporter);
check(out === FINAL_TEXT, "final text");
check(server.requests.length === MODEL_CALLS, `${MODEL_CALLS} chat completions`);
await server.close();
await provider.forceFlush();
const spans = exporter.getFinishedSpans();
writeTraces(outFile("openinference"), spans);
console.log(`openinference: ${spans.length} spans`);
await provider.shutdown();
