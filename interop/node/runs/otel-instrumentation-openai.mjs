// @opentelemetry/instrumentation-openai (GenAI semconv 1.36) on openai 6,
// patched through its require hook. With INTEROP_OPENAI_API=responses (see
// otel-instrumentation-openai-responses.mjs) the agent uses the Responses
// API instead, for which 0.21.0 (the newest that runs on Node 20; 0.22 needs
// Node >= 22.15) follows GenAI semconv 1.38: the content is in two
// gen_ai.client.inference.operation.details records per call (one with
// gen_ai.input.messages, one with gen_ai.output.messages), named in the
// EventName field. Message content is captured
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true) but travels as
// log records, not on the spans: the traces fixture holds the spans, the
// log records go to testdata/logs/. The instrumentation writes only the chat
// spans; the invoke_agent and execute_tool spans are written by this app
// following the current GenAI semantic conventions (gen_ai.tool.call.arguments
// / .result as JSON strings), as an application using this library would.
process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = "true";

import { memoryTracing } from "./tracing.mjs";
import path from "node:path";
import { SpanKind, SpanStatusCode, context, metrics, trace } from "@opentelemetry/api";
import { logs } from "@opentelemetry/api-logs";
import {
  LoggerProvider,
  InMemoryLogRecordExporter,
  SimpleLogRecordProcessor,
} from "@opentelemetry/sdk-logs";
import { OpenAIInstrumentation } from "@opentelemetry/instrumentation-openai";
import { startServer, USER_REQUEST, FINAL_TEXT, MODEL_CALLS } from "../lib/server.mjs";
import { runAgent } from "../lib/agent.mjs";
import { startResponsesServer, runResponsesAgent } from "../lib/responses.mjs";
import { writeTraces, writeLogs } from "../lib/otlp.mjs";
import { require, check, outFile, warm } from "./common.mjs";

const RESPONSES = process.env.INTEROP_OPENAI_API === "responses";
const LIB = RESPONSES ? "otel-instrumentation-openai-responses" : "otel-instrumentation-openai";
const { exporter, provider, resource } = memoryTracing(`interop-${LIB}`);
const logExporter = new InMemoryLogRecordExporter();
const loggerProvider = new LoggerProvider({
  resource,
  processors: [new SimpleLogRecordProcessor({ exporter: logExporter })],
});
logs.setGlobalLoggerProvider(loggerProvider);

const instrumentation = new OpenAIInstrumentation();
instrumentation.setTracerProvider(provider);
instrumentation.setLoggerProvider(loggerProvider);
// The Responses path records token metrics unguarded: without a meter
// provider it throws before it emits the output record. The API's no-op
// provider is enough.
instrumentation.setMeterProvider(metrics.getMeterProvider());
instrumentation.enable();
const { OpenAI } = require("openai"); // after enable(): the require hook patches it

const server = RESPONSES ? await startResponsesServer() : await startServer();
const client = new OpenAI({ apiKey: "sk-interop", baseURL: server.baseURL, maxRetries: 0 });
const tracer = provider.getTracer("travel-agent-app", "1.0.0");
const AGENT = "travel-agent";

// An execute_tool span per the GenAI conventions around each tool call.
function wrapTool(name, fn) {
  return async (args, call) =>
    tracer.startActiveSpan(
      `execute_tool ${name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": name,
          "gen_ai.tool.type": "function",
          "gen_ai.tool.call.id": call.id,
          "gen_ai.tool.call.arguments": call.function.arguments,
        },
      },
      async (span) => {
        try {
          const result = await fn(args);
          span.setAttribute("gen_ai.tool.call.result", result);
          return result;
        } finally {
          span.end();
        }
      },
    );
}

const invokeAgent = () =>
  tracer.startActiveSpan(
    `invoke_agent ${AGENT}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT,
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
      },
    },
    async (span) => {
      try {
        return await (RESPONSES ? runResponsesAgent : runAgent)(client, USER_REQUEST, wrapTool);
      } finally {
        span.setStatus({ code: SpanStatusCode.OK });
        span.end();
      }
    },
  );
const out = await warm(invokeAgent, server, exporter, logExporter);
check(out === FINAL_TEXT, "final text");
check(server.requests.length === MODEL_CALLS, `${MODEL_CALLS} model calls`);
await server.close();
await provider.forceFlush();
await loggerProvider.forceFlush();
const spans = exporter.getFinishedSpans();
const records = logExporter.getFinishedLogRecords();
const file = outFile(LIB);
const traceId = writeTraces(file, spans);
writeLogs(path.join(path.dirname(file), "logs", path.basename(file, ".json") + ".logs.json"), records, traceId);
console.log(`${LIB}: ${spans.length} spans, ${records.length} log records`);
await provider.shutdown();
await loggerProvider.shutdown();
