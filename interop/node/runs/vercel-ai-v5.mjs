// Vercel AI SDK 5 (legacy `ai.*` telemetry spans): generateText with tools
// and experimental_telemetry, over the real @ai-sdk/openai 2 provider
// (chat-completions API) against the same fake server. The SDK writes the
// agent span (ai.generateText), one ai.generateText.doGenerate span per model
// call and one ai.toolCall span per tool execution itself.
import { memoryTracing, writeRun } from "./tracing.mjs";
import { generateText, tool, jsonSchema, stepCountIs } from "ai-v5";
import { createOpenAI } from "ai-sdk-openai-v2";
import { startServer, USER_REQUEST, FINAL_TEXT, MODEL } from "../lib/server.mjs";
import { SYSTEM_PROMPT, TOOL_DEFINITIONS, TOOLS } from "../lib/agent.mjs";
import { check, warm } from "./common.mjs";

const { exporter, provider } = memoryTracing("interop-vercel-ai-v5");

const server = await startServer();
const openai = createOpenAI({ apiKey: "sk-interop", baseURL: server.baseURL });
const tools = Object.fromEntries(
  TOOL_DEFINITIONS.map(({ function: f }) => [
    f.name,
    tool({
      description: f.description,
      inputSchema: jsonSchema(f.parameters),
      execute: async (args) => TOOLS[f.name](args),
    }),
  ]),
);
const result = await warm(() => generateText({
  model: openai.chat(MODEL),
  system: SYSTEM_PROMPT,
  prompt: USER_REQUEST,
  tools,
  temperature: 0,
  maxRetries: 0,
  stopWhen: stepCountIs(5),
  experimental_telemetry: { isEnabled: true, functionId: "travel-agent" },
}), server, exporter);
check(result.text === FINAL_TEXT, `final text: ${result.text}`);
await writeRun("vercel-ai-v5", server, provider, exporter);
