// LangChain JS + OpenInference: @arizeai/openinference-instrumentation-langchain
// on @langchain/core's callback manager, a LangGraph createReactAgent over
// @langchain/openai's ChatOpenAI (against the same fake server) with the
// same two tools as LangChain tools. The instrumentation writes every span:
// a CHAIN root (no AGENT kind anywhere) with the graph's plumbing chains
// around the LLM and TOOL spans. LangGraph's ToolNode runs a turn's tool
// calls in parallel.
import { memoryTracing, writeRun } from "./tracing.mjs";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { tool } from "@langchain/core/tools";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { startServer, USER_REQUEST, FINAL_TEXT, MODEL } from "../lib/server.mjs";
import { SYSTEM_PROMPT, TOOL_DEFINITIONS, TOOLS } from "../lib/agent.mjs";
import { check, warm } from "./common.mjs";

const { exporter, provider } = memoryTracing("interop-langchain");
const instrumentation = new LangChainInstrumentation({ tracerProvider: provider });
instrumentation.manuallyInstrument(CallbackManagerModule);

const server = await startServer();
const model = new ChatOpenAI({
  model: MODEL,
  temperature: 0,
  apiKey: "sk-interop",
  maxRetries: 0,
  configuration: { baseURL: server.baseURL },
});
const tools = TOOL_DEFINITIONS.map(({ function: f }) =>
  tool(async (args) => TOOLS[f.name](args), {
    name: f.name,
    description: f.description,
    schema: f.parameters, // a JSON schema: the same definitions as the other runs
  }),
);
const agent = createReactAgent({ llm: model, tools, name: "travel-agent" });
const state = await warm(
  () => agent.invoke({ messages: [new SystemMessage(SYSTEM_PROMPT), new HumanMessage(USER_REQUEST)] }),
  server,
  exporter,
);
const last = state.messages[state.messages.length - 1];
check(last.content === FINAL_TEXT, `final text: ${JSON.stringify(last.content)}`);
await writeRun("langchain", server, provider, exporter);
