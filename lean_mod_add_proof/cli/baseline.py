"""Sub-command `serve-baseline`: a local OpenAI-compatible chat server that answers every task
with a fixed policy (by default the reference proof), for demos and end-to-end tests.

It serves `POST /v1/chat/completions` (streaming SSE `chat.completion.chunk` events ending in
`data: [DONE]`, or one JSON response) and `GET /v1/models`. The model name picks the policy:
`baseline-<policy>` (as `/v1/models` lists them) answers with that policy, any other name with
the server's `--policy`. The modulus p is read from the prompt's required theorem name
`adds_mod_<p>`. Stdlib only; binds to 127.0.0.1 by default.

Stdlib `http.server` on purpose, although verifiers brings uvicorn and starlette: the whole
server is a few handler methods, `running_server` needs a synchronous object with its bound
address for tests and the demo, and an ASGI app plus a uvicorn thread would be more code, not
less. A busy or invalid port, or a client that goes away mid-stream, gives one line, never a
traceback (exit 2 for the command-line errors).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lean_mod_add_proof.cli.exits import EXIT_USAGE, print_error
from lean_mod_add_proof.constants import (
    WEIGHTS_MODULE,
    reference_submission,
    single_decide_submission,
    theorem_name,
)
from lean_mod_add_proof.feedback import FEEDBACK_HEADER

_P_RE = re.compile(r"adds_mod_(\d+)")


def parse_p(text: str) -> int | None:
    """The modulus named by the first `adds_mod_<p>` in `text`, if any."""
    match = _P_RE.search(text)
    return int(match.group(1)) if match else None


def _lean_block(body: str) -> str:
    return f"```lean\n{body}```"


def reference_reply(p: int) -> str:
    return f"Brute force: the kernel evaluates the network on all {p * p} pairs.\n\n" + _lean_block(
        reference_submission(p)
    )


def reference_single_reply(p: int) -> str:
    return "One decide over every pair.\n\n" + _lean_block(single_decide_submission(p))


def wrong_statement_reply(p: int) -> str:
    """Right name, weaker statement: builds, but the judge's statement check must reject it."""
    body = (
        f"import {WEIGHTS_MODULE}\n\n"
        f"theorem {theorem_name(p)} : ∀ a, a < {p} → ∀ b, b < {p} → True :=\n"
        "  fun _ _ _ _ => True.intro\n"
    )
    return _lean_block(body)


def guard_violation_reply(p: int) -> str:
    """A proof left as `sorry`: the text guard must reject it before Lean runs."""
    body = reference_submission(p).replace("decide +kernel", "sorry")
    return _lean_block(body)


def missing_import_reply(p: int) -> str:
    """No `import LeanCheckedNetwork.Weights`: the guard must reject it."""
    body = "\n".join(line for line in reference_submission(p).splitlines() if not line.startswith("import "))
    return _lean_block(body.lstrip("\n") + "\n")


def no_code_reply(p: int) -> str:
    return f"I believe the network adds modulo {p}, but I will not write a proof."


def guard_then_reference_reply(p: int, retried: bool) -> str:
    """A guard violation first, then, once the grader's feedback came back, the reference proof:
    what `max_attempts` > 1 is for."""
    return reference_reply(p) if retried else guard_violation_reply(p)


def _first_try(reply: Callable[[int], str]) -> Callable[[int, bool], str]:
    """A policy that answers the same whatever the grader said before."""
    return lambda p, _retried: reply(p)


#: Replies by policy: each takes p and whether the grader already answered a failed attempt.
POLICIES: dict[str, Callable[[int, bool], str]] = {
    "reference": _first_try(reference_reply),
    "reference-single": _first_try(reference_single_reply),
    "wrong-statement": _first_try(wrong_statement_reply),
    "guard-violation": _first_try(guard_violation_reply),
    "missing-import": _first_try(missing_import_reply),
    "no-code": _first_try(no_code_reply),
    "guard-then-reference": guard_then_reference_reply,
}


#: How a model name names a policy: `baseline-<policy>`.
MODEL_PREFIX = "baseline-"


def model_name(policy: str) -> str:
    return MODEL_PREFIX + policy


class UnknownModel(ValueError):
    """A `baseline-<name>` model whose name is no policy."""


def policy_for(model: str | None, default: str) -> str:
    """The policy a request's model name asks for: `baseline-<policy>` picks that policy, any
    other name (or none) the server's default; `baseline-<unknown>` raises UnknownModel."""
    if not model or not model.startswith(MODEL_PREFIX):
        return default
    policy = model[len(MODEL_PREFIX) :]
    if policy not in POLICIES:
        known = ", ".join(model_name(name) for name in POLICIES)
        raise UnknownModel(f"unknown model {model!r}; this server has {known}")
    return policy


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def answer(policy: str, messages: list[Any]) -> str:
    """The policy's reply to a conversation; p comes from the latest message that names it."""
    retried = any(
        isinstance(m, dict) and m.get("role") == "user" and FEEDBACK_HEADER in _message_text(m)
        for m in messages
    )
    for message in reversed(messages):
        p = parse_p(_message_text(message))
        if p is not None:
            return POLICIES[policy](p, retried)
    return "I could not find a theorem named `adds_mod_<p>` in the prompt."


