"""A fake OpenAI-compatible server that plays the scripted model of :mod:`captures.scenarios`.

Chat Completions (``/v1/chat/completions``, plain or streamed) and Responses (``/v1/responses``,
plain or streamed), the two APIs the frameworks' OpenAI clients speak, Anthropic's Messages API
(``/v1/messages``, plain or streamed as Anthropic's named SSE events; the anthropic SDK's
``base_url`` is the server's root, without ``/v1``), Gemini's ``generateContent`` API
(``/{v1beta,v1}/models/{model}:generateContent``, and ``:streamGenerateContent?alt=sse`` streamed
as unnamed SSE events each holding a whole response; the google-genai SDK's ``base_url`` is the
server's root too, and its 3.x releases post to ``/v1``) and Amazon Bedrock Runtime's Converse
API (``/model/{modelId}/converse``, and ``/model/{modelId}/converse-stream`` streamed as AWS's binary
event stream; boto3's ``bedrock-runtime`` client with ``endpoint_url`` the server's root and any
credentials: the signature is not checked). Which response comes next is decided from the request
alone: the turn is the scenario turn whose text appears last in the newest user message (for
Messages, Gemini and Converse, the newest user message that carries text: one holding only
``tool_result`` / ``toolResult`` blocks or ``functionResponse`` parts is not a new turn), and the
step is how many of that turn's tool calls the request already carries. So any framework, with any
history handling, gets the same decisions.

Standard library only, so that it runs inside every capture's own virtualenv::

    python -m captures.scripted_model --port 8765 [--log requests.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .scenarios import SCENARIOS, Step

MODEL = "gpt-4o-mini"
#: Off by default. For a framework whose agent must end with a tool call (smolagents'
#: ToolCallingAgent: ``final_answer``), name that tool in this variable or in the request header
#: ``x-scripted-final-answer-tool``. Then an answer step becomes the call ``<tool>({"answer": text})``
#: when the request offers that tool, and the history is read as smolagents writes it, with the
#: tool calls as text (:func:`text_tools_state`).
FINAL_ANSWER_TOOL_ENV = "SCRIPTED_FINAL_ANSWER_TOOL"
#: Off by default. For DSPy's ``ReAct`` (its ChatAdapter text protocol, no native tool calls), set
#: this variable or the request header ``x-scripted-dspy-react`` to any value: the answer is then
#: text in ``[[ ## field ## ]]`` sections, see :func:`dspy_react_reply`.
DSPY_REACT_ENV = "SCRIPTED_DSPY_REACT"
USAGE = {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
_counter = iter(range(1, 1_000_000))
_counter_lock = threading.Lock()


def _next_id(prefix: str) -> str:
    with _counter_lock:
        return f"{prefix}{next(_counter):06d}"


def _text_of(content: Any) -> str:
    """A message's text, whatever shape its content takes (string, parts, content blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        for key in ("text", "input_text", "content", "value"):
            if key in content:
                return _text_of(content[key])
    return ""


def decide(user_text: str, calls_made: int) -> Step:
    """The next step of the turn named in ``user_text``, after ``calls_made`` tool calls."""
    text = " ".join(user_text.split()).lower()
    best: tuple[int, tuple[Step, ...]] | None = None
    for scenario in SCENARIOS:
        for turn, steps in scenario.steps.items():
            at = text.rfind(turn.lower())
            if at >= 0 and (best is None or at > best[0]):
                best = (at, steps)
    if best is None:
        return Step(answer="OK.")
    steps = best[1]
    for step in steps:
        if not step.calls:
            return step
        if calls_made < len(step.calls):
            return step
        calls_made -= len(step.calls)
    return steps[-1]


def chat_state(body: dict[str, Any]) -> tuple[str, int]:
    """(newest user text, tool calls asked for since it) of a Chat Completions request."""
    messages = body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    user_text = _text_of(messages[last_user].get("content")) if last_user >= 0 else ""
    calls = sum(len(m.get("tool_calls") or []) for m in messages[last_user + 1 :] if m.get("role") == "assistant")
    return user_text, calls


