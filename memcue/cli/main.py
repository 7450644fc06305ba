"""The ``memcue`` command: a thin client of the sidecar.

Exit codes: 0 ok, 1 error, 2 usage, 75 busy (try again). Every command that prints data takes
``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from memcue.cli.output import clean, emit, format_recall, iso_time, limit, progress, stdin_text, usage_error

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_BUSY = 0, 1, 2, 75

EPILOG = """examples:
  memcue remember "We pin httpx to 0.28 because 0.29 broke unix sockets" --kind decision
  memcue recall "why is httpx pinned?"
  memcue import notes.jsonl          one JSON object per line: {"content": ..., "kind": ..., "project": ...}
  memcue status --json
  memcue install all                 wire memcue into Claude Code, Codex and Hermes (those found); --dry-run first
  memcue install codex --trust       Codex runs only trusted hooks: have Codex trust memcue's hooks
  memcue doctor                      is everything wired, trusted and answering?
  memcue demo                        seed a demo store and run real Claude Code payloads through the hook

Data lives in $MEMCUE_HOME (default ~/.local/share/memcue)."""


PROJECT_HELP = ("a path in the project (its git top-level is the project, as for the hooks), or a bare project "
                "key as stored; default: the current directory")


def _project(args: argparse.Namespace) -> str:
    from memcue.core.project import project_key

    return project_key(getattr(args, "project", None), global_=getattr(args, "global_", False))


def cmd_remember(args: argparse.Namespace) -> int:
    from memcue.client import Client

    text = clean(args.text) if args.text != "-" else stdin_text().rstrip("\n")
    if not text.strip():
        return usage_error(args, "nothing to remember: the text is empty")
    with Client() as client:
        client.ensure_running()
        out = client.remember(text, kind=args.kind, project=_project(args), pinned=args.pinned, source="cli")
    note = " (flagged as bookkeeping: kept, never recalled or injected)" if out["bookkeeping"] else ""
    if out.get("redacted"):
        note += f" ({out['redacted']} secret{'s' if out['redacted'] > 1 else ''} replaced by [REDACTED:…] markers)"
    said = f"already remembered as #{out['id']} (counted again)" if out.get("duplicate") else f"remembered #{out['id']}"
    emit(out, args.json, f"{said}{note}")
    return EXIT_OK


def cmd_recall(args: argparse.Namespace) -> int:
    from memcue.client import Client

    project = None if args.all_projects else _project(args)
    args.query = clean(args.query)
    if not args.query.strip():
        return usage_error(args, "the question is empty")
    from memcue.core.session_ids import resolve_session_id

    fields: dict[str, Any] = {"project": project, "limit": args.limit, "mode": "keyword" if args.keyword else "full",
                              "depth": args.depth, "max_tokens": args.max_tokens,
                              "include_requests": args.include_requests,
                              "session_id": resolve_session_id(args.session_id, os.environ) or "cli:recall"}
    if args.since or args.until:
        import datetime as dt

        if args.since and args.until and dt.datetime.fromisoformat(args.until) <= dt.datetime.fromisoformat(
                args.since):
            print("memcue: --until must be later than --since", file=sys.stderr)
            return EXIT_USAGE
        fields["window"] = {"from": args.since, "to": args.until}
    if args.as_of:
        fields["as_of"] = args.as_of
    if args.valid_at:
        fields["valid_at"] = args.valid_at
    with Client() as client:
        client.ensure_running()
        answer = client.recall(args.query, **fields)
    text = format_recall(answer, show_weak=args.show_weak)
    if not answer["results"] and project is not None:
        text += f"\n(searched project {project or '(global)'}; --all-projects searches every project)"
    emit(answer, args.json, text)
    return EXIT_OK


def cmd_update(args: argparse.Namespace) -> int:
    from memcue.client import Client

    text = stdin_text() if args.text == "-" else clean(args.text)
    if not text.strip():
        print("memcue: the memory text is empty", file=sys.stderr)
        return EXIT_USAGE
    body: dict[str, Any] = {"memory_id": args.id, "content": text}
    if args.kind:
        body["kind"] = args.kind
    with Client() as client:
        client.ensure_running()
        out = client.update(body)
    emit(out, args.json, f"memory #{args.id} replaced by #{out['id']} (the old version stays for --as-of)")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from memcue.client import Client
    from memcue.sidecar.api_models import RememberIn

    path = Path(args.file)
    if not path.is_file():
        print(f"memcue: {path}: no such file", file=sys.stderr)
        return EXIT_USAGE
    rows, errors = [], []
    default_project = _project(args)
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("needs a JSON object with a 'content' string")
                rec.setdefault("project", default_project)
                rec.setdefault("source", f"import:{path.name}")
                rec.setdefault("source_id", f"import:{path.name}:{n}")
                row = RememberIn.model_validate(rec).model_dump(exclude_none=True)
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
                errors.append(f"line {n}: {problems}")
                continue
            except json.JSONDecodeError as exc:
                errors.append(f"line {n}: not JSON ({exc})")
                continue
            except ValueError as exc:
                errors.append(f"line {n}: {exc}")
                continue
            rows.append(row)
    stored = duplicates = 0
    with Client() as client:
        client.ensure_running()
        for i in range(0, len(rows), 500):
            for out in client.remember_batch(rows[i:i + 500]):
                duplicates += out["duplicate"]
                stored += not out["duplicate"]
            progress(min(i + 500, len(rows)), len(rows), "importing")
    data = {"stored": stored, "duplicates": duplicates, "errors": errors}
    text = f"imported {stored} memories ({duplicates} already stored, {len(errors)} bad lines skipped)"
    if args.json:
        print(json.dumps({"success": not errors, "data": data}, ensure_ascii=False, indent=2))
    else:
        print("\n".join([text, *errors[:20]] + ([f"... and {len(errors) - 20} more"] if len(errors) > 20 else [])))
    return EXIT_OK if not errors else EXIT_ERROR


def cmd_serve(args: argparse.Namespace) -> int:
    from memcue.sidecar.lifecycle import serve

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return serve(foreground=True)


def cmd_stop(args: argparse.Namespace) -> int:
    from memcue.core.paths import locations
    from memcue.sidecar.lifecycle import read_pid

    loc = locations()
    pid = read_pid(loc)
    if pid is None:
        emit({"stopped": False}, args.json, "memcue sidecar is not running")
        return EXIT_OK
    if not _is_sidecar(pid):
        emit({"stopped": False}, args.json, f"memcue sidecar is not running (stale pid file names pid {pid}, "
                                              "which is not a memcue sidecar; left alone)")
        return EXIT_OK
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        emit({"stopped": False}, args.json, "memcue sidecar is not running (stale pid file)")
        return EXIT_OK
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _is_sidecar(pid):
        time.sleep(0.05)
    if _is_sidecar(pid):
        print(f"memcue: the sidecar (pid {pid}) did not stop within 15 s", file=sys.stderr)
        return EXIT_ERROR
    emit({"stopped": True, "pid": pid}, args.json, f"stopped memcue sidecar (pid {pid})")
    return EXIT_OK


def _is_sidecar(pid: int) -> bool:
    """True while ``pid`` is alive and (where /proc exists) runs memcue's sidecar, so a pid reused by
    another program after a crash is never signalled."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.parent.exists():
        return True
    try:
        args = cmdline.read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":  # exited, waiting to be reaped
        return False
    return b"memcue.sidecar" in args or (b"serve" in args and any(a.endswith(b"memcue") for a in args))


