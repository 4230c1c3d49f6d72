-- An otel-eval database as schema version 1 wrote it (commit e49fe61, before the verdict column):
-- sessions tokyo-1 (pass), tokyo-2 (fail), joke-1 (matched a case with nothing to check: every
-- criterion skipped, stored as passed = 1, score 0.0), revenue-2 (unmatched). Spans, traces and
-- golden cases were deleted to keep it small. Made with the example weather agent and sqlite3 .dump.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE IF NOT EXISTS "spans" (
   "trace_id" TEXT,
   "span_id" TEXT,
   "parent_span_id" TEXT,
   "session_id" TEXT,
   "name" TEXT,
   "kind" TEXT,
   "status" TEXT,
   "start_ns" INTEGER,
   "end_ns" INTEGER,
   "received_ns" INTEGER,
   "convention" TEXT,
   "span_type" TEXT,
   "raw" TEXT,
   PRIMARY KEY ("trace_id", "span_id")
);
CREATE TABLE IF NOT EXISTS "agent_data" (
   "id" INTEGER PRIMARY KEY,
   "trace_id" TEXT,
   "span_id" TEXT,
   "session_id" TEXT,
   "level" TEXT,
   "user_id" TEXT,
   "task_id" TEXT,
   "turn_id" TEXT,
   "ground_truth" TEXT,
   "expected_tool_call" TEXT,
   "agent_name" TEXT,
   "agent_role" TEXT,
   "agent_task" TEXT,
   "system_prompt" TEXT,
   "agent_response" TEXT,
   "trace" TEXT,
   "tools_available" TEXT,
   "tool_calls" TEXT,
   "parameters_passed" TEXT,
   "tool_call_results" TEXT,
   "retrieval_query" TEXT,
   "retrieved_context" TEXT,
   "exit_status" TEXT,
   "agent_exit" INTEGER,
   "metadata" TEXT
);
CREATE TABLE IF NOT EXISTS "log_events" (
   "trace_id" TEXT,
   "span_id" TEXT,
   "time_ns" INTEGER,
   "event_name" TEXT,
   "body" TEXT,
   "attributes" TEXT,
   "received_ns" INTEGER,
   PRIMARY KEY ("trace_id", "span_id", "time_ns", "event_name")
);
CREATE TABLE IF NOT EXISTS "traces" (
   "trace_id" TEXT PRIMARY KEY,
   "session_id" TEXT,
   "root_span_id" TEXT,
   "start_ns" INTEGER,
   "end_ns" INTEGER,
   "span_count" INTEGER,
   "first_received_ns" INTEGER,
   "last_received_ns" INTEGER
);
CREATE TABLE IF NOT EXISTS "sessions" (
   "session_id" TEXT PRIMARY KEY,
   "status" TEXT DEFAULT 'open',
   "keyed_by" TEXT,
   "first_received_ns" INTEGER,
   "last_received_ns" INTEGER,
   "end_requested" INTEGER DEFAULT 0,
   "ended_ns" INTEGER,
   "end_reason" TEXT,
   "revision" INTEGER DEFAULT 0,
   "span_count" INTEGER DEFAULT 0,
   "trace_count" INTEGER DEFAULT 0,
   "user_id" TEXT,
   "agent_version" TEXT,
   "service_name" TEXT,
   "query" TEXT
);
INSERT INTO sessions VALUES('tokyo-1','scored','attribute',1795445390353052926,1795445390353052926,0,1795445390353792640,'shutdown',1,4,1,'user-demo','1.0.0','weather-agent','What''s the weather in Tokyo?');
INSERT INTO sessions VALUES('joke-1','scored','attribute',1795445390353052926,1795445390353052926,0,1795445390353792640,'shutdown',1,2,1,'user-demo','1.0.0','weather-agent','Tell me a joke');
INSERT INTO sessions VALUES('tokyo-2','scored','attribute',1795445390432187239,1795445390432187239,0,1795445390432873813,'shutdown',1,4,1,'user-demo','2.0.0','weather-agent','What''s the weather in Tokyo?');
INSERT INTO sessions VALUES('revenue-2','scored','attribute',1795445390432187239,1795445390432187239,0,1795445390432873813,'shutdown',1,4,1,'user-demo','2.0.0','weather-agent','Show me the top 10 users by revenue');
CREATE TABLE IF NOT EXISTS "golden_cases" (
   "eval_set_id" TEXT,
   "eval_id" TEXT,
   "name" TEXT,
   "query" TEXT,
   "source" TEXT,
   "file_hash" TEXT,
   "case_json" TEXT,
   "loaded_at" TEXT,
   PRIMARY KEY ("eval_set_id", "eval_id")
);
CREATE TABLE IF NOT EXISTS "evaluations" (
   "id" INTEGER PRIMARY KEY,
   "session_id" TEXT,
   "revision" INTEGER,
   "case_id" TEXT,
   "eval_set_id" TEXT,
   "matched_by" TEXT,
   "match_score" REAL,
   "passed" INTEGER,
   "score" REAL,
   "created_at" TEXT,
   "superseded" INTEGER DEFAULT 0,
   "config_hash" TEXT,
   "agent_version" TEXT,
   "query" TEXT,
   "expected_tool" TEXT,
   "actual_tool" TEXT,
   "expected_table" TEXT,
   "actual_table" TEXT,
   "sql_generated" INTEGER,
   "error" TEXT,
   "details" TEXT
);
INSERT INTO evaluations VALUES(1,'tokyo-1',1,'weather_tokyo','weather_agent','exact',100.0,1,1.0,'2026-11-23T14:49:50.423Z',0,'0d8feca367e3','1.0.0','What''s the weather in Tokyo?','get_weather','get_weather',NULL,NULL,0,NULL,'{"match": {"method": "exact", "score": 100.0, "evidence": {"query": "What''s the weather in Tokyo?", "normalized": "what''s the weather in tokyo", "case_hint": null, "reason": "same query after normalisation"}}}');
INSERT INTO evaluations VALUES(2,'joke-1',1,'joke','small_talk','exact',100.0,1,0.0,'2026-11-23T14:49:50.423Z',0,'0d8feca367e3','1.0.0','Tell me a joke',NULL,NULL,NULL,NULL,0,NULL,'{"match": {"method": "exact", "score": 100.0, "evidence": {"query": "Tell me a joke", "normalized": "tell me a joke", "case_hint": null, "reason": "same query after normalisation"}}}');
INSERT INTO evaluations VALUES(3,'tokyo-2',1,'weather_tokyo','weather_agent','exact',100.0,0,0.3125,'2026-11-23T14:49:50.434Z',0,'0d8feca367e3','2.0.0','What''s the weather in Tokyo?','get_weather','get_forecast',NULL,NULL,0,NULL,'{"match": {"method": "exact", "score": 100.0, "evidence": {"query": "What''s the weather in Tokyo?", "normalized": "what''s the weather in tokyo", "case_hint": null, "reason": "same query after normalisation"}}}');
INSERT INTO evaluations VALUES(4,'revenue-2',1,NULL,NULL,'unmatched',43.240000000000001988,0,0.0,'2026-11-23T14:49:50.476Z',0,'0d8feca367e3','2.0.0','Show me the top 10 users by revenue',NULL,'call_db_agent',NULL,'revenue_archive_2019',1,NULL,'{"match": {"method": "unmatched", "score": 43.24, "evidence": {"query": "Show me the top 10 users by revenue", "normalized": "show me the top 10 users by revenue", "case_hint": null, "candidates": [{"eval_set_id": "weather_agent", "eval_id": "compare_paris_london", "query": "Compare the weather in Paris and London", "score": 43.24}, {"eval_set_id": "weather_agent", "eval_id": "berlin_typo_retry", "query": "What''s the weather in Berln?", "score": 41.94}, {"eval_set_id": "weather_agent", "eval_id": "paris_followup", "query": "What''s the weather in Paris?", "score": 38.71}, {"eval_set_id": "weather_agent", "eval_id": "refund_policy", "query": "What is your refund policy?", "score": 36.07}, {"eval_set_id": "weather_agent", "eval_id": "weather_tokyo", "query": "What''s the weather in Tokyo?", "score": 35.48}], "reason": "no case with fuzzy ratio >= 90"}}}');
CREATE TABLE IF NOT EXISTS "criterion_results" (
   "id" INTEGER PRIMARY KEY,
   "evaluation_id" INTEGER REFERENCES "evaluations"("id"),
   "criterion" TEXT,
   "score" REAL,
   "passed" INTEGER,
   "threshold" REAL,
   "skipped" INTEGER,
   "error" TEXT,
   "details" TEXT
);
INSERT INTO criterion_results VALUES(1,1,'trajectory_match',1.0,1,0.8000000000000000444,0,NULL,'{"per_turn": [{"invocation": "weather_tokyo-1", "turn": 0, "turn_present": true, "score": 1.0, "match_type": "EXACT", "satisfied": true, "graded": true, "max_depth": 0, "first_call_only": false, "expected": ["get_weather"], "actual": ["get_weather"], "expected_calls": [{"name": "get_weather", "args": {"city": "Tokyo"}}], "actual_calls": [{"name": "get_weather", "args": {"city": "Tokyo"}, "error": null}], "matched": [{"expected_index": 0, "actual_index": 0, "name": "get_weather", "in_order": true}], "matched_in_order": 1, "exact": true, "in_order": true, "any_order": true, "precision": 1.0, "recall": 1.0, "f1": 1.0, "check_args": true, "missing": [], "extra": [], "out_of_order": [], "argument_mismatches": [], "retries": []}], "turns": {"expected": 1, "actual": 1, "missing_turns": [], "unscored_extra_turns": []}}');
INSERT INTO criterion_results VALUES(2,1,'response_match',1.0,1,0.69999999999999995559,0,NULL,'{"method": "rouge1", "per_turn": [{"invocation": "weather_tokyo-1", "turn": 0, "turn_present": true, "score": 1.0, "expected": "It''s currently 22°C and sunny in Tokyo.", "actual": "It''s currently 22°C and sunny in Tokyo.", "precision": 1.0, "recall": 1.0}], "turns": {"expected": 1, "actual": 1, "missing_turns": [], "unscored_extra_turns": []}}');
INSERT INTO criterion_results VALUES(3,1,'llm_judge',0.0,0,0.69999999999999995559,1,NULL,'{"reason": "no judge endpoint configured (set options.base_url or OTEL_EVAL_JUDGE_BASE_URL)"}');
INSERT INTO criterion_results VALUES(4,1,'tool_selection',0.0,0,1.0,1,NULL,'{"reason": "the case sets no expected tool selection"}');
INSERT INTO criterion_results VALUES(5,1,'sql_generation',0.0,0,1.0,1,NULL,'{"reason": "the case does not say whether SQL is expected"}');
INSERT INTO criterion_results VALUES(6,1,'table_usage',0.0,0,1.0,1,NULL,'{"reason": "the case expects no tables"}');
INSERT INTO criterion_results VALUES(7,1,'health',1.0,1,1.0,0,NULL,'{"turns": 1, "tool_calls": 1, "tool_errors": 0, "tool_error_rate": 0.0, "repeated_calls": 0, "loops": [], "llm_calls": 2, "steps": 3, "missing_final_answer": false, "turns_without_answer": [], "turn_latency_ms": [0.641], "max_turn_latency_ms": 0.641, "session_latency_ms": 0.641, "input_tokens": 374, "output_tokens": 19, "total_tokens": 393, "limits": {}, "violations": [], "passed": true}');
INSERT INTO criterion_results VALUES(8,2,'trajectory_match',0.0,0,0.8000000000000000444,1,NULL,'{"reason": "the case expects no tool calls in any turn"}');
INSERT INTO criterion_results VALUES(9,2,'response_match',0.0,0,0.69999999999999995559,1,NULL,'{"reason": "the case has no expected final response"}');
INSERT INTO criterion_results VALUES(10,2,'llm_judge',0.0,0,0.69999999999999995559,1,NULL,'{"reason": "no judge endpoint configured (set options.base_url or OTEL_EVAL_JUDGE_BASE_URL)"}');
INSERT INTO criterion_results VALUES(11,2,'tool_selection',0.0,0,1.0,1,NULL,'{"reason": "the case sets no expected tool selection"}');
INSERT INTO criterion_results VALUES(12,2,'sql_generation',0.0,0,1.0,1,NULL,'{"reason": "the case does not say whether SQL is expected"}');
INSERT INTO criterion_results VALUES(13,2,'table_usage',0.0,0,1.0,1,NULL,'{"reason": "the case expects no tables"}');
INSERT INTO criterion_results VALUES(14,2,'health',1.0,1,1.0,0,NULL,'{"turns": 1, "tool_calls": 0, "tool_errors": 0, "tool_error_rate": 0.0, "repeated_calls": 0, "loops": [], "llm_calls": 1, "steps": 1, "missing_final_answer": false, "turns_without_answer": [], "turn_latency_ms": [0.121], "max_turn_latency_ms": 0.121, "session_latency_ms": 0.121, "input_tokens": 183, "output_tokens": 13, "total_tokens": 196, "limits": {}, "violations": [], "passed": true}');
INSERT INTO criterion_results VALUES(15,3,'trajectory_match',0.0,0,0.8000000000000000444,0,NULL,'{"per_turn": [{"invocation": "weather_tokyo-1", "turn": 0, "turn_present": true, "score": 0.0, "match_type": "EXACT", "satisfied": false, "graded": true, "max_depth": 0, "first_call_only": false, "expected": ["get_weather"], "actual": ["get_forecast"], "expected_calls": [{"name": "get_weather", "args": {"city": "Tokyo"}}], "actual_calls": [{"name": "get_forecast", "args": {"city": "Tokyo", "days": 1}, "error": null}], "matched": [], "matched_in_order": 0, "exact": false, "in_order": false, "any_order": false, "precision": 0.0, "recall": 0.0, "f1": 0.0, "check_args": true, "missing": [{"expected_index": 0, "name": "get_weather", "args": {"city": "Tokyo"}}], "extra": [{"actual_index": 0, "name": "get_forecast", "args": {"city": "Tokyo", "days": 1}}], "out_of_order": [], "argument_mismatches": [], "retries": []}], "turns": {"expected": 1, "actual": 1, "missing_turns": [], "unscored_extra_turns": []}}');
INSERT INTO criterion_results VALUES(16,3,'response_match',0.625,0,0.69999999999999995559,0,NULL,'{"method": "rouge1", "per_turn": [{"invocation": "weather_tokyo-1", "turn": 0, "turn_present": true, "score": 0.625, "expected": "It''s currently 22°C and sunny in Tokyo.", "actual": "Tomorrow in Tokyo: 24°C and sunny.", "precision": 0.714286, "recall": 0.555556}], "turns": {"expected": 1, "actual": 1, "missing_turns": [], "unscored_extra_turns": []}}');
INSERT INTO criterion_results VALUES(17,3,'llm_judge',0.0,0,0.69999999999999995559,1,NULL,'{"reason": "no judge endpoint configured (set options.base_url or OTEL_EVAL_JUDGE_BASE_URL)"}');
INSERT INTO criterion_results VALUES(18,3,'tool_selection',0.0,0,1.0,1,NULL,'{"reason": "the case sets no expected tool selection"}');
INSERT INTO criterion_results VALUES(19,3,'sql_generation',0.0,0,1.0,1,NULL,'{"reason": "the case does not say whether SQL is expected"}');
INSERT INTO criterion_results VALUES(20,3,'table_usage',0.0,0,1.0,1,NULL,'{"reason": "the case expects no tables"}');
INSERT INTO criterion_results VALUES(21,3,'health',1.0,1,1.0,0,NULL,'{"turns": 1, "tool_calls": 1, "tool_errors": 0, "tool_error_rate": 0.0, "repeated_calls": 0, "loops": [], "llm_calls": 2, "steps": 3, "missing_final_answer": false, "turns_without_answer": [], "turn_latency_ms": [0.509], "max_turn_latency_ms": 0.509, "session_latency_ms": 0.509, "input_tokens": 377, "output_tokens": 18, "total_tokens": 395, "limits": {}, "violations": [], "passed": true}');
INSERT INTO criterion_results VALUES(22,4,'health',1.0,1,1.0,0,NULL,'{"turns": 1, "tool_calls": 1, "tool_errors": 0, "tool_error_rate": 0.0, "repeated_calls": 0, "loops": [], "llm_calls": 2, "steps": 3, "missing_final_answer": false, "turns_without_answer": [], "turn_latency_ms": [0.32], "max_turn_latency_ms": 0.32, "session_latency_ms": 0.32, "input_tokens": 432, "output_tokens": 33, "total_tokens": 465, "limits": {}, "violations": [], "passed": true}');
CREATE TABLE IF NOT EXISTS "golden_sets" (
   "eval_set_id" TEXT,
   "source" TEXT,
   "name" TEXT,
   "description" TEXT,
   "metadata" TEXT,
   "saved_at" TEXT,
   PRIMARY KEY ("eval_set_id", "source")
);
CREATE INDEX "idx_spans_session_id"
    ON "spans" ("session_id");