def text_tools_state(body: dict[str, Any]) -> tuple[str, int]:
    """:func:`chat_state` for a history that carries the tool calls as text, as smolagents writes
    it (see ``FINAL_ANSWER_TOOL_ENV``): an assistant ``Calling tools: [{'id': ..., 'function':
    {'name': ...}}]`` message per step, results in user messages, and a failed call only as
    ``Error executing tool '...`` (merged into the user message before it)."""
    turns = [turn.lower() for scenario in SCENARIOS for turn in scenario.steps]
    raw = body.get("messages") or []
    messages = [(m.get("role"), " ".join(_text_of(m.get("content")).split())) for m in raw]
    at, start = -1, 0
    for i, (role, text) in enumerate(messages):
        found = [text.lower().rfind(turn) for turn in turns if role == "user" and turn in text.lower()]
        if found:
            at, start = i, max(found)
    if at < 0:
        return chat_state(body)
    calls = (
        messages[at][1][start:].count("Error executing tool '")
        + sum(
            text.count("'function': {'name': ") if role == "assistant" else text.count("Error executing tool '")
            for role, text in messages[at + 1 :]
        )
        + sum(len(m.get("tool_calls") or []) for m in raw[at + 1 :])
    )
    return messages[at][1], calls


def as_final_answer_call(step: Step, tool: str | None, body: dict[str, Any]) -> Step:
    """An answer step as a call of the final-answer ``tool``, when set and offered by the request."""
    offered = {(t.get("function") or t).get("name") for t in body.get("tools") or []}
    if tool and step.answer is not None and not step.calls and tool in offered:
        return Step(calls=((tool, {"answer": step.answer}),))
    return step


def one_call_at_a_time(user_text: str, calls_made: int) -> Step:
    """:func:`decide` for a protocol that asks for one tool call per model response: a step of
    parallel calls becomes that many steps, in order."""
    calls: list[tuple[str, dict[str, Any]]] = []
    previous, k = None, 0
    while len(calls) < 50:
        step = decide(user_text, len(calls))
        if not step.calls:
            break
        k = k + 1 if step is previous else 0
        calls.append(step.calls[min(k, len(step.calls) - 1)])
        previous = step
    if calls_made < len(calls):
        return Step(calls=(calls[calls_made],))
    return decide(user_text, len(calls))


def dspy_react_reply(body: dict[str, Any]) -> tuple[Step, str]:
    """(the decision, the reply text) for a DSPy ``ReAct`` request in ChatAdapter format (see
    ``DSPY_REACT_ENV``). The newest user message holds ``[[ ## question ## ]]``, the trajectory so
    far (``[[ ## tool_name_N ## ]]`` per call, ``finish`` last) and the output fields wanted. The
    ReAct step wants ``next_thought`` / ``next_tool_name`` / ``next_tool_args``: the next call, one
    at a time, then ``finish``; the extract step wants ``reasoning`` and the answer field(s)."""
    user_text, _ = chat_state(body)
    question, _, trajectory = user_text.partition("[[ ## trajectory ## ]]")
    names = re.findall(r"\[\[ ## tool_name_\d+ ## \]\]\s*\n\s*(\S+)", trajectory)
    calls_made = sum(1 for name in names if name != "finish")
    wanted = [
        f for f in re.findall(r"`\[\[ ## (\w+) ## \]\]`", user_text.rsplit("Respond with", 1)[-1]) if f != "completed"
    ]
    step = one_call_at_a_time(question, calls_made)
    if "next_tool_name" in wanted:
        name, args = step.calls[0] if step.calls else ("finish", {})
        values = {
            "next_thought": f"I should call {name}." if step.calls else "I have what I need to answer.",
            "next_tool_name": name,
            "next_tool_args": json.dumps(args),
        }
    else:
        step = one_call_at_a_time(question, 1_000)
        values = {"reasoning": "The trajectory holds what the answer needs."}
    text = "\n\n".join(f"[[ ## {f} ## ]]\n{values.get(f, step.answer or '')}" for f in wanted)
    return step, text + "\n\n[[ ## completed ## ]]"


