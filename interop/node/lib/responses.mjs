// The same scripted travel agent over the OpenAI Responses API: a fake
// POST /v1/responses endpoint and an agent loop over the real `openai`
// client's responses.create. Stateless like server.mjs: the reply depends on
// how many function_call_output items the request's input already carries.
import { MODEL, RESPONSE_MODEL, TOOL_CALLS, USAGE, FINAL_TEXT, serveScripted } from "./server.mjs";
import { TOOL_DEFINITIONS, agentStart } from "./agent.mjs";

function reply(turn, created) {
  const u = USAGE[turn];
  const base = {
    id: `resp_interop_${turn + 1}`,
    object: "response",
    created_at: created,
    status: "completed",
    model: RESPONSE_MODEL,
    usage: {
      input_tokens: u.prompt_tokens,
      output_tokens: u.completion_tokens,
      total_tokens: u.total_tokens,
    },
  };
  if (turn < TOOL_CALLS.length) {
    const c = TOOL_CALLS[turn];
    return {
      ...base,
      output: [
        {
          type: "function_call",
          id: `fc_interop_${turn + 1}`,
          call_id: c.id,
          name: c.name,
          arguments: JSON.stringify(c.arguments),
          status: "completed",
        },
      ],
    };
  }
  return {
    ...base,
    output: [
      {
        type: "message",
        id: "msg_interop_3",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: FINAL_TEXT, annotations: [] }],
      },
    ],
  };
}

export function startResponsesServer() {
  return serveScripted("/responses", (request) => {
    const turn = Math.min(
      request.input.filter((it) => it.type === "function_call_output").length,
      TOOL_CALLS.length,
    );
    return [200, reply(turn, 1795000000 + turn)];
  });
}

// Responses API tools are flat: {type, name, description, parameters}.
const RESPONSE_TOOLS = TOOL_DEFINITIONS.map((t) => ({ type: "function", ...t.function }));

export async function runResponsesAgent(client, userRequest, wrapTool = (name, fn) => fn) {
  const { tools, messages: input } = agentStart(userRequest, wrapTool);
  for (let step = 0; step < 5; step++) {
    const response = await client.responses.create({
      model: MODEL,
      input,
      tools: RESPONSE_TOOLS,
      temperature: 0,
    });
    const calls = response.output.filter((it) => it.type === "function_call");
    if (calls.length === 0) {
      return response.output_text;
    }
    for (const call of calls) {
      input.push({ type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments });
      const args = JSON.parse(call.arguments);
      const result = await tools[call.name](args, {
        id: call.call_id,
        function: { name: call.name, arguments: call.arguments },
      });
      input.push({ type: "function_call_output", call_id: call.call_id, output: result });
    }
  }
  throw new Error("agent did not finish in 5 steps");
}