CREATE UNIQUE INDEX "idx_agent_data_trace_id_span_id_level"
    ON "agent_data" ("trace_id", "span_id", "level");
CREATE INDEX "idx_agent_data_session_id"
    ON "agent_data" ("session_id");
CREATE INDEX "idx_traces_session_id"
    ON "traces" ("session_id");
CREATE INDEX "idx_sessions_status"
    ON "sessions" ("status");
CREATE UNIQUE INDEX "idx_evaluations_session_id_revision"
    ON "evaluations" ("session_id", "revision");
CREATE INDEX "idx_evaluations_case_id"
    ON "evaluations" ("case_id");
CREATE INDEX "idx_criterion_results_evaluation_id"
    ON "criterion_results" ("evaluation_id");
CREATE VIEW "trajectory_evaluations" AS 
            SELECT e.id AS evaluation_id, e.session_id, e.query AS test_query,
                   e.expected_tool, e.actual_tool, e.expected_table, e.actual_table, e.sql_generated,
                   (SELECT c.passed FROM criterion_results c
                     WHERE c.evaluation_id = e.id AND c.criterion = 'tool_selection' AND c.skipped = 0)
                     AS tool_selection_correct,
                   (SELECT c.passed FROM criterion_results c
                     WHERE c.evaluation_id = e.id AND c.criterion = 'table_usage' AND c.skipped = 0)
                     AS table_usage_correct,
                   (SELECT c.passed FROM criterion_results c
                     WHERE c.evaluation_id = e.id AND c.criterion = 'sql_generation' AND c.skipped = 0)
                     AS sql_generation_correct,
                   e.created_at AS evaluation_timestamp, e.config_hash AS evaluator_config
              FROM evaluations e
             WHERE e.superseded = 0 AND e.case_id IS NOT NULL;
CREATE VIEW "daily_pass_rate" AS 
            SELECT substr(created_at, 1, 10) AS day, case_id, agent_version,
                   COUNT(*) AS evaluations, SUM(passed) AS passed,
                   ROUND(1.0 * SUM(passed) / COUNT(*), 4) AS pass_rate, ROUND(AVG(score), 4) AS avg_score
              FROM evaluations
             WHERE superseded = 0 AND case_id IS NOT NULL
             GROUP BY day, case_id, agent_version;
COMMIT;
PRAGMA user_version=1;
