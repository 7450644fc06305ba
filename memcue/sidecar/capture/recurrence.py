"""Recurrence: a pending candidate is confirmed because it came back in another session of the same project
(DESIGN.md section 7; issue 14 part 3: "... or it recurred in 2+ sessions").

Which candidates may recur (the rule): pending candidates of ``RECURRING_SIGNALS``, the signals whose candidates
wait for a confirmation (the model distiller's ``distill``), and never one held for review: a candidate whose
evidence gives a ``held`` reason (injection-like text, a role marker; ``capture.statements``), or whose text reads
like instructions to a model (``store.instruction_like``, checked here too whatever the signal said), waits for a
person, however often it comes back. The other signals confirm their candidates at once (the user said it, the commit
landed, the test passed), so their only pending candidates are held ones.

When: the worker's capture step calls ``run``, which examines each new eligible candidate once, in id order (the
last id examined is kept in meta ``MARK_KEY``, so a restart resumes where it stopped). Examining candidate C of
session S (a candidate without a session is never compared: it cannot show a second session):

1. C's embedding (the default model; a unit vector) is stored with it (``Store.set_candidate_vectors``), so
   later candidates are compared with it without embedding it again.
2. A stored memory of C's project and kind that C near-duplicates (``dedup.find_near_duplicate``, the rule of
   ``/remember``) and that was stored in another session (or outside any: the CLI, an import): the fact came
   back, so C is promoted with reason ``RECURRED``. One the agent saved (``saved_by_agent``: its MCP
   ``remember``), in C's own session too, confirms C with reason ``AGENT_SAVED`` (issue 14 part 3: "the agent
   saved it"). The gate writes through the remember path, which reinforces that memory (``seen_count`` + 1)
   instead of adding a row; C's row names the memory.
3. Otherwise the eligible pending candidates of C's project and kind from other sessions with the same text (the
   digest) or a near-duplicate of it (``dedup.near_duplicates``: the same cosine and specifics rule) recurred
   with C: the oldest of them is promoted with reason ``RECURRED`` (its text becomes the memory) and the others,
   C included, are marked promoted into the same memory. The memory's metadata lists the ``sessions`` it
   recurred in (oldest first) and the ``candidate_ids``.

Without the embedding model (a keyword-only sidecar, a model that failed to load) only the same text counts;
while the model warms up ``run`` waits (examines nothing), so a near-duplicate is not missed for want of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memcue.sidecar.capture.gate import AGENT_SAVED, CandidateDecided, Gate
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import NewMemory, StoreProtocol, instruction_like

log = logging.getLogger("memcue.capture")

#: Signals whose pending candidates a recurrence may promote (see the module docstring).
RECURRING_SIGNALS: tuple[str, ...] = ("distill",)
#: The reason recorded on a candidate promoted because it recurred in another session.
RECURRED = "recurred"
#: Meta key of the id of the last candidate examined.
MARK_KEY = "recurrence:after"
#: Candidates read per query of ``run``.
SCAN_BATCH = 50
#: Most pending candidates one candidate is compared with (the newest of its project and kind); and most of
#: them without a vector of the current model embedded for one comparison.
MAX_PEERS = 2000
MAX_PEER_EMBEDS = 64

#: ``near_memory(memory)``: the stored memory ``memory`` near-duplicates and ``memory``'s vector, each None when
#: there is none (``dedup.find_near_duplicate``).
NearMemory = Callable[[NewMemory], tuple[int | None, np.ndarray | None]]
#: ``near_texts(text, unit vector, [(text, unit vector)])``: positions (and cosines) of the near-duplicates
#: (``dedup.near_duplicates``).
NearTexts = Callable[[str, np.ndarray, Sequence[tuple[str, np.ndarray]]], list[tuple[int, float]]]


class Recurrence:
    """The recurrence rule over ``store`` and ``gate``. ``embedder`` (None: keyword-only, only the same text
    counts) embeds candidates; ``near_memory`` and ``near_texts`` are the near-duplicate rule of ``sidecar.dedup``
    (passed in: capture does not import the sidecar's root modules), and so is ``saved_by_agent`` (a memory's
    ``source`` -> whether an agent wrote it, ``agent_writes.is_agent``); ``step_aside`` is called once before a
    run that has work (to let running questions finish first)."""

    def __init__(self, store: StoreProtocol, gate: Gate, embedder: Embedder | None, *, near_memory: NearMemory,
                 near_texts: NearTexts, step_aside: Callable[[], None] = lambda: None,
                 saved_by_agent: Callable[[str], bool] = lambda source: False) -> None:
        self._store = store
        self._gate = gate
        self._embedder = embedder
        self._near_memory = near_memory
        self._near_texts = near_texts
        self._step_aside = step_aside
        self._saved_by_agent = saved_by_agent
        self._after: int | None = None
        self._peer_embeds = 0

    def run(self) -> int:
        """Examine every eligible candidate added since the last run (see the module docstring); returns how many
        candidates were promoted. A failure on one candidate is logged and does not stop the others."""
        if self._embedder is not None and self._embedder.state == "warming":
            return 0
        if self._after is None:
            self._after = int(self._store.get_meta(MARK_KEY) or 0)
        promoted, stepped = 0, False
        self._peer_embeds = 0
        while batch := self._store.pending_candidates_after(self._after, RECURRING_SIGNALS, SCAN_BATCH):
            if not stepped:
                self._step_aside()
                stepped = True
            for cand in batch:
                try:
                    promoted += self.examine(cand)
                except Exception:  # noqa: BLE001 - one bad candidate must not stop the rule
                    log.exception("checking candidate %d for recurrence failed", cand["id"])
                self._after = int(cand["id"])
            self._store.set_meta(MARK_KEY, str(self._after))
        return promoted

    def examine(self, cand: dict[str, Any]) -> int:
        """Check one pending candidate (a row of ``Store.pending_candidates_after``) against stored memories and
        pending candidates of other sessions, promoting what recurred; returns the candidates promoted."""
        if not cand["session_id"] or instruction_like(cand["content"]):
            return 0
        memory_id, vector = None, None
        if self._model_ready():
            memory_id, vector = self._near_memory(NewMemory(content=cand["content"], kind=cand["kind"],
                                                            project=cand["project"]))
            if vector is None:
                vector = self._embed([cand["content"]])[0]
            self._store.set_candidate_vectors([(cand["id"], _blob(vector))], self._model_id())
        if memory_id is not None:
            row = self._store.fetch([memory_id]).get(memory_id)
            elsewhere = row is not None and row["session_id"] != cand["session_id"]
            if row is not None and (elsewhere or self._saved_by_agent(str(row.get("source") or ""))):
                return self._promote([cand], {"sessions": _distinct([row["session_id"], cand["session_id"]]),
                                              "recurred_with_memory": memory_id},
                                     reason=RECURRED if elsewhere else AGENT_SAVED)
        peers = [p for p in self._store.candidate_peers(cand["project"], cand["kind"], other_than=cand["session_id"],
                                                        signals=RECURRING_SIGNALS, digest=cand["content_sha1"],
                                                        limit=MAX_PEERS)
                 if p["id"] != cand["id"] and not instruction_like(p["content"])]
        same = [p for p in peers if p["content_sha1"] == cand["content_sha1"]]
        if vector is not None:
            pairs = [(p, v) for p in peers if p["content_sha1"] != cand["content_sha1"]
                     and (v := self._peer_vector(p, cand["id"])) is not None]
            hits = self._near_texts(cand["content"], vector, [(p["content"], v) for p, v in pairs])
            same += [pairs[i][0] for i, _ in hits]
        if not same:
            return 0
        group = sorted([cand, *same], key=lambda c: c["id"])
        return self._promote(group, {"sessions": _distinct([c["session_id"] for c in group]),
                                     "candidate_ids": [c["id"] for c in group]})

    def _peer_vector(self, peer: dict[str, Any], examined: int) -> np.ndarray | None:
        """``peer``'s stored vector of the current model. One without it is embedded (and stored) when it was
        examined before (an id below ``examined``: while no model was ready), at most ``MAX_PEER_EMBEDS`` per run;
        a later one is compared when its own turn comes."""
        if peer["vector"] is not None and peer["vector_model"] == self._model_id():
            return np.frombuffer(peer["vector"], dtype=np.float32)
        if peer["id"] > examined or self._peer_embeds >= MAX_PEER_EMBEDS:
            return None
        self._peer_embeds += 1
        vector = self._embed([peer["content"]])[0]
        self._store.set_candidate_vectors([(peer["id"], _blob(vector))], self._model_id())
        return vector

    def _promote(self, group: list[dict[str, Any]], metadata: dict[str, Any], reason: str = RECURRED) -> int:
        """Promote ``group[0]`` with ``reason`` and ``metadata``, then mark the rest promoted into the same memory;
        returns the candidates promoted (0 when the first was decided meanwhile, by a reviewer)."""
        try:
            first = self._gate.promote(group[0]["id"], reason, metadata=metadata)
        except CandidateDecided:
            return 0
        count = 1
        for other in group[1:]:
            count += self._store.decide_candidate(other["id"], "promoted", reason=reason,
                                                  memory_id=first["memory_id"])
        log.info("candidates %s promoted (%s; sessions %s): memory %s", [c["id"] for c in group], reason,
                 metadata["sessions"], first["memory_id"])
        return count

    def _model_ready(self) -> bool:
        return self._embedder is not None and self._embedder.state == "ready"

    def _model_id(self) -> str:
        return self._embedder.model_id if self._embedder is not None else ""

    def _embed(self, texts: list[str]) -> list[np.ndarray]:
        """Unit vectors of ``texts`` (called only when ``_model_ready``)."""
        if self._embedder is None:
            raise RuntimeError("no embedding model")
        return [v / (np.linalg.norm(v) or 1.0) for v in self._embedder.embed(texts)]


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _distinct(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
