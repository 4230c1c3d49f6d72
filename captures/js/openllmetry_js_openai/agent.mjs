// Traceloop OpenLLMetry for Node (@traceloop/node-server-sdk) tracing a hand-written Chat
// Completions tool loop (the `openai` npm client) that plays the six scripted scenarios of
// captures/scenarios.py. Run by `python -m captures.build openllmetry_js_openai`.
//
// Telemetry, the documented way: traceloop.initialize({appName, baseUrl, disableBatch, exporter,
// instrumentModules: {openAI: OpenAI}}). The exporter is an OTLP/HTTP protobuf exporter aimed at
// OTEL_EXPORTER_OTLP_ENDPOINT (baseUrl is the same sink, never Traceloop's cloud); the prompt
// registry sync is off (traceloopSyncEnabled: false); TRACELOOP_TELEMETRY=false is set as asked,
// though the Node SDK 0.27.0 reads no such variable (it sends no usage telemetry). In ESM the require hook never sees `openai`, so the OpenAI class
// is handed over with instrumentModules (Traceloop's documented manual instrumentation); its
// instrumentation supports openai >=4 <7 (and openai 7 needs Node 22), hence openai 6.x.
// Content tracing is on (traceContent: true, the default).
//
// Spans: traceloop.withWorkflow("chat_turn") per user turn, withAgent("assistant") for the tool
// loop, the OpenAI instrumentation's "chat gpt-4o-mini" per model call, withTool(<tool name>) per
// tool call. Session and user: associationProperties {session_id, user_id} on the workflow
// (-> traceloop.association.properties.* on every span inside it) and its conversationId
// (-> gen_ai.conversation.id).
//
// A failing tool: withTool() only ends its span when the wrapped function returns or resolves
// (a throw or a rejection leaves the span open, so it is never exported). So the tool function
// catches the error itself, records it on its span with the plain OpenTelemetry API
// (recordException + ERROR status; OpenLLMetry has no error mechanism of its own) and returns
// "Error: <message>", which the loop sends back to the model as the tool message: the model retries.

process.env.TRACELOOP_TELEMETRY ??= "false";
process.env.TRACELOOP_TRACE_CONTENT ??= "true";
process.env.OTEL_METRICS_EXPORTER ??= "none";
process.env.OTEL_LOGS_EXPORTER ??= "none";

import { SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import * as traceloop from "@traceloop/node-server-sdk";
import OpenAI from "openai";

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

const CAPTURE = process.env.CAPTURE_NAME ?? "openllmetry_js_openai";
const ENDPOINT = (process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "http://127.0.0.1:4318").replace(/\/$/, "");
const SYSTEM = "You are a helpful assistant. Use the tools to answer.";
const MODEL = "gpt-4o-mini";

traceloop.initialize({
  appName: process.env.OTEL_SERVICE_NAME ?? CAPTURE,
  baseUrl: ENDPOINT,
  disableBatch: true,
  exporter: new OTLPTraceExporter({ url: `${ENDPOINT}/v1/traces` }),
  instrumentModules: { openAI: OpenAI },
  traceContent: true,
  traceloopSyncEnabled: false,
  silenceInitializationMessage: true,
});

const client = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
const TOOL_SPECS = Object.entries(TOOLS).map(([name, spec]) => ({ type: "function", function: { name, ...spec } }));

/** One tool call, as an OpenLLMetry tool span; an error is recorded on the span and returned as text. */
function callTool(name, args) {
  return traceloop.withTool({ name }, async (toolArgs) => {
    try {
      const result = runTool(name, toolArgs);
      return typeof result === "string" ? result : JSON.stringify(result);
    } catch (error) {
      const span = trace.getActiveSpan();
      span?.recordException(error);
      span?.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      return `Error: ${error.message}`;
    }
  }, args);
}

/** The tool loop: model -> tools -> model ... until the model answers in text. */
function assistant(messages) {
  return traceloop.withAgent({ name: "assistant" }, async (messages) => {
    for (let i = 0; i < 8; i++) {
      const response = await client.chat.completions.create({ model: MODEL, messages, tools: TOOL_SPECS });
      const message = response.choices[0].message;
      if (!message.tool_calls?.length) {
        messages.push({ role: "assistant", content: message.content });
        return message.content ?? "";
      }
      messages.push({ role: "assistant", content: message.content, tool_calls: message.tool_calls });
      for (const call of message.tool_calls) {
        const content = await callTool(call.function.name, JSON.parse(call.function.arguments));
        messages.push({ role: "tool", tool_call_id: call.id, content });
      }
    }
    throw new Error("the model kept asking for tools");
  }, messages);
}

for (const scenario of SCENARIOS) {
  const session = `${CAPTURE}-${scenario.session}`;
  const messages = [{ role: "system", content: SYSTEM }];
  for (const turn of scenario.turns) {
    const answer = await traceloop.withWorkflow(
      { name: "chat_turn", associationProperties: { session_id: session, user_id: scenario.user }, conversationId: session },
      async (text) => {
        messages.push({ role: "user", content: text });
        return assistant(messages);
      },
      turn,
    );
    console.log(`${scenario.id}: ${JSON.stringify(turn)} -> ${JSON.stringify(answer)}`);
  }
}

await traceloop.forceFlush();
await trace.getTracerProvider().getDelegate?.().shutdown?.();
