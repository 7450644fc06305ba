"""Case C25, secrets in config shapes (issue 16, finding 2; issue 14, "Bad input"): a docker-compose
``environment:`` block with ``MYSQL_ROOT_PASSWORD: ...`` on the next, indented line; ``export PGPASSWORD=...``;
``curl -u ci:...``; ``--api-key ...``; a ``postgres://user:pw@host`` URL; ``Authorization: Bearer ...``.

Expected: none of the secret values reaches the spool, the database (its file and its WAL), the search index or
the logs (the hook's and the sidecar's); the surrounding text survives. The prompts go through the real hook
twice: once while no sidecar runs (spooled, ingested when one starts) and once to a running sidecar (stored
live); a failed and then passed test command carrying secrets and the turn's answer go through the capture
hooks (spooled always).

Every fake secret is built from pieces, so no secret-shaped literal sits in the repository.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

from conftest import Sidecar, prompt_payload, run_hook, start_sidecar, wait_until

from memcue.core.paths import Locations
from memcue.hooks import logging_

SESSION = "c25a1b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b"
LIVE_SESSION = "c25f9e8d-7c6b-4a59-8b4c-3d2e1f0a9b8c"


def _secrets(tag: str) -> dict[str, str]:
    """One set of distinct fake secret values (``tag`` keeps the spooled and the live set apart)."""
    return {"tag": f"set {tag}", "mysql": f"Qx81{tag}" + "mysqlRoot", "pg": f"Pg55{tag}" + "exportpw",
            "curl": f"Cu71{tag}" + "ciPass", "apikey": f"Ak93{tag}" + "zzLiveKeyValue", "url": f"Ur64{tag}" + "dbPass",
            "bearer": f"Br{tag}" + "x9KpL2mQ7vT4wZ8nR3sY6uB1cD5eF0gH", "nextline": f"Nx52{tag}" + "rootPwBelow"}


def _values(s: dict[str, str]) -> list[str]:
    return [v for k, v in s.items() if k != "tag"]


def _prompts(s: dict[str, str]) -> list[str]:
    """The prompts of C25, each shape with the text around it (the first words name the set: redacted, the sets
    would be the same text, stored once)."""
    return [f"({s['tag']}) {prompt}" for prompt in [
        "the compose file for the shop:\n```yaml\nservices:\n  db:\n    image: mysql:8\n    environment:\n"
        f"      MYSQL_ROOT_PASSWORD: {s['mysql']}\n      MYSQL_DATABASE: shop\n```\nwhy does the db restart?",
        f"before the migration I run `export PGPASSWORD={s['pg']}` then psql -h db.internal -U app",
        f"the CI call is curl -u ci:{s['curl']} https://ci.example.com/api/jobs and it returns 401",
        f"run ./deploy.sh --api-key {s['apikey']} --region eu-west-1 after the build",
        f"the app connects with postgres://app:{s['url']}@db.internal:5432/shop since Monday",
        f"curl -H 'Authorization: Bearer {s['bearer']}' https://api.example.com/v1/orders returns the list",
        "and the staging one:\n```yaml\n    environment:\n      MYSQL_ROOT_PASSWORD:\n"
        f"        {s['nextline']}\n      MYSQL_USER: shop\n```\nsame restarts there",
    ]]


#: Text around the secrets that must survive wherever the prompts are kept.
SURVIVES = ["MYSQL_DATABASE: shop", "MYSQL_USER: shop", "why does the db restart?", "psql -h db.internal -U app",
            "https://ci.example.com/api/jobs", "--region eu-west-1", "@db.internal:5432/shop",
            "https://api.example.com/v1/orders"]


def _tool_secrets() -> dict[str, str]:
    return {"cmd_pw": "Tl28" + "toolPass", "cmd_pg": "Tl29" + "pgPass", "key_line": "Tl30" + "keyLine",
            "answer": "An47" + "answerPw"}


def _tool_payloads(cwd: str, t: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """A failed and then passed test command with secrets in the command and the failure's key line, and the
    turn's answer (Stop) with one."""
    base = {"session_id": SESSION, "transcript_path": f"/home/dev/.claude/projects/x/{SESSION}.jsonl",
            "cwd": cwd, "permission_mode": "default"}
    command = (f"PGPASSWORD={t['cmd_pg']} pytest tests/test_db.py --password {t['cmd_pw']}")
    failure = (f"Exit code 1\n=== FAILURES ===\nE   AssertionError: login failed for password={t['key_line']}\n"
               "=== 1 failed in 0.2s ===")
    return [
        ("post-tool-use-failure", {**base, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                                   "tool_input": {"command": command}, "tool_use_id": "toolu_c25a",
                                   "error": failure, "is_interrupt": False}),
        ("post-tool-use", {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                           "tool_input": {"command": command}, "tool_use_id": "toolu_c25b",
                           "tool_response": {"stdout": "1 passed in 0.1s", "stderr": "", "interrupted": False}}),
        ("stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False,
                  "last_assistant_message": f"I set DB_PASSWORD={t['answer']} in .env and the tests pass now."}),
    ]


