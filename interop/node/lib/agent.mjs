// A tiny tool-calling agent loop over the real `openai` client, with real
// tool functions. `wrapTool(name, fn)` lets each library put its tool span
// around the call: the wrapped function is called with the parsed arguments
// object and the model's tool call, and returns the tool's result string.
import { MODEL, PARALLEL } from "./server.mjs";

export const SYSTEM_PROMPT =
  "You are a travel agent. Use the tools to search flights and book hotels, then summarise.";

export const TOOL_DEFINITIONS = [
  {
    type: "function",
    function: {
      name: "search_flights",
      description: "Search flights between two airports on a date.",
      parameters: {
        type: "object",
        properties: {
          origin: { type: "string", description: "IATA code of the departure airport" },
          destination: { type: "string", description: "IATA code of the arrival airport" },
          date: { type: "string", description: "Departure date, YYYY-MM-DD" },
        },
        required: ["origin", "destination"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "book_hotel",
      description: "Book a hotel in a city for a number of nights.",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string" },
          nights: { type: "integer", minimum: 1 },
        },
        required: ["city", "nights"],
        additionalProperties: false,
      },
    },
  },
];

// The real tool implementations.
const TOOL_IMPLS = {
  search_flights({ origin, destination, date }) {
    return JSON.stringify({
      flights: [
        { flight: "TP 541", origin, destination, date, departs: "10:05", price_eur: 129 },
        { flight: "LH 1166", origin, destination, date, departs: "14:40", price_eur: 187 },
      ],
    });
  },
  book_hotel({ city, nights }) {
    return JSON.stringify({ confirmation: "HX-4471", hotel: "Hotel Avenida", city, nights });
  },
};

// In the parallel scenario the tools are async and the flight search waits
// on a slower upstream (3 ms), so the call the model asked for second ends
// first: the case that ordering sibling tool spans by start, then end time,
// gets wrong when their start times tie.
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const TOOLS = PARALLEL
  ? {
      async search_flights(args) {
        await sleep(3);
        return TOOL_IMPLS.search_flights(args);
      },
      async book_hotel(args) {
        return TOOL_IMPLS.book_hotel(args);
      },
    }
  : TOOL_IMPLS;

// agentStart is what an agent loop starts from: the tools, each wrapped by
// wrapTool (a run's tool spans), and the system and user messages.
export function agentStart(userRequest, wrapTool) {
  return {
    tools: Object.fromEntries(Object.entries(TOOLS).map(([name, fn]) => [name, wrapTool(name, fn)])),
    messages: [
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: userRequest },
    ],
  };
}

export async function runAgent(client, userRequest, wrapTool = (name, fn) => fn) {
  const { tools, messages } = agentStart(userRequest, wrapTool);
  for (let step = 0; step < 5; step++) {
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages,
      tools: TOOL_DEFINITIONS,
      temperature: 0,
    });
    const message = completion.choices[0].message;
    messages.push(message);
    if (!message.tool_calls?.length) {
      return message.content;
    }
    const run = (call) => tools[call.function.name](JSON.parse(call.function.arguments), call);
    // parallel: all calls of the turn at once (as agent frameworks do),
    // results appended in request order
    const results = [];
    if (PARALLEL) {
      results.push(...(await Promise.all(message.tool_calls.map(run))));
    } else {
      for (const call of message.tool_calls) {
        results.push(await run(call));
      }
    }
    message.tool_calls.forEach((call, i) =>
      messages.push({ role: "tool", tool_call_id: call.id, content: results[i] }),
    );
  }
  throw new Error("agent did not finish in 5 steps");
}
