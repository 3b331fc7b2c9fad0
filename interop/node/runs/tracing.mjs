// The tracing setup the runs that register their own provider share (the
// OpenLLMetry runs get theirs from the Traceloop SDK).
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { MODEL_CALLS } from "../lib/server.mjs";
import { writeTraces } from "../lib/otlp.mjs";
import { check, outFile } from "./common.mjs";

// memoryTracing registers the global tracer provider of a run: service
// serviceName, every span kept in memory by exporter.
export function memoryTracing(serviceName) {
  const resource = resourceFromAttributes({ "service.name": serviceName });
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  provider.register();
  return { exporter, provider, resource };
}

// writeRun checks that the run made the scripted model calls, stops the
// server and writes the spans the provider kept to the capture of lib.
export async function writeRun(lib, server, provider, exporter) {
  check(server.requests.length === MODEL_CALLS, `${MODEL_CALLS} chat completions`);
  await server.close();
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  writeTraces(outFile(lib), spans);
  console.log(`${lib}: ${spans.length} spans`);
  await provider.shutdown();
}
