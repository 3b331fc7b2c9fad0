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

export function writeTraces(file, spans) {
  // In the order the spans ended, as an exporter sends them (children first).
  write(file, JsonTraceSerializer.serializeRequest(spans));
}

export function writeLogs(file, records) {
  write(file, JsonLogsSerializer.serializeRequest(records));
}
