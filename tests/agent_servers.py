"""Scripted model servers on 127.0.0.1 for the real agent CLIs, and finding those CLIs.

Each server answers an agent's model requests from a script of steps, one per
model turn: a tool call (``("bash", command)``, ``("write", path, text)``,
``("edit", path, old, new)``, ``("patch", patch)``) or a final text. Which step
a request gets is read from the request itself (how many tool results it
already carries), so a retried request gets the same answer.

- :class:`AnthropicServer` speaks the Messages API as Claude Code calls it
  (``POST /v1/messages``, streamed as server-sent events);
- :class:`ResponsesServer` speaks the Responses API as Codex calls it
  (``POST /v1/responses``, streamed), its shell tool and ``apply_patch``;
- :class:`GeminiServer` speaks the Gemini API as Gemini CLI calls it
  (``:streamGenerateContent`` as server-sent events, ``:generateContent`` for
  its routing questions);
- :class:`ChatServer` speaks Chat Completions as Copilot CLI calls it with a
  provider of one's own (``POST /v1/chat/completions``, streamed).

``agent_binary(name)`` finds an installed CLI: on ``PATH``, or in the cache
``.ci/run`` installs them into (``SNAPSHOTTER_AGENT_CLIS``, default
``~/.cache/snapshotter-ci/agents``).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Step = tuple[str, ...]
CACHE = Path(os.environ.get("SNAPSHOTTER_AGENT_CLIS", Path.home() / ".cache" / "snapshotter-ci" / "agents"))
PACKAGES = {
    "claude": "@anthropic-ai/claude-code@2.1.332",
    "codex": "@openai/codex@0.171.0",
    "gemini": "@google/gemini-cli@0.61.0",
    "copilot": "@github/copilot@1.0.102",
}
"""What ``.ci/run`` installs: the versions these tests were written against."""


def agent_binary(name: str) -> str | None:
    """The path of agent CLI ``name`` (``claude``, ``codex``), or None."""
    found = shutil.which(name)
    if found:
        return found
    candidate = CACHE / "node_modules" / ".bin" / name
    return str(candidate) if candidate.exists() else None


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class _Server:
    """A threading HTTP server on 127.0.0.1 answering from ``script``."""

    def __init__(self, script: list[Step], cwd: Path) -> None:
        self.script, self.cwd = script, cwd
        self.requests: list[dict[str, Any]] = []
        self.holds: dict[int, threading.Event] = {}
        self._reached: dict[int, threading.Event] = {}
        self._events = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._reply(200, b'{"data": []}', "application/json")

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size) if size else b"{}"
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                outer.requests.append(body)
                status, payload, kind = outer.answer(self.path.split("?")[0], body)
                self._reply(status, payload, kind)

            def _reply(self, status: int, payload: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_address[1]
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()

    def step(self, done: int) -> Step:
        """The step for a request that carries ``done`` tool results; first waiting
        for ``holds[done]``, if set (another server's ``reached``), so two agents'
        runs can be interleaved in a known order."""
        self.reached(done).set()
        hold = self.holds.get(done)
        if hold is not None and not hold.wait(120):
            raise TimeoutError(f"step {done} was held for two minutes")
        return self.script[done] if done < len(self.script) else ("text", "Nothing more to do.")

    def reached(self, done: int) -> threading.Event:
        """Set once the agent asked for step ``done``: its earlier tool calls, and their hooks, have run."""
        with self._events:
            return self._reached.setdefault(done, threading.Event())

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, bytes, str]:
        """(status, body, content type) for one request (each API its own)."""
        return 404, b"{}", "application/json"


class AnthropicServer(_Server):
    """The Messages API, as Claude Code streams it."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, bytes, str]:
        if path.endswith("/count_tokens"):
            return 200, b'{"input_tokens": 42}', "application/json"
        if not body.get("tools"):  # a side request (a title, a quota probe): never a script step
            return 200, self._stream([{"type": "text", "text": "OK"}], "end_turn"), "text/event-stream"
        done = sum(1 for message in body.get("messages", []) if message.get("role") == "assistant")
        step = self.step(done)
        if step[0] == "text":
            return 200, self._stream([{"type": "text", "text": step[1]}], "end_turn"), "text/event-stream"
        name, arguments = self._tool(step)
        block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:12]}", "name": name, "input": arguments}
        return 200, self._stream([block], "tool_use"), "text/event-stream"

    def _tool(self, step: Step) -> tuple[str, dict[str, Any]]:
        if step[0] == "bash":
            return "Bash", {"command": step[1], "description": "a scripted command"}
        if step[0] == "write":
            return "Write", {"file_path": str(self.cwd / step[1]), "content": step[2]}
        if step[0] == "edit":
            return "Edit", {"file_path": str(self.cwd / step[1]), "old_string": step[2], "new_string": step[3]}
        raise ValueError(f"no Claude Code tool for {step}")

    @staticmethod
    def _stream(blocks: list[dict[str, Any]], stop: str) -> bytes:
        message = {
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-test",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        events = [_sse("message_start", {"type": "message_start", "message": message})]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                events.append(
                    _sse(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                    )
                )
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                events.append(
                    _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
                )
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
            events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            )
        )
        events.append(_sse("message_stop", {"type": "message_stop"}))
        return b"".join(events)


