"""The local baseline server: OpenAI-compatible shapes, SSE ending in [DONE], p from the prompt,
and what each policy answers (checked against the text guard where that is the point)."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from lean_mod_add_proof.cli.baseline import POLICIES, answer, parse_p, policy_for, running_server
from lean_mod_add_proof.constants import reference_submission, theorem_name, theorem_signature
from lean_mod_add_proof.grading.guard import check_guard

CLI = "import sys; from lean_mod_add_proof.cli import main; sys.exit(main(sys.argv[1:]))"


def post(url: str, payload: dict) -> urllib.request.addinfourl:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"},
    )
    return urllib.request.urlopen(request, timeout=10)


def messages_for(p: int) -> list[dict]:
    return [
        {"role": "system", "content": "You are an expert."},
        {"role": "user", "content": f"Prove it.\n\n```lean\n{theorem_signature(p)}\n```\n"},
    ]


def sse_payloads(raw: str) -> list[str]:
    events = [e for e in raw.split("\n\n") if e.strip()]
    assert all(e.startswith("data: ") for e in events), events[:3]
    return [e[len("data: ") :] for e in events]


@pytest.fixture(scope="module")
def server() -> Iterator:
    with running_server("reference") as srv:
        yield srv


def test_parse_p() -> None:
    assert parse_p(theorem_signature(13)) == 13
    assert parse_p("theorem LeanCheckedNetwork.Net.adds_mod_5 : ...") == 5
    assert parse_p("nothing here") is None


def test_stream_shape_ends_in_done(server) -> None:
    with post(
        server.base_url + "/chat/completions",
        {
            "model": "m",
            "messages": messages_for(7),
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        payloads = sse_payloads(response.read().decode())
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "m" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == answer("reference", messages_for(7))
    assert "```lean\n" + reference_submission(7) + "```" in text


def test_stream_without_usage(server) -> None:
    with post(
        server.base_url + "/chat/completions", {"model": "m", "messages": messages_for(5), "stream": True}
    ) as response:
        payloads = sse_payloads(response.read().decode())
    assert payloads[-1] == "[DONE]"
    assert all(json.loads(p)["choices"] for p in payloads[:-1])


def test_non_streaming(server) -> None:
    with post(
        server.base_url + "/chat/completions", {"model": "x", "messages": messages_for(11)}
    ) as response:
        body = json.load(response)
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert theorem_name(11) in body["choices"][0]["message"]["content"]
    assert body["choices"][0]["finish_reason"] == "stop"


def test_models_and_errors(server) -> None:
    with urllib.request.urlopen(server.base_url + "/models", timeout=10) as response:
        ids = [m["id"] for m in json.load(response)["data"]]
    assert "baseline-reference" in ids
    with pytest.raises(urllib.error.HTTPError) as info:
        post(server.base_url + "/nope", {})
    assert info.value.code == 404
    request = urllib.request.Request(server.base_url + "/chat/completions", data=b"{not json")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 400


def _content(base_url: str, model: str, p: int = 5) -> str:
    with post(base_url + "/chat/completions", {"model": model, "messages": messages_for(p)}) as response:
        body = json.load(response)
    assert body["model"] == model
    return body["choices"][0]["message"]["content"]


def test_model_name_picks_the_policy(server) -> None:
    """Every name /v1/models lists answers with its own policy; other names get the server's."""
    with urllib.request.urlopen(server.base_url + "/models", timeout=10) as response:
        ids = [m["id"] for m in json.load(response)["data"]]
    assert ids == [f"baseline-{name}" for name in POLICIES]
    for name in POLICIES:
        assert _content(server.base_url, f"baseline-{name}") == answer(name, messages_for(5)), name
    assert "```" not in _content(server.base_url, "baseline-no-code")
    assert _content(server.base_url, "some-other-model") == answer("reference", messages_for(5))


def test_an_unknown_baseline_model_is_404(server) -> None:
    with pytest.raises(urllib.error.HTTPError) as info:
        post(server.base_url + "/chat/completions", {"model": "baseline-bogus", "messages": messages_for(5)})
    assert info.value.code == 404
    error = json.load(info.value)["error"]
    assert error["code"] == "model_not_found" and "baseline-no-code" in error["message"]


