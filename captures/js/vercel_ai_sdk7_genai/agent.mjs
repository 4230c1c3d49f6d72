// Vercel AI SDK 7 (ai@7) playing the six scripted scenarios of captures/scenarios.py.
//
// Telemetry: AI SDK 7 no longer builds spans itself; its OpenTelemetry integrations live in
// @ai-sdk/otel and are registered once with registerTelemetry(). This capture registers
// OpenTelemetry, the recommended integration that follows the OpenTelemetry GenAI semantic
// conventions (invoke_agent / step / chat / execute_tool spans with gen_ai.* attributes).
// Telemetry is on by default once an integration is registered; inputs and outputs are
// recorded (the default).
// Session and user: AI SDK 7 has no telemetry `metadata` any more; application data goes in
// `runtimeContext`, is let through to telemetry with telemetry.includeRuntimeContext, and the
// integration writes it on its spans when its documented supplemental option
// `runtimeContext: true` is on (-> ai.settings.context.sessionId / .userId).
// The spans go to the global tracer provider of @opentelemetry/sdk-node, exported over
// OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT.

process.env.OTEL_METRICS_EXPORTER ??= "none";
process.env.OTEL_LOGS_EXPORTER ??= "none";

const { NodeSDK } = await import("@opentelemetry/sdk-node");
const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-proto");

const sdk = new NodeSDK({ traceExporter: new OTLPTraceExporter() });
sdk.start();

const { generateText, streamText, tool, jsonSchema, isStepCount, registerTelemetry } = await import("ai");
const { createOpenAI } = await import("@ai-sdk/openai");
const { OpenTelemetry } = await import("@ai-sdk/otel");
registerTelemetry(new OpenTelemetry({ runtimeContext: true }));

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

const CAPTURE = process.env.CAPTURE_NAME ?? "vercel_ai_sdk7_genai";
const INSTRUCTIONS = "You are a helpful assistant. Use the tools to answer questions about weather, sales data and policies.";

const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
const model = openai.chat("gpt-4o-mini"); // Chat Completions API

const tools = Object.fromEntries(Object.entries(TOOLS).map(([name, spec]) => [name, tool({
  description: spec.description,
  inputSchema: jsonSchema(spec.parameters),
  execute: async (args) => runTool(name, args),
})]));

async function runTurn(scenario, messages, streaming) {
  const options = {
    model,
    instructions: INSTRUCTIONS,
    messages,
    tools,
    stopWhen: isStepCount(5),
    runtimeContext: { sessionId: `${CAPTURE}-${scenario.session}`, userId: scenario.user },
    telemetry: {
      functionId: "weather-agent",
      includeRuntimeContext: { sessionId: true, userId: true },
    },
  };
  if (streaming) {
    const result = streamText(options);
    const text = await result.text;
    return { text, messages: await result.responseMessages };
  }
  const result = await generateText(options);
  // AI SDK 7: the accumulated assistant/tool messages of all steps (step.response.messages no
  // longer accumulates), fed back as the conversation history of the next turn.
  return { text: result.text, messages: result.responseMessages };
}

try {
  for (const scenario of SCENARIOS) {
    const history = [];
    for (const turn of scenario.turns) {
      history.push({ role: "user", content: turn });
      // S1 goes through streamText so that the streamText spans are captured as well.
      const { text, messages } = await runTurn(scenario, [...history], scenario.id === "S1");
      history.push(...messages);
      console.log(`${scenario.id} ${JSON.stringify(turn)} -> ${JSON.stringify(text)}`);
    }
  }
} finally {
  await sdk.shutdown(); // flushes the BatchSpanProcessor
}