def responses_state(body: dict[str, Any]) -> tuple[str, int]:
    """(newest user text, tool calls asked for since it) of a Responses request."""
    items = body.get("input")
    if isinstance(items, str):
        return items, 0
    items = items or []
    last_user = max((i for i, it in enumerate(items) if it.get("role") == "user"), default=-1)
    user_text = _text_of(items[last_user].get("content")) if last_user >= 0 else ""
    calls = sum(1 for it in items[last_user + 1 :] if it.get("type") == "function_call")
    return user_text, calls


def chat_completion(step: Step, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.answer}
    if step.calls:
        message["tool_calls"] = [
            {"id": _next_id("call_"), "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for name, args in step.calls
        ]
    return {
        "id": _next_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "usage": USAGE,
        "system_fingerprint": "fp_scripted",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if step.calls else "stop"}
        ],
    }


def chat_chunks(step: Step, model: str, include_usage: bool) -> Iterator[dict[str, Any]]:
    full = chat_completion(step, model)
    base = {
        "id": full["id"],
        "object": "chat.completion.chunk",
        "created": full["created"],
        "model": model,
        "system_fingerprint": "fp_scripted",
    }
    yield {
        **base,
        "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
        ],
    }
    if step.answer:
        words = step.answer.split(" ")
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            yield {
                **base,
                "choices": [{"index": 0, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}],
            }
    for index, call in enumerate(full["choices"][0]["message"].get("tool_calls") or []):
        yield {
            **base,
            "choices": [
                {
                    "index": 0,
                    "logprobs": None,
                    "finish_reason": None,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": call["function"]["name"], "arguments": ""},
                            }
                        ]
                    },
                }
            ],
        }
        yield {
            **base,
            "choices": [
                {
                    "index": 0,
                    "logprobs": None,
                    "finish_reason": None,
                    "delta": {
                        "tool_calls": [{"index": index, "function": {"arguments": call["function"]["arguments"]}}]
                    },
                }
            ],
        }
    yield {
        **base,
        "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": full["choices"][0]["finish_reason"]}],
    }
    if include_usage:
        yield {**base, "choices": [], "usage": USAGE}


