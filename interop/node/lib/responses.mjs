// The same scripted travel agent over the OpenAI Responses API: a fake
// POST /v1/responses endpoint and an agent loop over the real `openai`
// client's responses.create. Stateless like server.mjs: the reply depends on
// how many function_call_output items the request's input already carries.
import http from "node:http";
import { MODEL, RESPONSE_MODEL, TOOL_CALLS, USAGE, FINAL_TEXT } from "./server.mjs";
import { SYSTEM_PROMPT, TOOL_DEFINITIONS, TOOLS } from "./agent.mjs";

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

export async function startResponsesServer() {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url.endsWith("/responses")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      const request = JSON.parse(body);
      requests.push(request);
      const turn = Math.min(
        request.input.filter((it) => it.type === "function_call_output").length,
        TOOL_CALLS.length,
      );
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(reply(turn, 1795000000 + turn)));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

// Responses API tools are flat: {type, name, description, parameters}.
const RESPONSE_TOOLS = TOOL_DEFINITIONS.map((t) => ({ type: "function", ...t.function }));

export async function runResponsesAgent(client, userRequest, wrapTool = (name, fn) => fn) {
  const tools = Object.fromEntries(
    Object.entries(TOOLS).map(([name, fn]) => [name, wrapTool(name, fn)]),
  );
  const input = [
    { role: "system", content: SYSTEM_PROMPT },
    { role: "user", content: userRequest },
  ];
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
