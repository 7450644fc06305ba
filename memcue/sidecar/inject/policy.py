"""Which recalled memories a prompt hook injects (the automatic path, where nobody reviews the list).

A person asking a question sees every supported and weak result, labelled. A hook puts memories in front
of the model unasked, so it is stricter: only an answer whose tier is ``supported``, only results labelled
``supported`` (never ``weak``), and only those close to the best one: a result whose cosine similarity is
more than ``INJECT_COSINE_GAP`` below the best injected result's is left out (it answers something nearby,
not this prompt). The gap applies to results supported by closeness, and to a task prompt's (``support``
"task"): one supported because it carries a question's rare words (``support`` "words") stays, and so does, for
a prompt that asks what was done (``work_recall``: "flag the stuff that bit us before"), the past work it asks
for (an episode, or one a commit confirmed: ``recall.classify.ASKED_KIND_SOURCES``): the answer is a list of
earlier fixes, not the one closest to the prompt's words. Results without a cosine (keyword-only answers) are
kept. When the prompt asks what the user requested earlier and
captured prompts answer it, only those are injected. The agent's captured answers (``episode``) are injected
only for a prompt that asks what was done (``work_recall``), after the saved memories; for every other prompt
(a task, an ordinary question) they are left out.
"""

from __future__ import annotations

from typing import Any

from memcue.sidecar.recall.classify import WORK_RECALL, of_kind

#: Largest cosine gap (similarity units) between the best injected memory and any other. 0.08: on the
#: coding-memory set, injected precision was 0.80 at a gap of 0.10, 0.82 at 0.08 and 0.81 at 0.06 (where
#: relevant second memories start to drop out); benchmarks/results/coding_recall.md.
INJECT_COSINE_GAP = 0.08


def injectable(answer: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """The results of a recall ``answer`` a prompt hook injects, best first, at most ``limit``."""
    if answer.get("tier") != "supported":
        return []
    chosen = [r for r in answer["results"] if r.get("tier") == "supported"]
    work = answer.get("query_type") == WORK_RECALL
    if not work:
        chosen = [r for r in chosen if r.get("memory_kind") != "episode"]
    if answer.get("query_type") == "request_recall" and any(r.get("memory_kind") == "request" for r in chosen):
        chosen = [r for r in chosen if r.get("memory_kind") == "request"]
    cosines = [r["channel_scores"].get("semantic") for r in chosen]
    known = [c for c in cosines if c is not None]
    if known:
        best = max(known)
        chosen = [r for r, c in zip(chosen, cosines, strict=True)
                  if c is None or c >= best - INJECT_COSINE_GAP or r.get("support") == "words"
                  or work and of_kind(str(r.get("memory_kind") or ""), str(r.get("source") or ""), "episode")]
    return chosen[:limit]
