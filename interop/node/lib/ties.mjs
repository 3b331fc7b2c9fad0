// Reads a capture (OTLP/JSON) and says whether its tool spans tie on start
// time, and whether ordering them by start, then end time (the adapter's
// old rule) gives the model's request order.
import fs from "node:fs";
import { TOOL_CALLS } from "./server.mjs";

function isTool(span) {
  if (span.name === "ai.toolCall") return true;
  for (const { key, value } of span.attributes ?? []) {
    const v = value.stringValue;
    if (key === "openinference.span.kind" && v === "TOOL") return true;
    if (key === "traceloop.span.kind" && v === "tool") return true;
    if (key === "gen_ai.operation.name" && v === "execute_tool") return true;
  }
  return false;
}

export function tieReport(file) {
  const doc = JSON.parse(fs.readFileSync(file, "utf8"));
  const tools = [];
  for (const rs of doc.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        if (isTool(span)) tools.push(span);
      }
    }
  }
  const starts = tools.map((s) => BigInt(s.startTimeUnixNano));
  const tie = starts.some((s, i) => starts.indexOf(s) !== i);
  const byStartEnd = [...tools].sort((a, b) => {
    const [sa, sb] = [BigInt(a.startTimeUnixNano), BigInt(b.startTimeUnixNano)];
    if (sa !== sb) return sa < sb ? -1 : 1;
    const [ea, eb] = [BigInt(a.endTimeUnixNano), BigInt(b.endTimeUnixNano)];
    return ea === eb ? 0 : ea < eb ? -1 : 1;
  });
  const want = TOOL_CALLS.map((c) => c.name);
  const names = byStartEnd.map((s) => s.name.replace(/^execute_tool /, "").replace(/\.tool$/, ""));
  // ai.toolCall spans carry the name in an attribute
  byStartEnd.forEach((s, i) => {
    const a = (s.attributes ?? []).find((x) => x.key === "ai.toolCall.name");
    if (a) names[i] = a.value.stringValue;
  });
  return { tools: tools.length, tie, startEndWrong: names.join() !== want.join() };
}