def _hook(payload: dict[str, Any], event: str, env: dict[str, str]) -> None:
    proc = run_hook(payload, event, env=env)
    assert proc.returncode == 0 and proc.stderr == b"", proc


def _spooled(home: Path) -> bool:
    files = {f"spool_offset:{f.name}": f.stat().st_size for f in (home / "spool").glob("*.jsonl")}
    with sqlite3.connect(f"file:{home / 'memcue.db'}?mode=ro", uri=True) as conn:
        got = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'spool_offset:%'").fetchall())
    return bool(files) and all(int(got.get(k) or 0) == size for k, size in files.items())


def _bytes_of(paths: list[Path]) -> bytes:
    return b"".join(p.read_bytes() for p in paths if p.exists())


def _assert_nowhere(values: list[str], where: dict[str, bytes]) -> None:
    leaks = [(name, value) for name, data in where.items() for value in values if value.encode() in data]
    assert not leaks, f"secret values found: {leaks}"


def test_C25_no_secret_reaches_spool_database_index_or_logs(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    loc = Locations(home)
    offline, live, tool = _secrets("Sp"), _secrets("Lv"), _tool_secrets()
    no_spawn = {**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0", "MEMCUE_HOOK_DEBUG": "1"}

    # No sidecar: every prompt, the tool calls and the answer are spooled by the hook.
    for prompt in _prompts(offline):
        _hook(prompt_payload(prompt, str(project), SESSION), "user-prompt-submit", no_spawn)
    for event, payload in _tool_payloads(str(project), tool):
        _hook(payload, event, no_spawn)
    spool_files = sorted(loc.spool_dir.glob("*.jsonl"))
    spool = _bytes_of(spool_files)
    assert spool.count(b"\n") == len(_prompts(offline)) + 3, "every prompt and capture was spooled"
    _assert_nowhere([*_values(offline), *tool.values()], {"spool": spool})
    for text in [*SURVIVES, "pytest tests/test_db.py", "in .env and the tests pass now"]:
        assert text.encode() in spool, text

    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        assert wait_until(lambda: _spooled(home)), "the spool was ingested"
        for prompt in _prompts(live):  # the sidecar is up: stored live, over the socket
            _hook(prompt_payload(prompt, str(project), LIVE_SESSION), "user-prompt-submit",
                  {**sc.env, "MEMCUE_HOOK_DEBUG": "1"})
        rows = wait_until(lambda: _rows(sc, 2 * len(_prompts(offline))))
        assert len(rows) >= 2 * len(_prompts(offline)), rows
        values = [*_values(offline), *_values(live), *tool.values()]
        stored = "\n".join(r["content"] for r in rows)
        for text in SURVIVES:
            assert stored.count(text) == 2, text
        for value in values:  # the search index: a keyword search for the value finds nothing
            found = sc.client.recall(value, mode="keyword")
            assert not [r for r in found["results"] if value in r["content"]], value
        sc.client.candidates()  # the capture signals' rows are written by now
        _assert_nowhere(values, {
            "spool": _bytes_of(sorted(loc.spool_dir.glob("*.jsonl"))),
            "database": _bytes_of([loc.database, loc.database.with_name(loc.database.name + "-wal")]),
            "hook log": _bytes_of([loc.hook_log, loc.hook_log.with_name(loc.hook_log.name + ".1")]),
            "sidecar log": _bytes_of([loc.sidecar_log]),
        })
    finally:
        sc.stop()
    database = [loc.database, loc.database.with_name(loc.database.name + "-wal")]
    _assert_nowhere([*_values(offline), *_values(live), *tool.values()], {"database after stop": _bytes_of(database)})


def _rows(sc: Sidecar, at_least: int) -> list[dict[str, Any]]:
    rows = sc.client.list_recent(kind="request", include_bookkeeping=True, limit=100)["results"]
    return rows if len(rows) >= at_least else []


def test_C25_log_lines_are_redacted(home: Path) -> None:
    """A secret in a message reaches neither the hook's log nor the sidecar's formatter as it was."""
    from memcue.sidecar.lifecycle import RedactingFormatter

    value = "Lg19" + "logLinePw"
    logging_.log(f"could not spool: curl -u ci:{value} failed")
    hook_log = Locations(home).hook_log.read_text()
    assert value not in hook_log and "curl -u ci:[REDACTED:basic-auth] failed" in hook_log
    record = logging.LogRecord("memcue.spool", logging.WARNING, __file__, 1, "skipping %s", (f"PGPASSWORD={value}",),
                               None)
    line = RedactingFormatter("%(levelname)s %(message)s").format(record)
    assert line == "WARNING skipping PGPASSWORD=[REDACTED:password]"
