"""Support tiers: is a memory real support for the question, or only related to it?

Each memory is judged on its own, from its ``Support`` features:

- closeness beyond its own baseline: ``cosine - baseline`` (``recall.baseline``), so memories that sit
  close to every question (ids, hashes, code) get no free pass;
- the share of the query's words it carries, and whether it carries the query's rare words (the key terms:
  rarest known words, by document frequency in the FTS5 index of the scope);
- the cross-encoder score, when a reranker is loaded;
- a named entity in common with the query;
- whether the query looks like gibberish (most of its words are in no memory), or names something
  (a person, a file, an identifier) that no memory in scope names at all;
- time: when the question names a time ("last week"), a memory written then and on topic (the temporal
  channel's evidence) is support, and one written at another time is at most weak;
- session context: the memory sits right next to one of the best matches in the same session (the reply
  to a matched question, say): shown as weak context, never injected;
- the owner check: a memory attributed to one speaker ("Name: …") does not support a question about another
  person it does not mention; it is at most weak;
- how far it stands out for this query: its cosine minus the best cosine of any other candidate (positive only
  for the closest memory). A memory that stands out well above the rest of the store is what the prompt is
  about, even in other words (a paraphrase), where absolute cosine floors alone call it weak;
- for a task prompt (an instruction, not a question): whether the memory is of a kind a task can run into
  (``store.CONSTRAINING_KINDS``: a decision, preference, convention, bug…) or of the captured kind the prompt
  asks for (an episode, when the task also asks what was done: "…commit. and remind me why we needed retries",
  ``work_recall``), or of any kind when it is strongly close (``STRONG_COSINE``) and carries one of the task's
  key terms: the earlier work the task repeats ("make write_export safe the same way we did for save"). "Store
  the price as a float column" shares few words with "money is integer cents, never floats", yet it is the
  memory to show. A task's
  key terms are only words some memory carries: the new work it names ("a separate entrypoint") is in no memory;
  and its support, words included, is "task", so the prompt hook's cosine gap applies to it. Without the query's
  embedding (keyword-only recall: cold start, the hook's keyword race) nothing but words vouches for a memory,
  so a task is held to all its words;
- identifiers (``query.identifiers``): when the query names a ticket id, env var, flag, dotted name, path or
  version that some candidate carries whole, the memories carrying it are support and every other memory is
  at most weak: ``PAY-21`` is not evidence for ``PAY-219``, nor a note on ``2.4.1`` for ``2.4.0``. When no
  memory carries it, one carrying a sibling (``query.siblings``: ``PAY-2190``) is at most weak too. The number
  pieces of an identifier (``query.number_pieces``: "3" of ``2.1.3``) are not words of the topic: "bump to
  2.1.3" is not about a note on "step:3".

Queries with no question word ("pinned httpx") are held to carrying their words. A memory is
``supported``, ``weak`` (shown, labelled) or ``related``. ``judge_all`` is the stage: it judges the
candidates in rank order into result items.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcue.sidecar.capture.commits import FILES_LABEL, TESTS_LABEL
from memcue.sidecar.recall.baseline import DEFAULT_BASELINE
from memcue.sidecar.recall.channels import SEMANTIC
from memcue.sidecar.recall.classify import EXACT_TERM, WORK_RECALL, names_an_identifier_briefly
from memcue.sidecar.recall.contract import result_item
from memcue.sidecar.recall.floor import COSINE_FLOOR, SUPPORT_COSINE
from memcue.sidecar.recall.query import asking_words, cue_terms, is_question, key_terms, number_pieces
from memcue.sidecar.store import CONSTRAINING_KINDS

if TYPE_CHECKING:
    from memcue.sidecar.recall.boosts import Boosted
    from memcue.sidecar.recall.candidates import Candidates
    from memcue.sidecar.recall.classify import QueryClass
    from memcue.sidecar.recall.rerank import Reranked

SUPPORTED, WEAK, RELATED = "supported", "weak", "related"
#: The labels that open a captured commit's trailer lines (``capture.commits``).
_TRAILER_LABELS = re.compile(r"^(?:" + re.escape(TESTS_LABEL) + r"|" + re.escape(FILES_LABEL) + r")", re.MULTILINE)
#: Share of the query's key terms that counts as carrying its words.
MIN_KEY_COVERAGE = 0.5
#: How far below the cosine floor a memory carrying the query's words may be and still count.
WORDED_COSINE_SLACK = 0.15
#: Cosine above the memory's own baseline needed for closeness to count as support. 0.25: gold evidence on
#: LoCoMo sits at median cosine 0.46 against a median baseline near 0.13 (benchmarks/results).
SUPPORT_MARGIN = 0.25
#: Cosine at which closeness alone supports a memory, whatever words it carries: the 75th percentile of
#: question/gold-evidence pairs on LoCoMo (0.547), rounded to 0.05. Between ``SUPPORT_COSINE`` and this, a
#: memory must also carry half the query's key terms (or a named entity of it); otherwise it is weak.
STRONG_COSINE = 0.55
#: Cosine at which a memory supports a question even though the question names something (a person, a
#: file, a product) that no memory in scope carries: above the p99.9 of unrelated question/turn pairs on
#: LoCoMo (0.46, benchmarks/results/calibrate_floor.json), so another conversation's turns stay out, while a
#: name written differently ("Swiss" vs "CHF") does not sink a close memory.
UNKNOWN_NAME_COSINE = 0.50
#: Share of the query's key terms that, carried with any closeness, is support on its own ("carries every
#: rare word": with the usual four key terms, three of them). Needs at least ``ALL_KEYS_MIN`` key terms: with
#: one or two, carrying them all is too easy.
ALL_KEYS_COVERAGE = 0.75
ALL_KEYS_MIN = 3
#: How far (cosine) the closest memory must stand out above the next one to be support by standing out.
STANDOUT_GAP = 0.10
#: Cosine a task's constraining memory needs when it stands out and shares a word with the prompt (BM25 found
#: it). A question's closest memory that stands out needs the closeness of support (``SUPPORT_COSINE``) without
#: carrying the question's words: a paraphrase.
TASK_COSINE = 0.30
#: Cross-encoder score (logit) above which the reranker alone supports a memory (ms-marco models: > 0
#: means more likely relevant than not).
RERANK_SUPPORT = 0.0

_OWNER = re.compile(r"^\s*(?:\[[^\]]{0,80}\]\s*)?([A-Z][\w'.-]{1,30}(?:\s[A-Z][\w'.-]{1,30})?):\s")


def owner_of(content: str, metadata: dict | None = None) -> str:
    """The speaker a memory is attributed to, lowercase: ``metadata["speaker"]`` when set, else a leading
    "Name:" ("[date] Caroline: …" -> "caroline"), else ""."""
    speaker = (metadata or {}).get("speaker")
    if isinstance(speaker, str) and speaker.strip():
        return speaker.strip().lower()
    m = _OWNER.match(content)
    return m.group(1).lower() if m else ""


@dataclass
class Support:
    """Features of one memory for one query (see module docstring). ``query_people``: person names the query
    asks about that are known in scope (lowercase); ``content``: the memory text (for the owner check);
    ``identifier_query``: some candidate carries one of the query's identifiers whole; ``identified``: this
    memory does; ``sibling``: it carries an identifier of the same family instead (``query.siblings``);
    ``asked_kind``: it is of the captured kind the question asks for (a prompt for "what did I ask…");
    ``exact_term``: the query is a short one naming an identifier (``exact_term``, or ``work_recall`` of that
    shape: "TRL-421 — remind me what broke", ``classify.names_an_identifier_briefly``);
    ``standout``: its cosine minus the best other candidate's (None without a cosine); ``constraining``: its
    kind is one a task can run into (``store.CONSTRAINING_KINDS``); ``worded_match``: BM25 found it."""

    cosine: float | None
    baseline: float | None = None
    cue_terms: list[str] = field(default_factory=list)
    key_terms: list[str] = field(default_factory=list)
    rerank: float | None = None
    shared_entity: bool = False
    gibberish: bool = False
    unknown_names: list[str] = field(default_factory=list)
    question: bool = True
    query_people: list[str] = field(default_factory=list)
    content: str = ""
    owner: str = ""
    session_context: bool = False
    in_window: bool | None = None
    temporal: bool = False
    identifier_query: bool = False
    identified: bool = False
    sibling: bool = False
    asked_kind: bool = False
    exact_term: bool = False
    standout: float | None = None
    constraining: bool = False
    worded_match: bool = False

    @property
    def key_coverage(self) -> float:
        """Share of the query's key terms the memory carries (0..1)."""
        if not self.key_terms:
            return 0.0
        return sum(1 for t in self.key_terms if t in self.cue_terms) / len(self.key_terms)

    @property
    def margin(self) -> float | None:
        """Cosine above the memory's own baseline (None without a cosine)."""
        if self.cosine is None:
            return None
        return self.cosine - (DEFAULT_BASELINE if self.baseline is None else self.baseline)

    @property
    def owner_mismatch(self) -> bool:
        """The memory is someone else's words about something else: attributed to a speaker who is not one of
        the people the query asks about, and naming none of them."""
        if not self.query_people:
            return False
        owner = self.owner or owner_of(self.content)
        if not owner or owner in self.query_people:
            return False
        low = self.content.lower()
        return not any(p in low for p in self.query_people)


