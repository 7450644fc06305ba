"""What the MCP tools hand an agent: project and id arguments read leniently, recall answers cut to the
agent defaults (supported results only, related and weak on request, labelled)."""

from __future__ import annotations

from typing import Any

from memcue.core.address import IdListError, parse_id_list
from memcue.core.project import project_key
from memcue.core.text import preview

#: The answer for a related outcome when the agent did not ask for related memories.
RELATED_HIDDEN = "I don't have this exactly. Closer memories exist; ask with include_related to see them."
#: The answer when only weak matches came back and the agent did not ask for them.
WEAK_HIDDEN = "Only weak matches, not evidence; ask with show_weak to see them labelled."
#: Characters of a memory's content that ``list_recent`` shows.
LIST_CONTENT_CHARS = 120
#: ``project`` values that search every project.
ALL_PROJECTS = ("*", "all")
#: Fields of a recall answer an agent needs to judge it (the rest is diagnostics).
ANSWER_FIELDS = ("query", "tier", "note", "abstained", "abstention_reason", "channel_status", "incomplete_channels",
                 "query_id", "warming_up", "retrieval_mode", "retrieval_time_ms", "answerability",
                 "answerability_reason", "answer_check_status", "calibration_status", "answer_confidence", "layers",
                 "filters")


def recall_project(value: str | None) -> str | None:
    """Like ``project_key``, but ``"*"``/``"all"`` means every project (None on the API)."""
    if value is not None and value.strip().lower() in ALL_PROJECTS:
        return None
    return project_key(value)


def parse_ids(ids: list[int] | list[str] | str | int) -> list[int]:
    """Memory ids from a list, one number, or a comma-separated string ("12, 15"); ``#12`` and
    ``memcue://<project>/12`` addresses (``memcue.core.address``, as a compact recall block writes them) are
    accepted too. Order kept, duplicates dropped. Raises ``ValueError`` naming a bad part, or when none is
    given."""
    try:
        return parse_id_list(ids, unique=True)
    except IdListError as exc:
        if exc.part is None:
            raise
        raise ValueError(f"{exc.part!r} is not a memory id (ids are whole numbers, e.g. 12 or \"12,15\", or "
                         "memcue://<project>/<id> addresses)") from None


def shape_recall(answer: dict[str, Any], *, include_related: bool, show_weak: bool,
                 kind: str | None = None) -> dict[str, Any]:
    """The agent's view of a recall ``answer``: only ``supported`` results by default; ``weak`` ones when
    ``show_weak``; a ``related`` answer's memories only when ``include_related`` (otherwise none, with
    ``RELATED_HIDDEN``). ``kind`` keeps results of that memory kind only. Every result keeps its ``tier``
    label; ``hidden`` counts what was held back and why."""
    out: dict[str, Any] = {"success": True, **{k: answer[k] for k in ANSWER_FIELDS if k in answer}}
    results = list(answer.get("results") or [])
    if kind:
        results = [r for r in results if r.get("memory_kind") == kind]
    hidden = {"related": 0, "weak": 0}
    shown = []
    for r in results:
        label = r.get("tier") or answer.get("tier")
        if label == "related" and not include_related:
            hidden["related"] += 1
        elif label == "weak" and not show_weak:
            hidden["weak"] += 1
        else:
            shown.append(r)
    out["results"] = shown
    out["hidden"] = {k: v for k, v in hidden.items() if v}
    if not shown:
        notes = [answer["note"]] if answer.get("warming_up") and answer.get("note") else []
        if hidden["related"]:
            notes.append(RELATED_HIDDEN)
        elif hidden["weak"]:
            notes.append(WEAK_HIDDEN)
        elif answer.get("note"):
            notes.append(answer["note"])
        out["note"] = " ".join(notes)
    if answer.get("tier") == "related" and shown:
        out["note"] = answer.get("note") or "Related memories, not an exact answer."
    return out


def cut(text: str, chars: int = LIST_CONTENT_CHARS) -> str:
    """``text`` on one line, at most ``chars`` characters (cut marked "…")."""
    return preview(text, chars)
