// OpenAI Agents JS (Agent + run() + tool()) against the scripted model over Chat Completions,
// its traces turned into OpenTelemetry spans by OpenInference's trace processor for the
// Agents SDK, exported as OTLP/HTTP protobuf.
// Run by `python -m captures.build openai_agents_js_openinference` (see captures/README.md).
import * as agents from "@openai/agents";
import { Agent, Runner, tool, user, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import { context } from "@opentelemetry/api";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector } from "@opentelemetry/resources";
import { OpenAIAgentsInstrumentation } from "@arizeai/openinference-instrumentation-openai-agents";
import { setSession, setUser } from "@arizeai/openinference-core";
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

const CAPTURE_NAME = process.env.CAPTURE_NAME ?? "openai_agents_js_openinference";
const ENDPOINT = (process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "http://127.0.0.1:4318").replace(/\/$/, "");

// Telemetry: an OTLP NodeTracerProvider, and OpenInference's processor registered with the
// Agents SDK in its default exclusive mode, which replaces the SDK's own OpenAI trace exporter
// (so nothing is sent to OpenAI's tracing endpoint).
const provider = new NodeTracerProvider({
  resource: defaultResource().merge(detectResources({ detectors: [envDetector] })),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${ENDPOINT}/v1/traces` }))],
});
provider.register();
const instrumentation = new OpenAIAgentsInstrumentation({ tracerProvider: provider });
instrumentation.manuallyInstrument(agents);
setTracingDisabled(false);

// The model: the scripted OpenAI-compatible server, over Chat Completions.
setDefaultOpenAIClient(new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY ?? "sk-scripted" }));
setOpenAIAPI("chat_completions");

// A failing tool's error goes back to the model as the tool's output (tool()'s errorFunction).
// The SDK's default errorFunction answers a fixed "An error occurred while running the tool.
// Please try again." and redacts the error from the trace; the documented way to pass the
// details on is an errorFunction of one's own, which here mirrors the Python SDK's default text.
const errorFunction = (_runContext, error) =>
  `An error occurred while running the tool. Please try again. Error: ${error instanceof Error ? error.message : String(error)}`;
const tools = [
  tool({ name: "get_weather", description: TOOL_DESCRIPTIONS.get_weather,
    parameters: z.object({ city: z.string() }),
    errorFunction,
    execute: async ({ city }) => runTool("get_weather", { city }) }),
  tool({ name: "get_forecast", description: TOOL_DESCRIPTIONS.get_forecast,
    parameters: z.object({ city: z.string(), days: z.number().int() }),
    errorFunction,
    execute: async ({ city, days }) => runTool("get_forecast", { city, days }) }),
  tool({ name: "call_db_agent", description: TOOL_DESCRIPTIONS.call_db_agent,
    parameters: z.object({ question: z.string() }),
    errorFunction,
    execute: async ({ question }) => runTool("call_db_agent", { question }) }),
  tool({ name: "search_docs", description: TOOL_DESCRIPTIONS.search_docs,
    parameters: z.object({ query: z.string() }),
    errorFunction,
    execute: async ({ query }) => runTool("search_docs", { query }) }),
];
const agent = new Agent({
  name: "Assistant",
  instructions: "You are a helpful assistant. Use the tools to answer.",
  model: "gpt-4o-mini",
  tools,
});

for (const scenario of SCENARIOS) {
  const sessionId = `${CAPTURE_NAME}-${scenario.session}`;
  // The SDK's own trace grouping for a conversation: one Runner per session with its groupId
  // (and trace metadata), sensitive data (inputs, outputs, tool errors) included in traces.
  const runner = new Runner({
    workflowName: `${CAPTURE_NAME} ${scenario.id}`,
    groupId: sessionId,
    traceMetadata: { session_id: sessionId, user_id: scenario.user },
    traceIncludeSensitiveData: true,
  });
  // OpenInference's context attributes: session.id / user.id on every span started inside.
  const ctx = setUser(setSession(context.active(), { sessionId }), { userId: scenario.user });
  let history = [];
  for (const turn of scenario.turns) {
    // One run per user turn; a follow-up turn gets the previous run's history.
    const input = history.length ? [...history, user(turn)] : turn;
    const result = await context.with(ctx, () => runner.run(agent, input));
    history = result.history;
    console.log(`${scenario.id} ${turn} -> ${result.finalOutput}`);
  }
}

await provider.forceFlush();
await provider.shutdown();