def judge(s: Support) -> tuple[str, str]:
    """``(label, reason)`` for one memory: label ``supported``, ``weak`` or ``related``; reason says what
    carried a supported/weak label: "identifier" (it carries the query's identifier whole), "close" (meaning),
    "words" (it carries the question's rare words), "task" (a task prompt's: it carries the task's words, is a
    rule the task runs into, is of the kind the task asks about or is the work it repeats), "time" (in the
    question's time window, on topic), "reranker", "context" (session neighbour), "owner" (someone else's
    words), or "" for related."""
    asked = s.question or s.exact_term  # the identifier is what the prompt asks about (not a task naming it)
    if s.identified and asked and s.in_window is not False:
        return SUPPORTED, "identifier"
    label, reason = _judge_meaning(s)
    if (s.identifier_query and asked or s.sibling) and label == SUPPORTED:
        return WEAK, reason  # another memory carries the identifier asked about, or this one names its sibling
    return label, reason


def _judge_meaning(s: Support) -> tuple[str, str]:
    """``judge`` by closeness, words, time, owner and session context (identifiers aside)."""
    if s.unknown_names and s.question and (s.cosine is None or s.cosine < UNKNOWN_NAME_COSINE):
        return RELATED, ""  # a question about something no memory names (a task may well name a new thing)
    margin = s.margin
    above_baseline = margin is not None and margin >= SUPPORT_MARGIN
    close = s.cosine is not None and s.cosine >= SUPPORT_COSINE and above_baseline
    strong = close and s.cosine is not None and s.cosine >= STRONG_COSINE
    worded = s.key_coverage >= MIN_KEY_COVERAGE
    near = s.cosine is None or s.cosine >= COSINE_FLOOR - WORDED_COSINE_SLACK
    if s.temporal and s.question and (worded or close or s.asked_kind or not s.key_terms):
        return SUPPORTED, "time"  # written in the question's time window, on its topic (or what it asks for)
    if s.gibberish:
        return RELATED, ""
    if s.rerank is not None:
        return (SUPPORTED, "reranker") if s.rerank > RERANK_SUPPORT else (RELATED, "")
    stands_out = s.standout is not None and s.standout >= STANDOUT_GAP
    if not s.question:  # a task or a bare statement: its words, or a constraining memory it touches
        if worded and near:
            return SUPPORTED, "task"
        touches = close or (s.worded_match and s.cosine is not None and s.cosine >= TASK_COSINE
                            and (stands_out or s.identified))
        if ((s.constraining or s.asked_kind) and touches) or repeats_work(s, strong):
            return SUPPORTED, "task"  # a rule it runs into, what it asks about, or what it repeats
        return (WEAK, "close") if close else (RELATED, "")
    if s.in_window is False:  # the question names a time and this memory is from another: context at most
        return (WEAK, "close") if close or worded else (RELATED, "")
    if s.owner_mismatch:  # someone else's words: shown to a person (labelled), never injected
        return (WEAK, "owner") if close or worded or s.shared_entity else (RELATED, "")
    if strong or (close and (worded or s.shared_entity)):
        return SUPPORTED, "close"
    if s.asked_kind and worded and near:  # "what did I ask about the importer?": a prompt naming the importer
        return SUPPORTED, "words"
    if stands_out and close:
        return SUPPORTED, "standout"
    if near and len(s.key_terms) >= ALL_KEYS_MIN and s.key_coverage >= ALL_KEYS_COVERAGE:
        return SUPPORTED, "words"
    if close:
        return WEAK, "close"
    if (worded or s.shared_entity) and near:
        return WEAK, "words"
    if s.session_context:  # next to a top match in the same session (often its reply): context, labelled
        return WEAK, "context"
    return RELATED, ""