def cmd_status(args: argparse.Namespace) -> int:
    from memcue.client import Client, SidecarDown
    from memcue.core.paths import socket_blocked

    with Client(timeout_s=5) as client:
        try:
            health: dict[str, Any] | None = client.health()  # a stuck sidecar raises ClientError: exit 1, said
        except SidecarDown:
            health = None
        if health is None:
            data = {"running": False, "data_dir": str(client.loc.root), "socket": str(client.loc.socket),
                    "log": str(client.loc.sidecar_log)}
            sock = client.loc.socket
            if socket_blocked(sock):  # case C09: the sidecar refuses to start until it moves
                data["blocked"] = f"{sock} exists and is not a socket; memcue will not delete it"
                emit(data, args.json, f"memcue sidecar cannot start: {data['blocked']}. Move it away, or set "
                                        f"MEMCUE_HOME to another folder. Log: {client.loc.sidecar_log}")
                return EXIT_OK
            emit(data, args.json, f"memcue sidecar is not running (socket {client.loc.socket}); it starts on the "
                                    f"next hook or command. Log: {client.loc.sidecar_log}")
            return EXIT_OK
    text = (f"memcue {health['version']} running (pid {health['pid']}), data in {health['data_dir']}\n"
            f"model: {health['model']['id'] or '-'} ({health['model']['state']}); vector search: "
            f"{'on' if health['vector_search'] else 'off (' + (health['vector_note'] or 'warming up') + ')'}; "
            f"tokenizer: {health['tokenizer']}\n"
            f"memories: {health['counts']['memories']} ({health['counts']['bookkeeping']} bookkeeping, "
            f"{health['counts']['pending_embeddings']} "
            f"{'waiting for vectors' if health['vector_search'] or health['warming_up'] else 'without vectors'})")
    reranker = health.get("reranker") or {}
    if reranker.get("status") not in (None, "off"):
        text += f"\nreranker: {reranker['status']}" + (f" ({reranker['note']})" if reranker.get("note") else "")
    if health.get("config_error"):
        text += f"\nconfig problems (those entries are ignored): {health['config_error']}"
    emit({"running": True, **health}, args.json, text)
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    from memcue.mcp import main as run_mcp

    return run_mcp()