def test_policy_for() -> None:
    assert policy_for("baseline-no-code", "reference") == "no-code"
    assert policy_for(None, "no-code") == "no-code"
    assert policy_for("gpt-x", "wrong-statement") == "wrong-statement"
    with pytest.raises(ValueError, match="unknown model 'baseline-x'"):
        policy_for("baseline-x", "reference")


def test_binds_to_localhost_by_default(server) -> None:
    assert server.server_address[0] == "127.0.0.1"


def test_prompt_without_theorem() -> None:
    assert "```" not in answer("reference", [{"role": "user", "content": "hello"}])


def _block(reply: str) -> str:
    return reply.split("```lean\n", 1)[1].rsplit("```", 1)[0]


def test_policies() -> None:
    msgs = messages_for(5)
    assert set(POLICIES) >= {"reference", "wrong-statement", "guard-violation", "missing-import", "no-code"}
    assert _block(answer("reference", msgs)) == reference_submission(5)
    assert "```" not in answer("no-code", msgs)
    weak = _block(answer("wrong-statement", msgs))
    assert theorem_name(5) in weak and "True" in weak
    assert "sorry" in _block(answer("guard-violation", msgs))
    assert "import" not in _block(answer("missing-import", msgs))


def _guard_ok(source: str) -> bool:
    result = check_guard(source)
    return bool(getattr(result, "ok", getattr(result, "passed", result)))


def test_policies_against_the_guard() -> None:
    msgs = messages_for(7)
    assert _guard_ok(_block(answer("reference", msgs)))
    assert _guard_ok(_block(answer("wrong-statement", msgs)))  # only the statement check can catch it
    assert not _guard_ok(_block(answer("guard-violation", msgs)))
    assert not _guard_ok(_block(answer("missing-import", msgs)))


def test_cli_serves_until_stopped() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "serve-baseline", "--port", "0", "--policy", "no-code"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert "serving policy 'no-code' at http://127.0.0.1:" in line, line + proc.stderr.read()
        base_url = line.split(" at ", 1)[1].split()[0]
        with post(base_url + "/chat/completions", {"model": "m", "messages": messages_for(5)}) as response:
            content = json.load(response)["choices"][0]["message"]["content"]
        assert "```" not in content and "5" in content
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


# ---- robustness: busy or invalid port, a client that hangs up mid-stream -----------------------


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, "serve-baseline", *argv], capture_output=True, text=True, timeout=30
    )


def test_busy_port_is_one_line_and_exit_2(server) -> None:
    port = str(server.server_address[1])
    done = run_cli("--port", port)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0]
    assert lines[0].startswith("lean-mod-add-proof: error: serve-baseline: "), lines[0]
    assert "--port 0" in lines[0]


@pytest.mark.parametrize(
    ("port", "message"), [("70000", "out of range"), ("-1", "out of range"), ("x", "not a port")]
)
def test_invalid_port_is_a_usage_error(port: str, message: str) -> None:
    done = run_cli("--port", port)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_client_hanging_up_mid_stream_leaves_no_traceback(capfd, monkeypatch) -> None:
    """The stream waits until the client has reset the connection, then keeps writing: the
    server must count a disconnect, print nothing, and go on serving."""
    from lean_mod_add_proof.cli import baseline

    hung_up = threading.Event()
    real_stream_events = baseline.stream_events

    def slow_events(model: str, text: str, include_usage: bool = True, chunk_chars: int = 64):
        events = real_stream_events(model, text, include_usage, chunk_chars)
        yield next(events)
        hung_up.wait(timeout=10)
        for _ in range(2000):  # far more than a socket buffer takes after a reset
            yield "x" * 1024

    monkeypatch.setattr(baseline, "stream_events", slow_events)
    with running_server("reference") as srv:
        host, port = srv.server_address[:2]
        body = json.dumps({"model": "m", "messages": messages_for(5), "stream": True}).encode()
        client = socket.create_connection((host, port), timeout=10)
        client.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        assert client.recv(64).startswith(b"HTTP/1.0 200")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
        client.close()
        hung_up.set()
        deadline = time.monotonic() + 10
        while srv.disconnects == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.disconnects == 1
        monkeypatch.setattr(baseline, "stream_events", real_stream_events)
        with post(
            srv.base_url + "/chat/completions", {"model": "m", "messages": messages_for(5)}
        ) as response:
            assert response.status == 200  # still serving
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Broken pipe" not in err and err.strip() == "", err
