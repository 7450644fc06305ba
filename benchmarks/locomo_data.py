"""Loading the LoCoMo data set: its checksum, sessions and turns, evidence-id repair, and the memories
and questions the recall benchmark uses.

Every dialogue turn becomes one memory text, ``"[<session date_time>] <speaker>: <text>"`` plus
``" [image: <caption>]"`` when the turn shared an image. The data (CC BY-NC 4.0) is read in place and
never copied into the repository.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import REPO

DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
#: sha256 of ``locomo10.json`` as published in the shared data folder's README.
EXPECTED_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ANSWERABLE = (1, 2, 3, 4)
DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %d %B %Y", "%d %B, %Y", "%d %B %Y",
)
_DATE_FALLBACK = re.compile(r"(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})")
_DIA_ID = re.compile(r"D\W*(\d+)\s*:\s*0*(\d+)$")


@dataclass
class Question:
    """One LoCoMo QA item with its gold evidence resolved to dia_ids of its conversation."""

    conv: int
    project: str
    text: str
    category: int
    gold: list[str]
    raw_evidence: list[str] = field(default_factory=list)


@dataclass
class Dataset:
    """Turns to import, questions to ask, and what the evidence cleanup did."""

    memories: list[dict[str, Any]]
    questions: list[Question]
    skipped: Counter[str]
    dropped_ids: int
    repaired_ids: int
    unparsed_dates: int


def sha256_of(path: Path) -> str:
    """Hex sha256 of the file at ``path``, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parse_session_date(text: str) -> float | None:
    """Unix seconds (UTC) of a LoCoMo session date like "1:56 pm on 8 May, 2023"; None if unparsable."""
    text = " ".join(str(text).split())
    for fmt in DATE_FORMATS:
        try:
            return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.UTC).timestamp()
        except ValueError:
            continue
    match = _DATE_FALLBACK.search(text)
    if match:
        for fmt in ("%d %B %Y", "%d %b %Y"):
            try:
                return dt.datetime.strptime(" ".join(match.groups()), fmt).replace(tzinfo=dt.UTC).timestamp()
            except ValueError:
                continue
    return None


def sessions(conversation: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """``(session number, date_time text, turns)`` in order."""
    out = []
    for key, turns in conversation.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(turns, list):
            out.append((int(m.group(1)), str(conversation.get(f"{key}_date_time", "")), turns))
    return sorted(out, key=lambda s: s[0])


def turn_text(date_text: str, turn: dict[str, Any]) -> str:
    """The memory text of one turn: "[date] speaker: text", plus " [image: caption]" if it has one."""
    content = f"[{date_text}] {turn.get('speaker', '')}: {turn.get('text', '')}"
    if turn.get("blip_caption"):
        content += f" [image: {turn['blip_caption']}]"
    return content


def turn_texts(conversation: dict[str, Any]) -> dict[str, str]:
    """dia_id -> memory text (``turn_text``) for every turn of one conversation, in session order."""
    return {str(turn.get("dia_id", "")): turn_text(date_text, turn)
            for _, date_text, turns in sessions(conversation) for turn in turns}


def normalise_evidence(raw: list[str]) -> tuple[list[str], int]:
    """Split and repair evidence ids ("D8:6; D9:17" -> two ids, "D30:05" -> "D30:5", "D:11:26" ->
    "D11:26"). Returns the candidate ids and how many raw ids needed a repair."""
    out, repaired = [], 0
    for item in raw:
        parts = [p for p in re.split(r"[;,\s]+", str(item)) if p]
        fixed = []
        for part in parts:
            m = _DIA_ID.match(part)
            fixed.append(f"D{int(m.group(1))}:{int(m.group(2))}" if m else part)
        if fixed != [item]:
            repaired += 1
        out.extend(fixed)
    return list(dict.fromkeys(out)), repaired


def load_dataset(path: Path, limit_conversations: int | None) -> Dataset:
    """Read LoCoMo and build the memories (one per turn) and the questions with resolvable evidence."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if limit_conversations:
        data = data[:limit_conversations]
    memories: list[dict[str, Any]] = []
    questions: list[Question] = []
    skipped: Counter[str] = Counter()
    dropped = repaired = unparsed = 0
    for conv_index, conv in enumerate(data):
        sample = str(conv.get("sample_id") or conv_index)
        project = f"locomo/{sample}"
        turn_ids: set[str] = set()
        for number, date_text, turns in sessions(conv["conversation"]):
            base = parse_session_date(date_text)
            if base is None:
                unparsed += 1
                base = 0.0
            for position, turn in enumerate(turns):
                dia_id = str(turn.get("dia_id", ""))
                memories.append({
                    "content": turn_text(date_text, turn),
                    "kind": "note",
                    "project": project,
                    "session_id": f"{sample}:session_{number}",
                    "created_at": base + position,
                    "source": "locomo",
                    "source_id": f"locomo:{sample}:{dia_id}",
                    "metadata": {"dia_id": dia_id, "speaker": turn.get("speaker", ""), "session": number},
                })
                turn_ids.add(dia_id)
        for qa in conv.get("qa", []):
            category = int(qa.get("category", 0))
            if category not in CATEGORIES:
                skipped["unknown category"] += 1
                continue
            raw = [str(e) for e in qa.get("evidence") or []]
            candidates, fixes = normalise_evidence(raw)
            repaired += fixes
            gold = [e for e in candidates if e in turn_ids]
            dropped += len(candidates) - len(gold)
            if not gold:
                skipped[f"{CATEGORIES[category]}: no evidence resolves to a turn"] += 1
                continue
            questions.append(Question(conv_index, project, str(qa["question"]), category, gold, raw))
    return Dataset(memories, questions, skipped, dropped, repaired, unparsed)
