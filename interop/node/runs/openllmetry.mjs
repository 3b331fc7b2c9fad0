// OpenLLMetry (Traceloop): the real @traceloop/node-server-sdk, which
// instruments the given openai module with @traceloop/instrumentation-openai
// and writes the agent and tool spans with withAgent / withTool.
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { startServer, USER_REQUEST, FINAL_TEXT, MODEL_CALLS } from "../lib/server.mjs";
import { runAgent } from "../lib/agent.mjs";
import { writeTraces } from "../lib/otlp.mjs";
import { require, check, outFile, warm } from "./common.mjs";

export async function run({ sdkPackage, openaiPackage, file, appName }) {
  const traceloop = require(sdkPackage);
  const openaiModule = require(openaiPackage);
  const OpenAI = openaiModule.OpenAI;
  const exporter = new InMemorySpanExporter();
  traceloop.initialize({
    appName,
    baseUrl: "http://127.0.0.1:9", // never contacted: custom exporter, sync off
    exporter,
    disableBatch: true,
    traceloopSyncEnabled: false,
    silenceInitializationMessage: true,
    instrumentModules: { openAI: OpenAI },
  });

  const server = await startServer();
  const client = new OpenAI({ apiKey: "sk-interop", baseURL: server.baseURL, maxRetries: 0 });
  const out = await warm(
    () =>
      traceloop.withAgent(
        { name: "travel-agent" },
        (request) =>
          runAgent(client, request, (name, fn) => (args) => traceloop.withTool({ name }, fn, args)),
        USER_REQUEST,
      ),
    server,
    exporter,
  );
  check(out === FINAL_TEXT, "final text");
  check(server.requests.length === MODEL_CALLS, `${MODEL_CALLS} chat completions`);
  await server.close();
  await traceloop.forceFlush();
  const spans = exporter.getFinishedSpans();
  writeTraces(outFile(file.replace(/\.json$/, "")), spans);
  console.log(`${file}: ${spans.length} spans`);
}
