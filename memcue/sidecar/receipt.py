"""A session's receipt (DESIGN.md section 7): what memcue captured from one session (and the memories saved in
it), what became of its capture
candidates, what it injected (memories, tokens), what it skipped and why, and what failed.

Built from the store only (no model, no recall): the session's rows (``Store.session_memories``), its
candidates (``Store.list_candidates``), the usage log's recalls for it (``Store.session_recalls``: each block's
tokens, each skipped prompt's reason) and the spool's count of unreadable lines of the session's spool files
(``capture.spool.BROKEN_KEY``), and the optional model distiller's ledger rows for it. Candidate signals are
shown as stored (``user-statement``, ``commit-landed``, ``test-passed``, any other), never from a fixed list.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from memcue.core.spool_format import spool_name
from memcue.harnesses import NAMES
from memcue.sidecar.capture.commits import read_note
from memcue.sidecar.capture.spool import BROKEN_KEY
from memcue.sidecar.store import StoreProtocol

#: Candidates of one session a receipt lists, at most.
CANDIDATES_MAX = 500
#: Why a prompt stored from the spool got nothing: the hook could not ask the sidecar in time.
SKIP_SPOOLED = "sidecar not reached in time: the prompt was spooled, nothing injected"


class SessionNotFound(LookupError):
    """No row, candidate or recall names the session asked for (or the project has no session yet)."""


def _via(row: dict[str, Any]) -> str:
    """How a row arrived: ``spool`` (read from the spool), ``live`` (a hook's call), else its source."""
    if (row.get("metadata") or {}).get("captured_via") == "spool":
        return "spool"
    source = str(row.get("source") or "")
    return "live" if source.startswith("hook:") else (source or "unknown")


def _item(r: dict[str, Any]) -> dict[str, Any]:
    return {"id": r["id"], "kind": r["kind"], "via": _via(r), "source": r["source"], "created_at": r["created_at"],
            "content": r["content"], "bookkeeping": r["bookkeeping"], "forgotten": r["forgotten"]}


def _captured(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"total", "by_kind", "by_via", "items"}`` of the rows the session's hooks captured (prompts, answers,
    session events; ``items``: id, kind, via, source, time, content, bookkeeping, forgotten)."""
    items = [_item(r) for r in rows if _via(r) in ("live", "spool")]
    return {"total": len(items), "by_kind": dict(Counter(i["kind"] for i in items)),
            "by_via": dict(Counter(i["via"] for i in items)), "items": items}


def _saved(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"total", "by_source", "items"}`` of the session's other rows: memories written by the gate (a promoted
    candidate), the agent (MCP ``remember``) or a person."""
    items = [_item(r) for r in rows if _via(r) not in ("live", "spool")]
    return {"total": len(items), "by_source": dict(Counter(i["source"] for i in items)), "items": items}


def _why(c: dict[str, Any]) -> str:
    """Why a candidate is where it is: its decision's reason, or for a pending one why it is held."""
    if c["state"] == "pending":
        held = (c.get("evidence") or {}).get("held")
        return f"held for review: {held}" if held else "waiting for a confirming signal"
    return str(c.get("reason") or "")


def _candidates(cands: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"total", "by_state", "by_signal", "items"}``; each item is the candidate row plus ``why``."""
    items = [{**c, "why": _why(c)} for c in sorted(cands, key=lambda c: (c["created_at"], c["id"]))]
    return {"total": len(items), "by_state": dict(Counter(c["state"] for c in items)),
            "by_signal": dict(Counter(c["signal"] for c in items)), "items": items}


def _injected(recalls: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"blocks", "memories", "tokens", "by_block", "items"}`` over the recalls that injected something (a
    block with memories, or a session-start note alone)."""
    given = [r for r in recalls if not r["skipped"]]
    items = [{"query_id": r["query_id"], "created_at": r["created_at"], "served_by": r["served_by"],
              "block": r["block"], "tokens": r["tokens"], "memories": r["items"]} for r in given]
    by_block: Counter[str] = Counter()
    for r in given:
        by_block[r["served_by"] + (f"/{r['block']}" if r["block"] else "")] += r["tokens"]
    return {"blocks": len(items), "memories": sum(len(i["memories"]) for i in items),
            "tokens": sum(i["tokens"] for i in items), "tokens_by_block": dict(by_block), "items": items}


