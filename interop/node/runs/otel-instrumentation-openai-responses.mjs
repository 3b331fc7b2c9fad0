// The otel-instrumentation-openai run on the Responses API (sequential
// script only: lib/responses.mjs scripts one tool call per model call).
process.env.INTEROP_OPENAI_API = "responses";
await import("./otel-instrumentation-openai.mjs");
