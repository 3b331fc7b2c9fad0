// Serialises finished spans (and log records) to OTLP/JSON export requests,
// the way @opentelemetry/exporter-trace-otlp-http does with its JSON
// serializer.
import fs from "node:fs";
import path from "node:path";
import { JsonTraceSerializer, JsonLogsSerializer } from "@opentelemetry/otlp-transformer";

function write(file, bytes) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Re-indent for readable diffs; the content is the serializer's.
  const doc = JSON.parse(Buffer.from(bytes).toString("utf8"));
  fs.writeFileSync(file, JSON.stringify(doc, null, 1) + "\n");
}

// The trace of the last root span to end: the captured run's (a process
// runs the agent twice, see runs/common.mjs warm; a span of the warm-up run
// can still be in the exporter when it is reset).
export function lastTraceId(spans) {
  const roots = spans.filter((s) => !s.parentSpanContext?.spanId && !s.parentSpanId);
  return roots.length ? roots[roots.length - 1].spanContext().traceId : undefined;
}

export function writeTraces(file, spans) {
  const traceId = lastTraceId(spans);
  // In the order the spans ended, as an exporter sends them (children first).
  write(file, JsonTraceSerializer.serializeRequest(spans.filter((s) => s.spanContext().traceId === traceId)));
  return traceId;
}

export function writeLogs(file, records, traceId) {
  const own = traceId ? records.filter((r) => r.spanContext?.traceId === traceId) : records;
  write(file, JsonLogsSerializer.serializeRequest(own));
}
