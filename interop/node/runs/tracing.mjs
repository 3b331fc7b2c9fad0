// The tracing setup the runs that register their own provider share (the
// OpenLLMetry runs get theirs from the Traceloop SDK).
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";

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
