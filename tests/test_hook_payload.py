"""What reaches recall is what was typed; what the hook prints is strict UTF-8 JSON (C05, C06, C14)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hookutil import FakeSidecar, cleanup_home, make_home, run_hook, socket_path, spool_records

#: A fenced code block, a literal tab, a Windows path full of would-be escapes, embedded JSON with
#: escaped quotes, and a trailing backslash (case C05).
C05_PROMPT = (
    "why does this fail?\n"
    "```python\n"
    "def f(x):\n"
    "\treturn {'a': \"b\"}  # tab-indented\n"
    "```\n"
    "path: C:\\new\\table\\x and \\\\server\\share\n"
    'config: {"name": "say \\"hi\\"", "re": "\\\\d+\\n"}\n'
    "ends with a backslash \\"
)

#: What the fake sidecar returns: CJK, emoji (astral), quotes, backslashes, newlines, a JSON-looking line.
CONTEXT = (
    "memcue recalled:\n"
    "- 构建缓存的密钥在每次发布后轮换 🔑🚀\n"
    '- he said "use C:\\new\\table" and {"k": "v\\"q"}\n'
    "- tab\there, U+2028 [\u2028], NBSP [\u00a0]"
)


@pytest.fixture
def home(tmp_path: Path):
    home = make_home(tmp_path)
    yield home
    cleanup_home(home)


def payload(prompt: str, **extra: object) -> dict:
    return {
        "session_id": "sess-c05",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
        **extra,
    }


def strict_output(stdout: bytes) -> dict:
    text = stdout.decode("utf-8")  # strict: invalid UTF-8 raises
    assert "\n" not in text.rstrip("\n"), "one JSON object on one line"
    return json.loads(text)  # strict=True: raw control characters in strings raise


@pytest.mark.parametrize("ensure_ascii", [True, False], ids=["ascii-escaped", "raw-utf8"])
def test_C05_prompt_reaches_recall_byte_for_byte(home: Path, ensure_ascii: bool) -> None:
    stdin = json.dumps(payload(C05_PROMPT + " 日本語 😀"), ensure_ascii=ensure_ascii).encode("utf-8")
    with FakeSidecar(socket_path(home), CONTEXT) as fake:
        run = run_hook(stdin, home, MEMCUE_HOOK_DEADLINE_S="2.0")
    assert run.returncode == 0
    assert run.stderr == b""
    [(path, body)] = fake.requests
    assert path == "/hooks/claude-code/user-prompt-submit"
    assert body["event"]["prompt"] == C05_PROMPT + " 日本語 😀"
    out = strict_output(run.stdout)
    assert out == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": CONTEXT}}
    assert spool_records(home) == [], "the sidecar took the prompt; nothing to spool"


def test_C05_request_body_contract(home: Path) -> None:
    with FakeSidecar(socket_path(home), "") as fake:
        before = time.time()
        run = run_hook(payload("what is the retry policy?"), home, MEMCUE_HOOK_DEADLINE_S="2.0")
    assert run.returncode == 0
    assert run.stdout == b"", "empty context prints nothing"
    [(_, body)] = fake.requests
    assert set(body) == {"event", "budget_s", "sent_at", "max_tokens", "max_chars"}
    assert before - 0.01 <= body["sent_at"] <= time.time(), "the hook's clock, so the sidecar can take a wait off"
    assert 0.1 <= body["budget_s"] <= 2.0 - 0.25
    assert body["budget_s"] > 1.0, "the sidecar gets most of the deadline"
    assert (body["max_tokens"], body["max_chars"]) == (600, 9500)
    event = body["event"]
    assert event["harness"] == "claude-code"
    assert event["event"] == "user-prompt-submit"
    assert event["session_id"] == "sess-c05"
    assert event["cwd"] == "/tmp"
    assert event["project"] == str(Path("/tmp").resolve())
    assert event["transcript_path"] == "/tmp/transcript.jsonl"
    assert event["extra"]["permission_mode"] == "default"
    assert len(event["extra"]["request_id"]) == 32


def test_C14_session_start_output_and_budget(home: Path) -> None:
    stdin = {
        "session_id": "sess-ss",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    with FakeSidecar(socket_path(home), "pinned: deploy on Fridays is forbidden") as fake:
        run = run_hook(stdin, home, event="SessionStart", MEMCUE_SESSION_START_TOKENS="2000")
    assert run.returncode == 0
    assert strict_output(run.stdout) == {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": "pinned: deploy on Fridays is forbidden",
        }
    }
    [(path, body)] = fake.requests
    assert path == "/hooks/claude-code/session-start"
    assert body["event"]["source"] == "startup"
    assert body["event"]["prompt"] == ""
    assert (body["max_tokens"], body["max_chars"]) == (2000, 9500)
    assert body["budget_s"] > 3.0, "session start has a 4.5 s deadline by default"


def test_C14_session_start_unreachable_prints_nothing_and_does_not_spool(home: Path) -> None:
    run = run_hook(
        {"session_id": "s", "cwd": "/tmp", "hook_event_name": "SessionStart", "source": "resume"},
        home,
        event="session-start",
        MEMCUE_HOOK_DEADLINE_S="0.5",
        MEMCUE_HOOK_SPAWN="0",
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    assert spool_records(home) == []


def test_C06_raw_control_characters_in_json_string(home: Path) -> None:
    stdin = (
        b'{"session_id": "s6", "cwd": "/tmp", "prompt": "col1\tcol2\nline2 nul[\x00] '
        b'\x1b[31mred\x1b[0m bell\x07 del\x7f cr\r end"}'
    )
    with FakeSidecar(socket_path(home), "ok \U0001f600") as fake:
        run = run_hook(stdin, home)
    assert run.returncode == 0
    assert run.stderr == b""
    prompt = fake.requests[0][1]["event"]["prompt"]
    assert prompt == "col1\tcol2\nline2 nul[] red bell del cr end"
    assert strict_output(run.stdout)["hookSpecificOutput"]["additionalContext"] == "ok \U0001f600"


def test_C06_escaped_lone_surrogate(home: Path) -> None:
    stdin = b'{"session_id": "s6", "cwd": "/tmp", "prompt": "before \\ud800 after \\udfff \\ud83d\\ude00"}'
    with FakeSidecar(socket_path(home), "ctx") as fake:
        run = run_hook(stdin, home)
    assert run.returncode == 0
    prompt = fake.requests[0][1]["event"]["prompt"]
    assert prompt == "before \ufffd after \ufffd \U0001f600"
    prompt.encode("utf-8")  # no surrogates left


def test_C06_invalid_utf8_bytes(home: Path) -> None:
    stdin = b'{"session_id": "s6", "cwd": "/tmp", "prompt": "bad \xb2\xff bytes \xe6\x97"}'
    with FakeSidecar(socket_path(home), "ctx") as fake:
        run = run_hook(stdin, home)
    assert run.returncode == 0
    assert run.stderr == b""
    assert fake.requests[0][1]["event"]["prompt"] == "bad \ufffd\ufffd bytes \ufffd"
    assert strict_output(run.stdout)["hookSpecificOutput"]["additionalContext"] == "ctx"


def test_C06_lone_surrogate_in_the_sidecar_answer(home: Path) -> None:
    answer = b'{"context": "memory \\ud800 with a lone surrogate", "answered_by": "full"}'
    with FakeSidecar(socket_path(home), raw_answer=answer):
        run = run_hook(payload("anything"), home)
    assert run.returncode == 0
    out = strict_output(run.stdout)
    assert out["hookSpecificOutput"]["additionalContext"] == "memory \ufffd with a lone surrogate"


def test_C06_spooled_prompt_is_clean(home: Path) -> None:
    stdin = b'{"cwd": "/tmp", "prompt": "x\x00y \\ud800 \xff \x1b[1mbold\x1b[0m"}'
    run = run_hook(stdin, home, MEMCUE_HOOK_SPAWN="0", MEMCUE_HOOK_DEADLINE_S="0.5")
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    [record] = spool_records(home)
    assert record["content"] == "xy \ufffd \ufffd bold"


def test_C07_oversized_context_is_capped(home: Path) -> None:
    context = "\n".join(f'<memory id="{i}" kind="note">memory {i}: ' + "记忆🧠" * 60 + "</memory>" for i in range(200))
    assert len(context) > 9500
    with FakeSidecar(socket_path(home), context):
        run = run_hook(payload("everything"), home)
    injected = strict_output(run.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(injected) <= 9500
    body, marker = injected.rsplit("\n", 1)
    assert context.startswith(body + "\n"), "cut at a line boundary"
    assert marker == f"[memcue: {200 - len(body.splitlines())} more memories left out of this block; recall finds them]"