def repeats_work(s: Support, strong: bool) -> bool:
    """A task prompt repeats the earlier work this memory records: the memory is strongly close (``strong``:
    ``STRONG_COSINE`` and above its baseline) and carries one of the task's key terms, whatever its kind."""
    return strong and bool(set(s.key_terms) & set(s.cue_terms))


@dataclass
class Judged:
    """The support stage's result: ``items`` (result items of the contract, in rank order, each with its
    ``tier`` label and ``support`` reason) and the query's ``keys`` (key terms)."""

    items: list[dict[str, Any]]
    keys: list[str]


def judge_all(query: str, limit: int, gate: bool, found: Candidates, boosted: Boosted, reranked: Reranked,
              now: float, *, qc: QueryClass, lazy: bool) -> Judged:
    """Judge ``reranked.survivors`` in rank order (``gate`` False labels all supported, reason "gate_off").
    The words that frame the question type ("ask", "told": ``QueryClass.frame_words``) are not key terms.
    With ``lazy``, stop once ``limit`` answers (supported or weak, of the kinds ``qc`` asks for:
    ``QueryClass.answers_with``) are found: what comes after could not be shown. ``now``: asking
    time (Unix s) for the results' age labels."""
    pieces = number_pieces(query)  # "3" of "2.1.3" is not a word of the topic: the identifier is matched whole
    topic = tuple(t for t in found.terms if t not in qc.frame_words and t not in pieces)  # nor "ask", "did"
    standout = _standouts(found)
    question = is_question(query)
    # a short prompt naming an identifier asks about it, also when it asks what was done ("TRL-421 — remind me
    # what broke"): the work_recall check comes before the exact_term one
    brief = qc.query_type == EXACT_TERM or (qc.query_type == WORK_RECALL and names_an_identifier_briefly(query))
    # a task's words no memory carries are new work, not missing evidence, when cosines can vouch for the rest;
    # keyword-only recall (cold start, the keyword race) has nothing else to go on: it holds a task to all its words
    known_only = not question and found.vector is not None
    keys, gibberish = (key_terms(found.doc_freq, topic, asking_words(query), known_only=known_only)
                       if reranked.survivors else ([], False))
    answers = 0
    items: list[dict[str, Any]] = []
    for mid, score in reranked.survivors:
        if lazy and answers >= limit:
            break
        row, ev = found.rows[mid], found.evidence[mid]
        cues = cue_terms(found.terms, worded_text(row))
        support = Support(cosine=ev.cosine, baseline=row.get("baseline"), cue_terms=cues, key_terms=keys,
                          rerank=reranked.scores.get(mid), shared_entity=bool(boosted.shared.get(mid)),
                          gibberish=gibberish, unknown_names=boosted.unknown, question=question,
                          query_people=boosted.people, content=row["content"], owner=boosted.owners.get(mid, ""),
                          session_context=mid in boosted.session_boost, temporal=ev.temporal,
                          in_window=boosted.in_window(row["created_at"]), identifier_query=bool(boosted.identified),
                          identified=mid in boosted.identified, sibling=mid in boosted.siblings,
                          asked_kind=qc.is_asked(row), exact_term=brief,
                          standout=standout(mid, ev.cosine),
                          constraining=row["kind"] in CONSTRAINING_KINDS, worded_match=ev.bm25 > 0)
        label, reason = judge(support) if gate else (SUPPORTED, "gate_off")
        item = result_item(row, score, label, now, _channel_scores(found, reranked, mid, ev.cosine), cues)
        item["support"] = reason
        if mid in boosted.added:
            item["boost"] = round(boosted.added[mid], 5)
        if boosted.unknown:
            item["unknown_names"] = boosted.unknown
        items.append(item)
        if label in (SUPPORTED, WEAK) and qc.answers_with(row["kind"]):
            answers += 1
    return Judged(items, keys)