def _usage(text: str) -> dict[str, int]:
    tokens = max(1, len(text) // 4)
    return {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens}


def completion(model: str, text: str) -> dict[str, Any]:
    """A non-streaming chat.completion."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage(text),
    }


def stream_events(model: str, text: str, include_usage: bool = True, chunk_chars: int = 64) -> Iterator[str]:
    """The SSE `data:` payloads of a streamed chat.completion, ending with `[DONE]`."""
    cid = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            }
        )

    yield chunk({"role": "assistant", "content": ""})
    for start in range(0, len(text), chunk_chars):
        yield chunk({"content": text[start : start + chunk_chars]})
    yield chunk({}, "stop")
    if include_usage:
        yield json.dumps(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": _usage(text),
            }
        )
    yield "[DONE]"


class BaselineHandler(BaseHTTPRequestHandler):
    server: BaselineServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            models = [
                {"id": model_name(name), "object": "model", "owned_by": "lean-mod-add-proof"}
                for name in POLICIES
            ]
            self._json(200, {"object": "list", "data": models})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            messages = request.get("messages") or []
            if not isinstance(messages, list):
                raise ValueError("messages must be a list")
        except (ValueError, json.JSONDecodeError) as exc:
            self._json(400, {"error": {"message": f"bad request: {exc}"}})
            return
        requested = request.get("model")
        model = str(requested or model_name(self.server.policy))
        try:
            policy = policy_for(str(requested) if requested else None, self.server.policy)
        except UnknownModel as exc:
            self._json(
                404,
                {"error": {"message": str(exc), "type": "invalid_request_error", "code": "model_not_found"}},
            )
            return
        text = answer(policy, messages)
        self.server.requests += 1
        if not request.get("stream"):
            self._json(200, completion(model, text))
            return
        include_usage = bool((request.get("stream_options") or {}).get("include_usage", False))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for event in stream_events(model, text, include_usage=include_usage):
                self.wfile.write(f"data: {event}\n\n".encode())
                self.wfile.flush()
        except ConnectionError:  # the client hung up mid-stream: nothing left to answer
            self.close_connection = True
            self.server.disconnects += 1
            if self.server.verbose:
                self.log_message("client went away mid-stream")


class BaselineServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, policy: str, verbose: bool = False) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")
        super().__init__((host, port), BaselineHandler)
        self.policy = policy
        self.verbose = verbose
        self.requests = 0
        self.disconnects = 0

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up is routine (one line with --verbose); anything else is one line
        on stderr, not socketserver's traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):
            self.disconnects += 1
            if self.verbose:
                print(f"serve-baseline: {client_address[0]} went away: {exc}", file=sys.stderr)
            return
        print(f"serve-baseline: error answering {client_address[0]}: {exc!r}", file=sys.stderr)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


@contextlib.contextmanager
def running_server(
    policy: str = "reference", host: str = "127.0.0.1", port: int = 0
) -> Iterator[BaselineServer]:
    """A baseline server on a background thread (port 0: a free port); always shut down."""
    server = BaselineServer(host, port, policy)
    thread = threading.Thread(target=server.serve_forever, name="serve-baseline", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def port_number(text: str) -> int:
    """argparse type for --port: an int in 0..65535 (0 picks a free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is out of range (0-65535; 0 picks a free one)")
    return value


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        server = BaselineServer(args.host, args.port, args.policy, verbose=args.verbose)
    except OSError as exc:
        hint = ""
        if exc.errno == errno.EADDRINUSE:
            hint = " (another process uses it: pick another --port, or --port 0 for a free one)"
        why = exc.strerror or str(exc)
        print_error(f"serve-baseline: cannot listen on {args.host}:{args.port}: {why}{hint}")
        return EXIT_USAGE
    print(
        f"serving policy {args.policy!r} at {server.base_url} "
        f"(model {MODEL_PREFIX}<policy> picks another: {', '.join(POLICIES)}; Ctrl-C stops)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add this module's sub-commands."""
    p = commands.add_parser(
        "serve-baseline",
        help="serve a fixed-policy OpenAI-compatible chat endpoint (for demos and tests)",
        description="\n\n".join((__doc__ or "").split("\n\n")[:2]),  # the design notes stay in the source
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: local only)")
    p.add_argument("--port", type=port_number, default=8765, help="port (0 picks a free one)")
    p.add_argument(
        "--policy",
        choices=tuple(POLICIES),
        default="reference",
        help="how to answer a model name other than baseline-<policy> (which picks its policy)",
    )
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    p.set_defaults(handler=cmd_serve)
