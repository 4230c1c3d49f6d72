// Mastra Agent + createTool tools against the scripted model (AI SDK OpenAI provider, Chat
// Completions), traced by Mastra's own observability (@mastra/observability) and exported as
// OTLP/HTTP protobuf by @mastra/otel-exporter.
// Run by `python -m captures.build mastra` (see captures/README.md).
import { Mastra } from "@mastra/core/mastra";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { InMemoryStore } from "@mastra/core/storage";
import { Memory } from "@mastra/memory";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { createOpenAI } from "@ai-sdk/openai";
import { z } from "zod";

// ---- scenarios: a copy of captures/scenarios.py (keep identical) ----
const SQL = "SELECT user_id, SUM(amount) AS revenue FROM user_revenue_table " +
  "GROUP BY user_id ORDER BY revenue DESC LIMIT 10";
const SCENARIOS = [
  { id: "S1", session: "s1-weather", user: "user-alice", turns: ["What's the weather in Tokyo?"] },
  { id: "S2", session: "s2-multi-tool", user: "user-alice", turns: ["Compare the weather in Paris and London"] },
  { id: "S3", session: "s3-followup", user: "user-dave", turns: ["What's the weather in Paris?", "What about tomorrow?"] },
  { id: "S4", session: "s4-sql", user: "user-bob", turns: ["Show me the top 10 users by revenue"] },
  { id: "S5", session: "s5-tool-error", user: "user-alice", turns: ["What's the weather in Berlin?"] },
  { id: "S6", session: "s6-retrieval", user: "user-carol", turns: ["What is your refund policy?"] },
];
const WEATHER = { Tokyo: "22°C and sunny", Paris: "18°C and cloudy", London: "15°C and rainy", Berlin: "12°C and windy" };
const DOCUMENTS = [
  { id: "policy-001", content: "Refunds: a full refund is available within 30 days of purchase." },
  { id: "policy-002", content: "Refunds are paid to the original payment method within 5 business days." },
];
const TOOL_DESCRIPTIONS = {
  get_weather: "Get the current weather in a city.",
  get_forecast: "Get the weather forecast for a city, some days ahead.",
  call_db_agent: "Answer a question about the sales database with SQL.",
  search_docs: "Search the policy documents.",
};
/** The tool's result; throws for an unknown city (S5's failed first call), like run_tool in scenarios.py. */
function runTool(name, args) {
  if (name === "get_weather") {
    const city = args.city;
    if (!(city in WEATHER)) throw new Error(`Unknown city: ${city}`);
    return `It is ${WEATHER[city]} in ${city}.`;
  }
  if (name === "get_forecast") return `Forecast for ${args.city} in ${args.days} day(s): 20°C and sunny.`;
  if (name === "call_db_agent") {
    return { sql: SQL, rows: Array.from({ length: 10 }, (_, k) => ({ user_id: `u${k + 1}`, revenue: 1000 - 50 * (k + 1) })) };
  }
  if (name === "search_docs") return DOCUMENTS;
  throw new Error(`unknown tool ${name}`);
}
// ---- end of scenarios ----

const CAPTURE_NAME = process.env.CAPTURE_NAME ?? "mastra";
const ENDPOINT = (process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "http://127.0.0.1:4318").replace(/\/$/, "");
// OTEL_RESOURCE_ATTRIBUTES, which the OtelExporter does not read itself, as its resourceAttributes.
const RESOURCE_ATTRIBUTES = Object.fromEntries((process.env.OTEL_RESOURCE_ATTRIBUTES ?? "")
  .split(",").filter((kv) => kv.includes("=")).map((kv) => kv.split("=").map((s) => decodeURIComponent(s.trim()))));

const getWeather = createTool({
  id: "get_weather", description: TOOL_DESCRIPTIONS.get_weather,
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => runTool("get_weather", { city }),
});
const getForecast = createTool({
  id: "get_forecast", description: TOOL_DESCRIPTIONS.get_forecast,
  inputSchema: z.object({ city: z.string(), days: z.number().int() }),
  execute: async ({ city, days }) => runTool("get_forecast", { city, days }),
});
const callDbAgent = createTool({
  id: "call_db_agent", description: TOOL_DESCRIPTIONS.call_db_agent,
  inputSchema: z.object({ question: z.string() }),
  execute: async ({ question }) => runTool("call_db_agent", { question }),
});
const searchDocs = createTool({
  id: "search_docs", description: TOOL_DESCRIPTIONS.search_docs,
  inputSchema: z.object({ query: z.string() }),
  execute: async ({ query }) => runTool("search_docs", { query }),
});

const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY ?? "sk-scripted" });
const agent = new Agent({
  id: "assistant",
  name: "Assistant",
  instructions: "You are a helpful assistant. Use the tools to answer.",
  model: openai.chat("gpt-4o-mini"),
  tools: { get_weather: getWeather, get_forecast: getForecast, call_db_agent: callDbAgent, search_docs: searchDocs },
  // Message history per thread (the conversation) and resource (the user).
  memory: new Memory({ options: { lastMessages: 20 } }),
});

// Mastra's observability, the documented way: an Observability registry with one config whose
// exporter is the OtelExporter ("custom" provider = any OTLP endpoint).
const otelExporter = new OtelExporter({
  provider: { custom: { endpoint: ENDPOINT, protocol: "http/protobuf" } },
  resourceAttributes: RESOURCE_ATTRIBUTES,
});
const mastra = new Mastra({
  agents: { assistant: agent },
  storage: new InMemoryStore(),
  observability: new Observability({
    configs: {
      otel: { serviceName: process.env.OTEL_SERVICE_NAME ?? `captures-${CAPTURE_NAME}`, exporters: [otelExporter] },
    },
  }),
});

const assistant = mastra.getAgent("assistant");
for (const scenario of SCENARIOS) {
  const sessionId = `${CAPTURE_NAME}-${scenario.session}`;
  for (const turn of scenario.turns) {
    // One generate() per user turn. The session is the memory thread (resource = the user), and
    // the trace carries sessionId / userId as Mastra tracing metadata (mastra.metadata.*).
    const result = await assistant.generate(turn, {
      memory: { thread: sessionId, resource: scenario.user },
      tracingOptions: { metadata: { sessionId, userId: scenario.user } },
    });
    console.log(`${scenario.id} ${turn} -> ${result.text}`);
  }
}

await mastra.shutdown?.();
await otelExporter.shutdown?.();
