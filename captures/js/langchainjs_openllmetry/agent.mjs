// LangChain.js v1 `createAgent` + ChatOpenAI (Chat Completions) playing the six scripted
// scenarios of captures/scenarios.py, traced by Traceloop OpenLLMetry JS
// (@traceloop/node-server-sdk) and its LangChain instrumentation. Run by
// `python -m captures.build langchainjs_openllmetry`.
//
// Telemetry, the documented way: traceloop.initialize({appName, baseUrl, disableBatch, exporter,
// instrumentModules}) with an OTLP/HTTP protobuf exporter aimed at OTEL_EXPORTER_OTLP_ENDPOINT
// (baseUrl is the same sink, never Traceloop's cloud; prompt-registry sync off). OpenLLMetry's
// LangChain instrumentation (@traceloop/instrumentation-langchain) is always on: it patches
// @langchain/core's CallbackManager (the CJS copy, and the ESM copy through a dynamic import) so
// every run gets its TraceloopCallbackHandler; `instrumentModules: {langchain: true}` asks for it
// in manual mode. Content tracing is on (traceContent: true, the default).
//
// Session and user: each user turn runs inside traceloop.withWorkflow({name: "chat_turn",
// associationProperties: {session_id, user_id}, conversationId}), Traceloop's documented
// mechanism (-> traceloop.association.properties.* and gen_ai.conversation.id on every span
// started inside). The conversation history is LangGraph's normal one: a MemorySaver checkpointer
// keyed by thread_id = the session. createAgent's ToolNode turns a tool's exception into an
// error ToolMessage (its default handleToolErrors), so the model sees S5's error and retries.

process.env.TRACELOOP_TRACE_CONTENT ??= "true";
process.env.OTEL_METRICS_EXPORTER ??= "none";
process.env.OTEL_LOGS_EXPORTER ??= "none";

import { trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import * as traceloop from "@traceloop/node-server-sdk";
import { createAgent, tool } from "langchain";
import { MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { z } from "zod";

// --- the scenario table and tools of captures/scenarios.py, kept identical --------------------

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

const WEATHER = {
  Tokyo: "22°C and sunny", Paris: "18°C and cloudy", London: "15°C and rainy", Berlin: "12°C and windy",
};

const DOCUMENTS = [
  { id: "policy-001", content: "Refunds: a full refund is available within 30 days of purchase." },
  { id: "policy-002", content: "Refunds are paid to the original payment method within 5 business days." },
];

const TOOLS = {
  get_weather: {
    description: "Get the current weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
  get_forecast: {
    description: "Get the weather forecast for a city, some days ahead.",
    parameters: {
      type: "object", properties: { city: { type: "string" }, days: { type: "integer" } },
      required: ["city", "days"],
    },
  },
  call_db_agent: {
    description: "Answer a question about the sales database with SQL.",
    parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
  },
  search_docs: {
    description: "Search the policy documents.",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  },
};

/** The tool's result; throws (like Python's ValueError) for an unknown city: S5's failed first call. */
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

// --- the agent --------------------------------------------------------------------------------

const CAPTURE = process.env.CAPTURE_NAME ?? "langchainjs_openllmetry";
const ENDPOINT = (process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "http://127.0.0.1:4318").replace(/\/$/, "");
const SYSTEM = "You are a helpful assistant. Use the tools to answer.";

traceloop.initialize({
  appName: process.env.OTEL_SERVICE_NAME ?? CAPTURE,
  baseUrl: ENDPOINT,
  disableBatch: true,
  exporter: new OTLPTraceExporter({ url: `${ENDPOINT}/v1/traces` }),
  instrumentModules: { langchain: true },
  traceContent: true,
  traceloopSyncEnabled: false,
  silenceInitializationMessage: true,
});
// The ESM CallbackManager is patched after a dynamic import(); let it settle.
await new Promise((resolve) => setTimeout(resolve, 100));

const SCHEMAS = {
  get_weather: z.object({ city: z.string() }),
  get_forecast: z.object({ city: z.string(), days: z.number().int() }),
  call_db_agent: z.object({ question: z.string() }),
  search_docs: z.object({ query: z.string() }),
};
const tools = Object.entries(TOOLS).map(([name, spec]) => tool(async (args) => {
  const result = runTool(name, args);
  return typeof result === "string" ? result : JSON.stringify(result);
}, { name, description: spec.description, schema: SCHEMAS[name] }));

const model = new ChatOpenAI({
  model: "gpt-4o-mini",
  apiKey: process.env.OPENAI_API_KEY,
  configuration: { baseURL: process.env.OPENAI_BASE_URL },
});
const agent = createAgent({ model, tools, systemPrompt: SYSTEM, checkpointer: new MemorySaver() });

for (const scenario of SCENARIOS) {
  const session = `${CAPTURE}-${scenario.session}`;
  for (const turn of scenario.turns) {
    const result = await traceloop.withWorkflow(
      { name: "chat_turn", associationProperties: { session_id: session, user_id: scenario.user }, conversationId: session },
      (text) => agent.invoke({ messages: [{ role: "user", content: text }] }, { configurable: { thread_id: session } }),
      turn,
    );
    const last = result.messages[result.messages.length - 1];
    console.log(`${scenario.id}: ${JSON.stringify(turn)} -> ${JSON.stringify(last.content)}`);
  }
}

await traceloop.forceFlush();
await trace.getTracerProvider().getDelegate?.().shutdown?.();