def cmd_demo(args: argparse.Namespace) -> int:
    from memcue.demo.run import run_demo

    return run_demo(keep=args.keep, as_json=args.json)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memcue", description="Local long-term memory for coding agents.",
                                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"memcue {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str, json_flag: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        if json_flag:
            p.add_argument("--json", action="store_true", help="print JSON: {\"success\": true, \"data\": ...}")
        return p

    def scope(p: argparse.ArgumentParser) -> None:
        p.add_argument("--project", metavar="DIR", help=PROJECT_HELP)
        p.add_argument("--global", dest="global_", action="store_true", help="a memory for every project")

    p = add("remember", "Store a memory now (keyword-searchable at once, embedded in the background).")
    p.add_argument("text", help="the memory text, or - to read it from stdin")
    p.add_argument("--kind", default="note", help="decision, preference, bug, howto, note, ... (default: note)")
    p.add_argument("--pinned", action="store_true", help="always offered at session start")
    scope(p)
    p.set_defaults(fn=cmd_remember)

    p = add("recall", "Find the memories that are evidence for QUERY.")
    p.add_argument("query", help="the question, in your own words")
    p.add_argument("--limit", type=limit, default=10, help="results at most, 1-100 (default 10)")
    p.add_argument("--keyword", action="store_true", help="BM25 keyword search only")
    p.add_argument("--all-projects", action="store_true", help="search every project")
    p.add_argument("--show-weak", action="store_true", help="also list weak matches, labelled [weak] (left out by "
                                                            "default: they are not evidence)")
    p.add_argument("--include-requests", action="store_true",
                   help="let prompts you typed (captured by the hook, kind request) answer too")
    p.add_argument("--project", metavar="DIR", help=PROJECT_HELP)
    p.add_argument("--since", metavar="TIME", type=iso_time,
                   help="only memories written at or after TIME (ISO 8601 date/time)")
    p.add_argument("--until", metavar="TIME", type=iso_time, help="only memories written before TIME (ISO 8601)")
    p.add_argument("--as-of", metavar="TIME", type=iso_time,
                   help="what memcue knew at TIME: versions current then (ISO 8601)")
    p.add_argument("--valid-at", metavar="TIME", type=iso_time, help="facts valid at TIME (ISO 8601)")
    p.add_argument("--depth", type=int, choices=(0, 1, 2), default=1,
                   help="0: a glance (one-line previews), 1: full memories (default), 2: with session/entity context")
    p.add_argument("--max-tokens", type=int, default=None, metavar="N",
                   help="never more than N tokens of memory text (drops context, then shortens, then leaves out)")
    p.add_argument("--session-id", default="", help="session for the working set (default: MEMCUE_SESSION_ID, "
                   "CLAUDE_SESSION_ID, CLAUDE_CODE_SESSION_ID; none: a synthetic cli: session)")
    p.set_defaults(fn=cmd_recall)

    p = add("update", "Write a new version of memory ID; the old one is kept for --as-of and never served.")
    p.add_argument("id", type=int, help="the memory id (from recall)")
    p.add_argument("text", help="the new text, or - to read it from stdin")
    p.add_argument("--kind", help="change the kind (default: keep it)")
    p.set_defaults(fn=cmd_update)

    p = add("import", "Import memories from a JSONL file: one {\"content\": ...} object per line, optionally with "
                      "kind, project, pinned, session_id, source_id (idempotent re-import), created_at (Unix s) "
                      "and metadata.")
    p.add_argument("file")
    scope(p)
    p.set_defaults(fn=cmd_import)

    p = add("serve", "Run the sidecar in the foreground (clients start it detached when needed).", False)
    p.set_defaults(fn=cmd_serve)
    p = add("stop", "Stop the running sidecar (finishes writes, checkpoints the database).")
    p.set_defaults(fn=cmd_stop)
    p = add("status", "Is the sidecar running; model, vector search and store counts.")
    p.set_defaults(fn=cmd_status)
    p = add("mcp", "Run the MCP server on stdio (for an agent's MCP config: command `memcue`, args [\"mcp\"]); "
                   "it starts the sidecar if needed.", False)
    p.set_defaults(fn=cmd_mcp)
    from memcue.cli import install as cli_install
    from memcue.cli import memory as cli_memory
    from memcue.cli import stats as cli_stats

    cli_memory.add_commands(add, _project, PROJECT_HELP)
    cli_stats.add_commands(add)
    cli_install.add_commands(add)
    p = add("demo", "Seed a demo store in a temp dir and run real Claude Code payloads through the real hook.")
    p.add_argument("--keep", action="store_true", help="leave the demo sidecar running and print its MEMCUE_HOME")
    p.set_defaults(fn=cmd_demo)
    return parser


def _version() -> str:
    from memcue import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memcue`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    from memcue.client import ClientError, SidecarBusy

    try:
        code = args.fn(args)
        sys.stdout.flush()  # inside the try: a reader that left (| head) shows up here, not at exit
        return code
    except SidecarBusy as exc:
        print(f"memcue: {exc}", file=sys.stderr)
        return EXIT_BUSY
    except (ClientError, OSError) as exc:
        if getattr(args, "json", False):
            print(json.dumps({"success": False, "error": str(exc)}))
        else:
            print(f"memcue: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `memcue list | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