class ResponsesServer(_Server):
    """The Responses API, as Codex streams it: its shell tool and apply_patch."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, bytes, str]:
        if not path.endswith("/responses"):
            return 404, b'{"error": {"message": "not here"}}', "application/json"
        if not body.get("tools"):  # compaction and summaries take no step
            return 200, self._stream(self._message("ok"), body), "text/event-stream"
        done = sum(1 for item in body.get("input", []) if str(item.get("type", "")).endswith("_call_output"))
        step = self.step(done)
        if step[0] == "text":
            return 200, self._stream(self._message(step[1]), body), "text/event-stream"
        return 200, self._stream(self._call(step, body), body), "text/event-stream"

    @staticmethod
    def _message(text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }

    def _call(self, step: Step, body: dict[str, Any]) -> dict[str, Any]:
        call = f"call_{uuid.uuid4().hex[:12]}"
        tools = {tool.get("name"): tool for tool in body.get("tools", [])}
        if step[0] == "patch" and tools.get("apply_patch", {}).get("type") == "custom":
            return {
                "type": "custom_tool_call",
                "id": f"ctc_{uuid.uuid4().hex[:12]}",
                "call_id": call,
                "name": "apply_patch",
                "input": step[1],
                "status": "completed",
            }
        command = step[1] if step[0] == "bash" else f"apply_patch <<'EOF'\n{step[1]}EOF\n"
        return {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:12]}",
            "call_id": call,
            "name": "exec_command",
            "arguments": json.dumps({"cmd": command}),
            "status": "completed",
        }

    @staticmethod
    def _stream(item: dict[str, Any], body: dict[str, Any]) -> bytes:
        base = {"id": f"resp_{uuid.uuid4().hex[:12]}", "object": "response", "model": body.get("model", "test")}

        def event(kind: str, **data: Any) -> bytes:
            return _sse(kind, {"type": kind, **data})

        out = [event("response.created", response={**base, "status": "in_progress", "output": []})]
        if item["type"] == "message":
            text = item["content"][0]["text"]
            out.append(
                event(
                    "response.output_item.added", output_index=0, item={**item, "status": "in_progress", "content": []}
                )
            )
            out.append(
                event(
                    "response.content_part.added",
                    item_id=item["id"],
                    output_index=0,
                    content_index=0,
                    part={"type": "output_text", "text": "", "annotations": []},
                )
            )
            out.append(
                event("response.output_text.delta", item_id=item["id"], output_index=0, content_index=0, delta=text)
            )
            out.append(
                event("response.output_text.done", item_id=item["id"], output_index=0, content_index=0, text=text)
            )
        else:
            out.append(event("response.output_item.added", output_index=0, item=item))
        out.append(event("response.output_item.done", output_index=0, item=item))
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        out.append(
            event("response.completed", response={**base, "status": "completed", "output": [item], "usage": usage})
        )
        return b"".join(out)


class GeminiServer(_Server):
    """The Gemini API, as Gemini CLI calls it: one function call a model turn."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, bytes, str]:
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        if path.endswith(":countTokens"):
            return 200, b'{"totalTokens": 15}', "application/json"
        if path.endswith(":generateContent"):  # routing and next-speaker questions, as JSON text
            text = json.dumps(
                {
                    "reasoning": "scripted",
                    "next_speaker": "user",
                    "model_choice": "flash",
                    "complexity_score": 1,
                    "complexity_reasoning": "scripted",
                }
            )
            reply = {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": usage,
            }
            return 200, json.dumps(reply).encode(), "application/json"
        if not path.endswith(":streamGenerateContent"):
            return 404, b'{"error": {"code": 404, "message": "not here"}}', "application/json"
        done = sum(
            1 for content in body.get("contents", []) for part in content.get("parts", []) if "functionResponse" in part
        )
        step = self.step(done)
        if step[0] == "text":
            parts: list[dict[str, Any]] = [{"text": step[1]}]
        elif step[0] == "bash":
            parts = [
                {
                    "functionCall": {
                        "name": "run_shell_command",
                        "args": {"command": step[1], "description": "a scripted command"},
                    }
                }
            ]
        elif step[0] == "write":
            parts = [
                {
                    "functionCall": {
                        "name": "write_file",
                        "args": {"file_path": str(self.cwd / step[1]), "content": step[2]},
                    }
                }
            ]
        else:
            raise ValueError(f"no Gemini CLI tool for {step}")
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
        }
        return 200, f"data: {json.dumps(chunk)}\r\n\r\n".encode(), "text/event-stream"


class ChatServer(_Server):
    """Chat Completions, as Copilot CLI streams them from a provider of one's own."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, bytes, str]:
        if not path.endswith("/chat/completions"):
            return 404, b'{"error": {"message": "not here"}}', "application/json"
        done = sum(1 for message in body.get("messages", []) if message.get("role") == "tool")
        step = self.step(done)
        if step[0] == "text":
            delta: dict[str, Any] = {"content": step[1]}
            finish = "stop"
        else:
            if step[0] == "bash":
                name, arguments = "bash", {"command": step[1], "description": "a scripted command"}
            elif step[0] == "write":
                name, arguments = "create", {"path": str(self.cwd / step[1]), "file_text": step[2]}
            else:
                raise ValueError(f"no Copilot CLI tool for {step}")
            call = {
                "index": 0,
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            delta, finish = {"tool_calls": [call]}, "tool_calls"
        ident, model = f"chatcmpl-{uuid.uuid4().hex[:12]}", body.get("model", "test")

        def chunk(choices: list[dict[str, Any]], **more: Any) -> bytes:
            document = {"id": ident, "object": "chat.completion.chunk", "model": model, "choices": choices, **more}
            return f"data: {json.dumps(document)}\n\n".encode()

        stream = [
            chunk([{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]),
            chunk([{"index": 0, "delta": delta, "finish_reason": None}]),
            chunk([{"index": 0, "delta": {}, "finish_reason": finish}]),
            chunk([], usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
            b"data: [DONE]\n\n",
        ]
        return 200, b"".join(stream), "text/event-stream"
