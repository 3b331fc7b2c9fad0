// A fake OpenAI chat-completions endpoint that scripts a tool-calling agent
// conversation. It is stateless: the reply depends on how many tool results
// the request already carries. Two scenarios (INTEROP_SCENARIO):
//   sequential (default): 0: call search_flights, 1: call book_hotel,
//     2: answer in text (three model calls);
//   parallel: 0: call search_flights and book_hotel in one reply (the agent
//     runs both at once, so their tool spans start in the same millisecond),
//     2: answer in text (two model calls).
import http from "node:http";

export const SCENARIO = process.env.INTEROP_SCENARIO === "parallel" ? "parallel" : "sequential";
export const PARALLEL = SCENARIO === "parallel";
// Number of chat completions the scripted run makes.
export const MODEL_CALLS = PARALLEL ? 2 : 3;

export const MODEL = "gpt-4o-mini";
export const RESPONSE_MODEL = "gpt-4o-mini-2024-07-18";

export const USER_REQUEST =
  "Find me a flight from Berlin to Lisbon on 4 December 2026 and book a hotel in Lisbon for 5 nights.";
export const FINAL_TEXT =
  "You are on TP 541 from BER to LIS on 4 December 2026 (departs 10:05, EUR 129), and Hotel Avenida in Lisbon is booked for 5 nights (confirmation HX-4471).";

export const TOOL_CALLS = [
  {
    id: "call_sf_001",
    name: "search_flights",
    arguments: { origin: "BER", destination: "LIS", date: "2026-12-04" },
  },
  {
    id: "call_bh_002",
    name: "book_hotel",
    arguments: { city: "Lisbon", nights: 5 },
  },
];

// Token usage per turn.
export const USAGE = PARALLEL
  ? [
      { prompt_tokens: 142, completion_tokens: 55, total_tokens: 197 },
      { prompt_tokens: 284, completion_tokens: 46, total_tokens: 330 },
    ]
  : [
      { prompt_tokens: 142, completion_tokens: 31, total_tokens: 173 },
      { prompt_tokens: 221, completion_tokens: 24, total_tokens: 245 },
      { prompt_tokens: 268, completion_tokens: 46, total_tokens: 314 },
    ];

function toolCallMessage(c) {
  return { id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.arguments) } };
}

function reply(turn, created) {
  const base = {
    id: `chatcmpl-interop-${turn + 1}`,
    object: "chat.completion",
    created,
    model: RESPONSE_MODEL,
    system_fingerprint: "fp_interop",
    usage: USAGE[turn],
  };
  const requested = PARALLEL ? (turn === 0 ? TOOL_CALLS : []) : turn < TOOL_CALLS.length ? [TOOL_CALLS[turn]] : [];
  if (requested.length > 0) {
    return {
      ...base,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            refusal: null,
            tool_calls: requested.map(toolCallMessage),
          },
          logprobs: null,
          finish_reason: "tool_calls",
        },
      ],
    };
  }
  return {
    ...base,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: FINAL_TEXT, refusal: null },
        logprobs: null,
        finish_reason: "stop",
      },
    ],
  };
}

// serveScripted serves a scripted OpenAI API on a loopback port: a POST to
// a URL ending in route is answered with respond(request) = [status, body]
// as JSON, anything else with 404. requests keeps every request body.
export async function serveScripted(route, respond) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const send = (status, reply) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(reply));
      };
      if (req.method !== "POST" || !req.url.endsWith(route)) {
        send(404, { error: { message: `no route ${req.method} ${req.url}` } });
        return;
      }
      const request = JSON.parse(body);
      requests.push(request);
      send(...respond(request));
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

export function startServer() {
  return serveScripted("/chat/completions", (request) => {
    if (request.stream) {
      return [400, { error: { message: "streaming is not scripted" } }];
    }
    const results = request.messages.filter((m) => m.role === "tool").length;
    // parallel: one reply with both calls, then the text (turn 1)
    const turn = PARALLEL ? Math.min(results, 1) : Math.min(results, TOOL_CALLS.length);
    return [200, reply(turn, 1795000000 + turn)];
  });
}