def _prompt_of(recall: dict[str, Any], requests: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The captured prompt a hook recall answered: the session's latest request row stored before the recall
    was logged (a prompt is stored before its block is rendered), None when there is none."""
    before = [r for r in requests if r["created_at"] <= recall["created_at"]]
    return before[-1] if before else None


def _git_note(store: StoreProtocol, session_id: str) -> list[dict[str, Any]]:
    """The commit signal's note on why git was not read for the session (``capture.commits.read_note``), as a
    skipped item (``what: git``), or nothing."""
    note = read_note(store, session_id)
    if note is None or not note.get("reason"):
        return []
    return [{"what": "git", "id": None, "created_at": note.get("at"), "reason": f"commits not read: {note['reason']}",
             "content": ""}]


def _skipped(recalls: list[dict[str, Any]], cands: list[dict[str, Any]],
             rows: list[dict[str, Any]], more: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"total", "by_reason", "items"}``: prompts that got nothing (``what: prompt``, with the prompt's row
    ``id`` and ``content`` when found; a prompt that reached memcue only through the spool got nothing either)
    and statements held for review (``what: candidate``), then the items ``more`` (the commit signal's note,
    ``what: git``)."""
    requests = [r for r in rows if r["kind"] == "request" and _via(r) in ("live", "spool")]
    items: list[dict[str, Any]] = [
        {"what": "prompt", "query_id": "", "created_at": r["created_at"], "reason": SKIP_SPOOLED, "id": r["id"],
         "content": r["content"]} for r in requests if _via(r) == "spool"]
    for r in recalls:
        if r["skipped"]:
            prompt = _prompt_of(r, requests) or {}
            items.append({"what": "prompt", "query_id": r["query_id"], "created_at": r["created_at"],
                          "reason": r["skipped"], "id": prompt.get("id"), "content": prompt.get("content", "")})
    items += [{"what": "candidate", "id": c["id"], "created_at": c["created_at"], "reason": _why(c),
               "content": c["content"]} for c in cands
              if c["state"] == "pending" and (c.get("evidence") or {}).get("held")]
    items += more
    return {"total": len(items), "by_reason": dict(Counter(i["reason"] for i in items)), "items": items}


def _failed(store: StoreProtocol, session_id: str) -> dict[str, Any]:
    """``{"total", "items"}``: the session's spool files' lines that could not be read (per harness)."""
    items = []
    for harness in NAMES:
        name = spool_name(harness, session_id)
        count = int(store.get_meta(BROKEN_KEY + name) or 0)
        if count:
            items.append({"what": "spool lines", "harness": harness, "file": name, "count": count,
                          "reason": "not JSON, or not a remember record with content"})
    return {"total": sum(i["count"] for i in items), "items": items}


def _distilled(store: StoreProtocol, session_id: str) -> dict[str, Any]:
    """``{"total", "tokens", "by_outcome", "items"}``: the optional model distiller's ledger rows for the session
    (``Store.distill_entries``, oldest first): outcome, tokens, candidates made, why not."""
    items = sorted(store.distill_entries(session_id=session_id, limit=CANDIDATES_MAX), key=lambda e: e["id"])
    return {"total": len(items), "tokens": sum(e["prompt_tokens"] + e["completion_tokens"] for e in items),
            "by_outcome": dict(Counter(e["outcome"] for e in items)), "items": items}


def build_receipt(store: StoreProtocol, session_id: str) -> dict[str, Any]:
    """The receipt of ``session_id``: ``{"session_id", "project", "harnesses", "first_at", "last_at",
    "captured", "saved", "candidates", "injected", "skipped", "failed", "distilled"}`` (times Unix s; each section has
    counts first, then ``items``). Raises ``SessionNotFound`` when nothing names the session (blocking)."""
    rows = store.session_memories(session_id)
    cands = store.list_candidates(session_id=session_id, limit=CANDIDATES_MAX)
    recalls = store.session_recalls(session_id)
    failed = _failed(store, session_id)
    if not (rows or cands or recalls or failed["total"]):
        raise SessionNotFound(f"no session {session_id!r}: memcue holds nothing captured, injected or held for it "
                              "(`memcue receipt --list` lists the recent sessions, `--all-projects` every project's)")
    times = [r["created_at"] for r in rows] + [c["created_at"] for c in cands] + [r["created_at"] for r in recalls]
    projects = [r["project"] for r in rows] + [c["project"] for c in cands]
    projects = projects or [r["project"] for r in recalls if r.get("project")]  # it stored nothing: where served
    harnesses = {r["source"].removeprefix("hook:") for r in rows if r["source"].startswith("hook:")}
    harnesses |= {c["harness"] for c in cands if c.get("harness")}
    return {"session_id": session_id, "project": Counter(projects).most_common(1)[0][0] if projects else "",
            "harnesses": sorted(harnesses), "first_at": min(times, default=None), "last_at": max(times, default=None),
            "captured": _captured(rows), "saved": _saved(rows), "candidates": _candidates(cands),
            "injected": _injected(recalls), "skipped": _skipped(recalls, cands, rows, _git_note(store, session_id)),
            "failed": failed, "distilled": _distilled(store, session_id)}


def latest_session(store: StoreProtocol, project: str | None) -> str:
    """The most recently active session of ``project`` (every project when None). Raises ``SessionNotFound``."""
    found = store.sessions(project, 1)
    if not found:
        raise SessionNotFound("no session of this project has stored anything yet"
                              if project is not None else "no session has stored anything yet")
    return str(found[0]["session_id"])