def _standouts(found: Candidates) -> Callable[[int, float | None], float | None]:
    """``standout(memory_id, cosine)``: the cosine minus the best cosine of any other candidate (None without a
    cosine). Candidates are those the request's filters keep (``found.evidence``: the semantic channel's nearest
    and every other one with a cosine); a memory the filters drop (outside the asked time window, written after
    ``as_of``, of another kind or tags) is not what the answer stands out from."""
    cosines = {mid: ev.cosine for mid, ev in found.evidence.items() if ev.cosine is not None}
    top = sorted(cosines.items(), key=lambda item: -item[1])[:2]

    def standout(mid: int, cosine: float | None) -> float | None:
        if cosine is None:
            return None
        others = [c for m, c in top if m != mid]
        return cosine - others[0] if others else None

    return standout


def worded_text(row: dict[str, Any]) -> str:
    """The text whose words a memory ``row`` (a ``Store.fetch`` row) carries: its content without the labels of
    a captured commit's trailer lines (``Files:``, ``Tests added:``: memcue's words, so "a file handle" in a prompt
    is not carried by every commit), and for an ``episode`` the text embedded for it (``metadata["embed_text"]``),
    which opens with the prompt that opened its turn (``capture.episodes``). "computing windows takes ~8 s on the
    Pi. where is the time going?" names what the answer "Almost all the time is file I/O: windows() calls
    load_station ..." is about, and a later prompt pointing back at it names it the same way ("the tide windows are
    slow on the Pi again"). Matching a chunk's words with its context prepended is contextual BM25 (Anthropic,
    "Introducing Contextual Retrieval", 2024). Only an episode: it answers only prompts that point back at the
    work, while a memory promoted from one (a ``change``) is shown to any task, which the old prompt's words alone
    would then make it support for."""
    content = _TRAILER_LABELS.sub("", row["content"])
    metadata = row.get("metadata")
    extra = metadata.get("embed_text") if isinstance(metadata, dict) and row.get("kind") == "episode" else None
    return f"{content}\n{extra}" if isinstance(extra, str) and extra else content


def _channel_scores(found: Candidates, reranked: Reranked, mid: int, cosine: float | None) -> dict[str, float]:
    """A result's ``channel_scores``: each channel's score for it, its cosine as ``semantic`` when that
    channel did not find it, and the cross-encoder's as ``rerank``."""
    out = {name: round(s[mid], 4) for name, s in found.scores.items() if mid in s}
    if cosine is not None:
        out.setdefault(SEMANTIC, round(cosine, 4))
    if mid in reranked.scores:
        out["rerank"] = round(reranked.scores[mid], 4)
    return out
