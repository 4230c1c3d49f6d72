"""Chat messages and tool definitions as LLM instrumentations write them: one tolerant message
reader that every dialect shares (OTel GenAI, Pydantic AI, ADK, Traceloop, OpenInference, ...).

A message may come as

* OTel GenAI parts: ``{"role", "parts": [{"type": "text" | "tool_call" | "tool_call_response" |
  "reasoning", ...}]}``;
* OpenAI chat: ``{"role", "content": str | [parts], "tool_calls": [...]}``, role ``tool`` with
  ``tool_call_id``; the legacy ``function_call``;
* Bedrock Converse / Strands content blocks (``{"text"}``, ``{"toolUse": {toolUseId, name, input}}``,
  ``{"toolResult": {toolUseId, content, status}}``, ``{"reasoningContent"}``) and Anthropic ones
  (``{"type": "text" | "tool_use" | "tool_result" | "thinking", ...}``);
* Gemini contents (``parts`` with ``text``, ``function_call`` / ``functionCall``,
  ``function_response`` / ``functionResponse``, ``thought``);
* OpenAI Responses items (``{"type": "message", "content": [{"type": "output_text" |
  "input_text"}]}``, ``{"type": "function_call", "call_id", ...}``, ``{"type":
  "function_call_output", "call_id", "output"}``);
* LangChain's serialized messages (``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}``,
  ``{"type": "human", "data": {...}}``);
* a choice wrapper (``{"message": ...}``, where the message may also be a plain string or a list
  of content blocks), a bare string, or a bare list of content blocks;

or as flattened attributes (``gen_ai.prompt.N.*``, OpenInference's ``llm.input_messages.N.*``).
Tool definitions come as OpenAI function schemas, Gemini declarations or flattened
``llm.request.functions.N.*``.

The reader never raises. A part it cannot read is kept as text (its JSON) and named in the
message's ``unread``, as is anything it skipped (an image, a call without a name, content that
looks like JSON but does not parse), so ``otel-eval inspect`` can say what was not read.
Reasoning is kept apart from the text: it is not the answer.

Callers import from this package; its modules, by what they read: :mod:`.model` (the
:class:`Message`), :mod:`.lists` (message lists and histories), :mod:`.envelopes` (one message,
whatever wraps it), :mod:`.parts` (content: text, blocks, reasoning, media), :mod:`.calls` (tool
calls and results), :mod:`.flattened` (messages flattened into attributes), :mod:`.tools` (tool
definitions, token counts), :mod:`.readings` (what a reading takes from messages).
"""

from __future__ import annotations

from .calls import result_value
from .envelopes import parse_message
from .flattened import IndexedGroups, indexed_messages, openinference_messages, set_path
from .lists import last_text_from, parse_history, parse_messages, state_messages, unread_of
from .model import MAX_NOTES, Message, ToolResponse, as_list, normalise_role, str_or_none
from .parts import all_parts, instructions_text, is_part, read_content
from .readings import (
    fill_from_messages,
    given_results,
    last_user_text,
    note_unread_messages,
    output_calls,
    output_text,
    system_text,
)
from .tools import first_text, indexed_tool_schemas, token_count, tool_schemas

__all__ = [
    "IndexedGroups",
    "MAX_NOTES",
    "Message",
    "ToolResponse",
    "all_parts",
    "as_list",
    "fill_from_messages",
    "given_results",
    "first_text",
    "indexed_messages",
    "indexed_tool_schemas",
    "instructions_text",
    "is_part",
    "last_text_from",
    "last_user_text",
    "normalise_role",
    "note_unread_messages",
    "openinference_messages",
    "output_calls",
    "output_text",
    "parse_history",
    "parse_message",
    "parse_messages",
    "read_content",
    "result_value",
    "set_path",
    "state_messages",
    "str_or_none",
    "system_text",
    "token_count",
    "tool_schemas",
    "unread_of",
]
