// LangGraph.js createReactAgent + ChatOpenAI against the scripted model, traced by
// OpenInference's LangChain.js instrumentation, exported as OTLP/HTTP protobuf.
// Run by `python -m captures.build langgraphjs_openinference` (see captures/README.md).
import { context } from "@opentelemetry/api";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector } from "@opentelemetry/resources";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import { setSession, setUser } from "@arizeai/openinference-core";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { tool } from "@langchain/core/tools";
import { HumanMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { MemorySaver } from "@langchain/langgraph";
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

const CAPTURE_NAME = process.env.CAPTURE_NAME ?? "langgraphjs_openinference";
const ENDPOINT = (process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "http://127.0.0.1:4318").replace(/\/$/, "");

// Telemetry, the documented way: a NodeTracerProvider with an OTLP exporter, and the
// LangChain instrumentation applied by hand to @langchain/core's callback manager.
const provider = new NodeTracerProvider({
  resource: defaultResource().merge(detectResources({ detectors: [envDetector] })),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${ENDPOINT}/v1/traces` }))],
});
provider.register();
const instrumentation = new LangChainInstrumentation({ tracerProvider: provider });
instrumentation.manuallyInstrument(CallbackManagerModule);

const getWeather = tool(async ({ city }) => runTool("get_weather", { city }), {
  name: "get_weather", description: TOOL_DESCRIPTIONS.get_weather,
  schema: z.object({ city: z.string() }),
});
const getForecast = tool(async ({ city, days }) => runTool("get_forecast", { city, days }), {
  name: "get_forecast", description: TOOL_DESCRIPTIONS.get_forecast,
  schema: z.object({ city: z.string(), days: z.number().int() }),
});
const callDbAgent = tool(async ({ question }) => runTool("call_db_agent", { question }), {
  name: "call_db_agent", description: TOOL_DESCRIPTIONS.call_db_agent,
  schema: z.object({ question: z.string() }),
});
const searchDocs = tool(async ({ query }) => runTool("search_docs", { query }), {
  name: "search_docs", description: TOOL_DESCRIPTIONS.search_docs,
  schema: z.object({ query: z.string() }),
});

const model = new ChatOpenAI({
  model: "gpt-4o-mini",
  temperature: 0,
  apiKey: process.env.OPENAI_API_KEY ?? "sk-scripted",
  configuration: { baseURL: process.env.OPENAI_BASE_URL },
});
const checkpointer = new MemorySaver();
const agent = createReactAgent({
  llm: model,
  tools: [getWeather, getForecast, callDbAgent, searchDocs],
  prompt: "You are a helpful assistant. Use the tools to answer.",
  checkpointer,
});

for (const scenario of SCENARIOS) {
  const sessionId = `${CAPTURE_NAME}-${scenario.session}`;
  // OpenInference's context attributes: every span started inside carries session.id / user.id.
  const ctx = setUser(setSession(context.active(), { sessionId }), { userId: scenario.user });
  for (const turn of scenario.turns) {
    // One agent run per user turn; the MemorySaver keeps the conversation per thread_id.
    const result = await context.with(ctx, () =>
      agent.invoke({ messages: [new HumanMessage(turn)] }, { configurable: { thread_id: sessionId } }));
    const last = result.messages[result.messages.length - 1];
    console.log(`${scenario.id} ${turn} -> ${last.content}`);
  }
}

await provider.forceFlush();
await provider.shutdown();
