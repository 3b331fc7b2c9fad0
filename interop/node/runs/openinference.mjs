// OpenInference: @arizeai/openinference-instrumentation-openai on openai 7,
// AGENT and TOOL spans from @arizeai/openinference-core's traceAgent /
// traceTool helpers.
import { memoryTracing, writeRun } from "./tracing.mjs";
import { OpenAIInstrumentation } from "@arizeai/openinference-instrumentation-openai";
import { traceAgent, traceTool } from "@arizeai/openinference-core";
import { startServer, USER_REQUEST, FINAL_TEXT } from "../lib/server.mjs";
import { runAgent } from "../lib/agent.mjs";
import { require, check, warm } from "./common.mjs";

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
await writeRun("openinference", server, provider, exporter);