def response_object(step: Step, model: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if step.answer:
        output.append(
            {
                "type": "message",
                "id": _next_id("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": step.answer, "annotations": []}],
            }
        )
    for name, args in step.calls:
        output.append(
            {
                "type": "function_call",
                "id": _next_id("fc_"),
                "call_id": _next_id("call_"),
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        )
    return {
        "id": _next_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "usage": {
            "input_tokens": USAGE["prompt_tokens"],
            "output_tokens": USAGE["completion_tokens"],
            "total_tokens": USAGE["total_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def response_events(step: Step, model: str) -> Iterator[dict[str, Any]]:
    full = response_object(step, model)
    seq = iter(range(1_000_000))
    pending = {**full, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "sequence_number": next(seq), "response": pending}
    yield {"type": "response.in_progress", "sequence_number": next(seq), "response": pending}
    for index, item in enumerate(full["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            }
            yield {
                "type": "response.content_part.added",
                "sequence_number": next(seq),
                "output_index": index,
                "item_id": item["id"],
                "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []},
            }
            yield {
                "type": "response.output_text.delta",
                "sequence_number": next(seq),
                "output_index": index,
                "item_id": item["id"],
                "content_index": 0,
                "delta": text,
                "logprobs": [],
            }
            yield {
                "type": "response.output_text.done",
                "sequence_number": next(seq),
                "output_index": index,
                "item_id": item["id"],
                "content_index": 0,
                "text": text,
                "logprobs": [],
            }
            yield {
                "type": "response.content_part.done",
                "sequence_number": next(seq),
                "output_index": index,
                "item_id": item["id"],
                "content_index": 0,
                "part": item["content"][0],
            }
        else:
            yield {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": index,
                "item": {**item, "status": "in_progress", "arguments": ""},
            }
            yield {
                "type": "response.function_call_arguments.delta",
                "sequence_number": next(seq),
                "output_index": index,
                "item_id": item["id"],
                "delta": item["arguments"],
            }
            yield {
                "type": "response.function_call_arguments.done",
                "sequence_number": next(seq),
                "output_index": index,
                "item_id": item["id"],
                "arguments": item["arguments"],
            }
        yield {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": index, "item": item}
    yield {"type": "response.completed", "sequence_number": next(seq), "response": full}


def messages_state(body: dict[str, Any]) -> tuple[str, int]:
    """(newest user text, tool calls asked for since it) of an Anthropic Messages request: the
    newest user message with a string content or a ``text`` block, and the ``tool_use`` blocks of
    the assistant messages after it."""
    messages = body.get("messages") or []

    def has_text(message: dict[str, Any]) -> bool:
        content = message.get("content")
        if isinstance(content, str):
            return True
        return any(isinstance(b, dict) and b.get("type") == "text" for b in content or [])

    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user" and has_text(m)), default=-1)
    if last_user < 0:
        return "", 0
    content = messages[last_user].get("content")
    if isinstance(content, str):
        user_text = content
    else:
        user_text = " ".join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")
    calls = sum(
        1
        for m in messages[last_user + 1 :]
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    )
    return user_text, calls


def anthropic_message(step: Step, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if step.answer:
        content.append({"type": "text", "text": step.answer})
    for name, args in step.calls:
        content.append({"type": "tool_use", "id": _next_id("toolu_"), "name": name, "input": args})
    return {
        "id": _next_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if step.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": USAGE["prompt_tokens"], "output_tokens": USAGE["completion_tokens"]},
    }


def anthropic_events(step: Step, model: str) -> Iterator[dict[str, Any]]:
    full = anthropic_message(step, model)
    start = {
        **full,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": full["usage"]["input_tokens"], "output_tokens": 1},
    }
    yield {"type": "message_start", "message": start}
    for index, block in enumerate(full["content"]):
        if block["type"] == "text":
            yield {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            words = block["text"].split(" ")
            for i, word in enumerate(words):
                piece = word if i == 0 else " " + word
                yield {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
        else:
            yield {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}}
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
            }
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": full["usage"]["output_tokens"]},
    }
    yield {"type": "message_stop"}


GEMINI_MODEL = "gemini-2.5-flash"


def _gemini_parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in content.get("parts") or [] if isinstance(p, dict)]


def _gemini_key(part: dict[str, Any], camel: str) -> Any:
    """A part's field, named in camelCase (the REST API's JSON) or snake_case (also accepted)."""
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    return part.get(camel, part.get(snake))


def gemini_state(body: dict[str, Any]) -> tuple[str, int]:
    """(newest user text, tool calls asked for since it) of a Gemini ``generateContent`` request:
    the newest ``user`` content with a ``text`` part (one holding only ``functionResponse`` parts
    is not a new turn), and the ``functionCall`` parts of the ``model`` contents after it."""
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]

    def has_text(content: dict[str, Any]) -> bool:
        return any(isinstance(p.get("text"), str) and not p.get("thought") for p in _gemini_parts(content))

    last_user = max((i for i, c in enumerate(contents) if c.get("role", "user") == "user" and has_text(c)), default=-1)
    if last_user < 0:
        return "", 0
    user_text = " ".join(p["text"] for p in _gemini_parts(contents[last_user]) if isinstance(p.get("text"), str))
    calls = sum(
        1
        for c in contents[last_user + 1 :]
        if c.get("role") == "model"
        for p in _gemini_parts(c)
        if _gemini_key(p, "functionCall")
    )
    return user_text, calls


def gemini_response(step: Step, model: str) -> dict[str, Any]:
    """A ``GenerateContentResponse``: one candidate whose parts are the calls or the answer."""
    parts: list[dict[str, Any]] = []
    if step.answer:
        parts.append({"text": step.answer})
    for name, args in step.calls:
        parts.append({"functionCall": {"name": name, "args": args}})
    prompt, output = USAGE["prompt_tokens"], USAGE["completion_tokens"]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
        },
        "modelVersion": model,
        "responseId": _next_id("resp_"),
    }


def gemini_chunks(step: Step, model: str) -> Iterator[dict[str, Any]]:
    """``streamGenerateContent?alt=sse``: each event a whole ``GenerateContentResponse`` holding the
    next piece (the answer word by word, each function call whole), ``finishReason`` on the last."""
    full = gemini_response(step, model)
    pieces: list[dict[str, Any]] = []
    if step.answer:
        words = step.answer.split(" ")
        pieces += [{"text": word if i == 0 else " " + word} for i, word in enumerate(words)]
    pieces += [part for part in full["candidates"][0]["content"]["parts"] if "functionCall" in part]
    for i, part in enumerate(pieces):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        if i == len(pieces) - 1:
            candidate["finishReason"] = "STOP"
        usage = dict(full["usageMetadata"])
        if i < len(pieces) - 1:
            usage = {"promptTokenCount": usage["promptTokenCount"], "totalTokenCount": usage["promptTokenCount"]}
        yield {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": full["responseId"],
        }


def bedrock_state(body: dict[str, Any]) -> tuple[str, int]:
    """(newest user text, tool calls asked for since it) of a Bedrock Converse request: the newest
    ``user`` message with a ``text`` block (one holding only ``toolResult`` blocks is not a new
    turn), and the ``toolUse`` blocks of the ``assistant`` messages after it."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]

    def blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
        return [b for b in message.get("content") or [] if isinstance(b, dict)]

    def has_text(message: dict[str, Any]) -> bool:
        return any(isinstance(b.get("text"), str) for b in blocks(message))

    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user" and has_text(m)), default=-1)
    if last_user < 0:
        return "", 0
    user_text = " ".join(b["text"] for b in blocks(messages[last_user]) if isinstance(b.get("text"), str))
    calls = sum(
        1 for m in messages[last_user + 1 :] if m.get("role") == "assistant" for b in blocks(m) if "toolUse" in b
    )
    return user_text, calls


def bedrock_response(step: Step) -> dict[str, Any]:
    """A ``ConverseResponse``: the answer as a ``text`` block, or the calls as ``toolUse`` blocks."""
    content: list[dict[str, Any]] = []
    if step.answer:
        content.append({"text": step.answer})
    for name, args in step.calls:
        content.append({"toolUse": {"toolUseId": _next_id("tooluse_"), "name": name, "input": args}})
    prompt, output = USAGE["prompt_tokens"], USAGE["completion_tokens"]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if step.calls else "end_turn",
        "usage": {"inputTokens": prompt, "outputTokens": output, "totalTokens": prompt + output},
        "metrics": {"latencyMs": 1},
    }


def bedrock_stream_events(step: Step) -> Iterator[tuple[str, dict[str, Any]]]:
    """``ConverseStream``'s events as (event type, payload): ``messageStart``, per content block
    ``contentBlockStart`` (tool uses only) / ``contentBlockDelta`` (the answer word by word, a tool
    use's input as one JSON string) / ``contentBlockStop``, ``messageStop``, ``metadata``."""
    full = bedrock_response(step)
    yield "messageStart", {"role": "assistant"}
    for index, block in enumerate(full["output"]["message"]["content"]):
        if "text" in block:
            words = block["text"].split(" ")
            for i, word in enumerate(words):
                piece = word if i == 0 else " " + word
                yield "contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}}
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            yield "contentBlockStart", {"contentBlockIndex": index, "start": start}
            delta = {"toolUse": {"input": json.dumps(use["input"])}}
            yield "contentBlockDelta", {"contentBlockIndex": index, "delta": delta}
        yield "contentBlockStop", {"contentBlockIndex": index}
    yield "messageStop", {"stopReason": full["stopReason"]}
    yield "metadata", {"usage": full["usage"], "metrics": full["metrics"]}


def eventstream_message(event_type: str, payload: dict[str, Any]) -> bytes:
    """One message of AWS's binary event stream (``application/vnd.amazon.eventstream``): prelude
    (total and headers length, CRC32), string headers, the JSON payload, the message's CRC32."""
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")):
        raw_name, raw_value = name.encode(), value.encode()
        headers += struct.pack(">B", len(raw_name)) + raw_name + struct.pack(">BH", 7, len(raw_value)) + raw_value
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_file: Any | None = None
    log_lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the JSONL log says it all
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "scripted"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON"}})
            return
        path = self.path.split("?")[0].rstrip("/")
        model = body.get("model") or MODEL
        final_tool = self.headers.get("x-scripted-final-answer-tool") or os.environ.get(FINAL_ANSWER_TOOL_ENV)
        dspy_react = self.headers.get("x-scripted-dspy-react") or os.environ.get(DSPY_REACT_ENV)
        if path.endswith("/chat/completions"):
            if dspy_react:
                decided, text = dspy_react_reply(body)
                self._record(path, body, decided)
                step = Step(answer=text)
            else:
                user_text, calls = text_tools_state(body) if final_tool else chat_state(body)
                step = as_final_answer_call(decide(user_text, calls), final_tool, body)
                self._record(path, body, step)
            if body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                self._sse(chat_chunks(step, model, include_usage), done=True)
            else:
                self._json(200, chat_completion(step, model))
        elif path.endswith("/responses"):
            user_text, calls = responses_state(body)
            step = decide(user_text, calls)
            self._record(path, body, step)
            if body.get("stream"):
                self._sse(response_events(step, model), done=False, named=True)
            else:
                self._json(200, response_object(step, model))
        elif path.endswith("/messages"):
            user_text, calls = messages_state(body)
            step = decide(user_text, calls)
            self._record(path, body, step)
            if body.get("stream"):
                self._sse(anthropic_events(step, model), done=False, named=True)
            else:
                self._json(200, anthropic_message(step, model))
        elif path.endswith(":generateContent") or path.endswith(":streamGenerateContent"):
            user_text, calls = gemini_state(body)
            step = decide(user_text, calls)
            self._record(path, body, step)
            gemini_model = path.rsplit("/", 1)[-1].split(":", 1)[0] or GEMINI_MODEL
            if path.endswith(":streamGenerateContent"):
                self._sse(gemini_chunks(step, gemini_model), done=False)
            else:
                self._json(200, gemini_response(step, gemini_model))
        elif path.endswith("/converse") or path.endswith("/converse-stream"):
            user_text, calls = bedrock_state(body)
            step = decide(user_text, calls)
            self._record(path, body, step)
            if path.endswith("/converse-stream"):
                stream = b"".join(eventstream_message(kind, event) for kind, event in bedrock_stream_events(step))
                self._bytes(200, "application/vnd.amazon.eventstream", stream)
            else:
                self._json(200, bedrock_response(step))
        elif path.endswith("/embeddings"):
            inputs = body.get("input")
            inputs = inputs if isinstance(inputs, list) else [inputs]
            self._json(
                200,
                {
                    "object": "list",
                    "model": model,
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    "data": [
                        {"object": "embedding", "index": i, "embedding": [0.1, 0.2, 0.3]} for i, _ in enumerate(inputs)
                    ],
                },
            )
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def _record(self, path: str, body: dict[str, Any], step: Step) -> None:
        if self.log_file is None:
            return
        with self.log_lock:
            self.log_file.write(
                json.dumps({"path": path, "request": body, "calls": step.calls, "answer": step.answer}) + "\n"
            )
            self.log_file.flush()

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        self._bytes(status, "application/json", json.dumps(payload).encode())

    def _bytes(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: Iterator[dict[str, Any]], done: bool, named: bool = False) -> None:
        chunks = []
        for event in events:
            prefix = f"event: {event['type']}\n" if named else ""
            chunks.append(f"{prefix}data: {json.dumps(event)}\n\n")
        if done:
            chunks.append("data: [DONE]\n\n")
        data = "".join(chunks).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(port: int = 0, log_path: str | None = None) -> ThreadingHTTPServer:
    """Start the server on 127.0.0.1 in a daemon thread; ``server.server_port`` is its port."""
    if log_path:
        Handler.log_file = open(log_path, "a", encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--log", help="append each request and the scripted decision to this JSONL file")
    args = parser.parse_args()
    server = serve(args.port, args.log)
    print(f"scripted model on http://127.0.0.1:{server.server_port}/v1", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
