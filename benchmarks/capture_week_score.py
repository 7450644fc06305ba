"""Scoring a scripted week (``capture_week_run.WeekRun``) against its script: which facts came back into the
model's context when a later session needed them, how much of what can answer is noise, what was injected into
turns that need nothing, and whether memcue itself asked the model for anything.

What counts as "in the model's context" for a turn: memcue's blocks in the turn's first model request (the one
holding the user's prompt, before any tool call): the prompt hook's block new in this turn, the session-start
block this session got, and the prompt blocks of this session's earlier turns still in the conversation (the
hook does not repeat a memory already shown in the session). Only the new prompt block counts as what a
need-nothing turn was given. A fact is back in a turn when every one of its ``expect`` strings (case-insensitive)
is in that text.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterator
from typing import Any

from capture_week_run import TurnRun, WeekRun

from memcue.core.blocks import BLOCK_CLOSE, BLOCK_OPEN, MEMORY_LINE_START, PROMPT_HEADER, SESSION_HEADER
from memcue.sidecar.capture.turn_edits import SIGNAL as EPISODE_COMMITTED

SIGNALS = ("statement", "commit", "test", "remember", "episode")
#: Row kinds that are captured text, not memories: never counted as answering rows.
CAPTURED = ("request",)
#: User agents of the harnesses' own model calls; any other caller of the model is memcue (or something else).
HARNESS_AGENTS = ("claude-cli", "claude-code", "codex")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def memcue_blocks(body: Any) -> list[tuple[str, str]]:
    """memcue's full blocks in a request body: ``("prompt" | "session", text)`` per block, in order. A block is
    its header line and what follows up to ``BLOCK_CLOSE``: ``BLOCK_OPEN``, one ``<memory …>`` line per memory,
    maybe the left-out line. The text is unescaped (a memory's text is XML-escaped in the block), so an expect
    string is found as the user wrote it."""
    found = []
    for text in _strings(body):
        for header, which in ((PROMPT_HEADER, "prompt"), (SESSION_HEADER, "session")):
            start = text.find(header)
            while start >= 0:
                lines = text[start:].split("\n")
                kept = [lines[0]]
                for line in lines[1:]:
                    if not line.startswith((BLOCK_OPEN, MEMORY_LINE_START, "[memcue:", BLOCK_CLOSE)):
                        break
                    kept.append(html.unescape(line))
                    if line.startswith(BLOCK_CLOSE):
                        break
                found.append((which, "\n".join(kept)))
                start = text.find(header, start + 1)
    return found


def memory_lines(block_text: str) -> list[str]:
    """The memory lines of block text (``memcue_blocks``' or several joined)."""
    return [line for line in block_text.splitlines() if line.startswith(MEMORY_LINE_START)]


def _first_request(turn: TurnRun) -> dict[str, Any] | None:
    """The turn's first model request: the first one offering tools whose text holds the prompt."""
    for req in turn.requests:
        body = req["body"]
        if isinstance(body, dict) and body.get("tools") and any(turn.prompt in s for s in _strings(body)):
            return req
    return None


def turn_contexts(turns: list[TurnRun]) -> list[dict[str, str]]:
    """Per turn (same order): ``{"prompt": text of the prompt blocks new in this turn, "earlier": text of the
    prompt blocks earlier turns of this session left in the conversation (the prompt hook does not repeat a
    memory already shown in the session), "session": text of the session-start blocks this session has had}``."""
    out: list[dict[str, str]] = []
    previous: Counter[tuple[str, str]] = Counter()
    session_blocks: list[str] = []
    for i, turn in enumerate(turns):
        if i == 0 or turns[i - 1].session != turn.session:
            previous, session_blocks = Counter(), []
        req = _first_request(turn)
        blocks = Counter(memcue_blocks(req["body"])) if req else Counter()
        new, kept = blocks - previous, blocks & previous
        previous = blocks
        for which, text in new.elements():
            if which == "session" and text not in session_blocks:
                session_blocks.append(text)
        out.append({"prompt": "\n".join(t for w, t in new.elements() if w == "prompt"),
                    "earlier": "\n".join(t for w, t in kept.elements() if w == "prompt"),
                    "session": "\n".join(session_blocks)})
    return out


def _has(text: str, expect: list[str]) -> bool:
    low = text.lower()
    return all(e.lower() in low for e in expect)


def _where(context: dict[str, str], expect: list[str]) -> str | None:
    """Which block brought ``expect``: "prompt" (this turn's), "session", "earlier" (a prompt block of an
    earlier turn of this session), "combined" (split over them), or None."""
    for name in ("prompt", "session", "earlier"):
        if _has(context[name], expect):
            return name
    if _has("\n".join(context.values()), expect):
        return "combined"
    return None


def _turn_index(script: dict[str, Any]) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """``(session index, session, turn)`` for every turn, in run order."""
    return [(si, s, t) for si, s in enumerate(script["sessions"]) for t in s["turns"]]


def score_facts(script: dict[str, Any], run: WeekRun) -> list[dict[str, Any]]:
    """Per fact: ``{"fact", "signal", "text", "expect", "introduced" ("S1 t0 claude-code"), "needs": [{"turn",
    "harness", "back", "via", "prompt_alone"}], "back" (in context at every later-session need), "back_any",
    "why"}``. ``prompt_alone``: the prompt hook's recall replayed for that turn brings it (``replay_prompt_hook``)."""
    index = _turn_index(script)
    contexts = turn_contexts(run.turns)
    intro: dict[str, tuple[int, str]] = {}
    for (si, s, t), tr in zip(index, run.turns, strict=True):
        for f in t.get("introduces") or []:
            intro.setdefault(f, (si, f"{s['id']} t{tr.turn} {s['harness']}"))
    out = []
    for fid, fact in script["facts"].items():
        needs = []
        for (si, s, t), tr, ctx in zip(index, run.turns, contexts, strict=True):
            if fid in (t.get("needs") or []) and si > intro.get(fid, (-1, ""))[0]:
                via = _where(ctx, fact["expect"])
                alone = any(_has(text, fact["expect"]) for text in run.prompt_alone.get(f"{s['id']} t{tr.turn}", []))
                needs.append({"turn": f"{s['id']} t{tr.turn}", "harness": s["harness"], "back": via is not None,
                              "via": via, "prompt_alone": alone})
        back = bool(needs) and all(n["back"] for n in needs)
        out.append({"fact": fid, "signal": fact["signal"], "text": fact["text"], "expect": fact["expect"],
                    "introduced": intro.get(fid, (None, "never"))[1], "needs": needs, "back": back,
                    "back_any": any(n["back"] for n in needs),
                    "why": "" if back else diagnose(fact, run, needs)})
    return out


def answering_rows(run: WeekRun) -> list[dict[str, Any]]:
    """The rows that can answer a later question: not bookkeeping, not captured prompts, not forgotten or
    replaced."""
    return [r for r in run.rows if not r.get("bookkeeping") and r.get("memory_kind") not in CAPTURED
            and not r.get("forgotten") and not r.get("superseded_by")]


#: The candidate signal each fact signal is captured through (``remember`` and ``episode`` make rows directly).
CANDIDATE_SIGNAL = {"statement": "prompt-statement", "commit": "commit-landed", "test": "test-passed"}


def own_signal(fact: dict[str, Any], run: WeekRun) -> str:
    """What the fact's own signal captured: the candidates of its signal (statement, commit, test) or the rows
    it writes itself (remember: a saved memory, not an episode; episode: an episode row, or its promotion by a
    later commit, ``EPISODE_COMMITTED``) holding every expect string; "" when it captured nothing."""
    expect, signal = fact["expect"], fact["signal"]
    if signal in CANDIDATE_SIGNAL:
        got = [f"candidate #{c['id']} {c['state']}" for c in run.candidates
               if c["signal"] == CANDIDATE_SIGNAL[signal] and _has(c["content"], expect)]
    else:
        want_episode = signal == "episode"
        got = [f"#{r['memory_id']} {r['memory_kind']}" for r in run.rows if _has(r["content"], expect)
               and (r.get("memory_kind") == "episode") == want_episode and r.get("memory_kind") not in CAPTURED
               and not (want_episode is False and any(c.get("memory_id") == r["memory_id"] for c in run.candidates))]
        got += [f"candidate #{c['id']} {c['state']} ({EPISODE_COMMITTED})" for c in run.candidates
                if want_episode and c["signal"] == EPISODE_COMMITTED and _has(c["content"], expect)]
    return ", ".join(got)


def diagnose(fact: dict[str, Any], run: WeekRun, needs: list[dict[str, Any]]) -> str:
    """Why a fact did not come back, as precisely as the store says: whether its own signal captured it (and
    the candidate's state), which rows that can answer hold it, and that they were not injected in the turns
    that needed it (with what a recall of that prompt ranks at the end of the week)."""
    expect = fact["expect"]
    if not needs:
        return "no turn in a later session needs it (script error)"
    own = own_signal(fact, run)
    said = [f"{fact['signal']} signal captured {own}" if own else f"the {fact['signal']} signal captured nothing"]
    answering = [r for r in answering_rows(run) if _has(r["content"], expect)]
    if not answering:
        rows = [f"#{r['memory_id']} {r['memory_kind']}" for r in run.rows if _has(r["content"], expect)]
        said.append(f"no row that can answer holds it{' (only ' + ', '.join(rows) + ')' if rows else ''}")
        return "; ".join(said)
    ids = ", ".join(f"#{r['memory_id']} {r['memory_kind']}" for r in answering)
    missed = [n["turn"] for n in needs if not n["back"]]
    said.append(f"rows {ids} can answer but were not injected in {', '.join(missed)}")
    recalls = [run.recalls.get(t) for t in missed if run.recalls.get(t)]
    return "; ".join(said + recalls[:1])


def noise(script: dict[str, Any], run: WeekRun) -> dict[str, Any]:
    """Of the answering rows, how many hold none of any fact's expect strings (``noise``); also how many hold
    every expect string of at least one fact (``answer_a_fact``). Each noisy row's kind and text (cut)."""
    rows = answering_rows(run)
    expects = [f["expect"] for f in script["facts"].values()]
    noisy = [r for r in rows if not any(e.lower() in r["content"].lower() for ex in expects for e in ex)]
    answering = [r for r in rows if any(_has(r["content"], ex) for ex in expects)]
    by_kind = Counter(r["memory_kind"] for r in rows)
    return {"rows": len(rows), "noise": len(noisy), "noise_fraction": round(len(noisy) / len(rows), 3) if rows
            else 0.0, "answer_a_fact": len(answering), "by_kind": dict(by_kind),
            "noisy": [f"#{r['memory_id']} {r['memory_kind']}: {r['content'][:120]}" for r in noisy],
            "all_rows": len(run.rows), "bookkeeping": sum(1 for r in run.rows if r.get("bookkeeping")),
            "captured_prompts": sum(1 for r in run.rows if r.get("memory_kind") in CAPTURED)}


def no_answer_turns(script: dict[str, Any], run: WeekRun) -> list[dict[str, Any]]:
    """Turns after the first session that need nothing: what memcue's prompt hook injected into each (the
    session block is the fact table's). ``probe`` is True for a turn that neither needs nor introduces a fact (a
    question about something never stored: whatever it gets is noise); False for a task turn."""
    out = []
    for (si, s, t), tr, ctx in zip(_turn_index(script), run.turns, turn_contexts(run.turns), strict=True):
        if si > 0 and not t.get("needs"):
            lines = memory_lines(ctx["prompt"])
            out.append({"turn": f"{s['id']} t{tr.turn}", "harness": s["harness"], "prompt": t["prompt"],
                        "probe": not t.get("introduces"), "injected": len(lines),
                        "lines": [ln[:240] for ln in lines]})
    return out


def check_script(script: dict[str, Any]) -> list[str]:
    """What a week script breaks of the format's rules (benchmarks/README.md): fewer than 20 facts or 6
    sessions, one harness only, a signal kind under its minimum, a fact never introduced or never needed in a
    later session, an unknown fact id. Empty when it keeps them all."""
    facts, sessions = script.get("facts") or {}, script.get("sessions") or []
    problems = [] if len(facts) >= 20 else [f"{len(facts)} facts (at least 20)"]
    problems += [] if len(sessions) >= 6 else [f"{len(sessions)} sessions (at least 6)"]
    if {s.get("harness") for s in sessions} != {"claude-code", "codex"}:
        problems.append("both harnesses (claude-code, codex) must have sessions")
    minimum = {"statement": 5, "commit": 4, "test": 3, "remember": 3, "episode": 3}
    counts = Counter(f.get("signal") for f in facts.values())
    problems += [f"{counts[k]} {k} facts (at least {n})" for k, n in minimum.items() if counts[k] < n]
    intro: dict[str, int] = {}
    needed: dict[str, list[int]] = {}
    for si, s, t in _turn_index(script):
        for f in [*(t.get("introduces") or []), *(t.get("needs") or [])]:
            if f not in facts:
                problems.append(f"{s.get('id')}: unknown fact {f}")
        for f in t.get("introduces") or []:
            intro.setdefault(f, si)
        for f in t.get("needs") or []:
            needed.setdefault(f, []).append(si)
    for f in facts:
        if f not in intro:
            problems.append(f"{f} is never introduced")
        elif not any(si > intro[f] for si in needed.get(f, [])):
            problems.append(f"{f} is not needed by a later session")
    return problems


def model_calls(run: WeekRun) -> dict[str, Any]:
    """Who called the model: requests in the harnesses' turns, other requests by a harness (title, probes), and
    requests from anything else (memcue's distillation would be one), with their estimated input tokens
    (characters / 4)."""
    turn_reqs = [q for t in run.turns for q in t.requests]
    others = [q for q in run.other_requests
              if not any(a in q["user_agent"].lower() for a in HARNESS_AGENTS)]
    return {"turn_requests": len(turn_reqs), "harness_other_requests": len(run.other_requests) - len(others),
            "non_harness_requests": len(others),
            "non_harness_tokens_est": sum(len(str(q["body"])) // 4 for q in others),
            "user_agents": sorted({q["user_agent"].split(" ")[0] for q in [*turn_reqs, *run.other_requests]}),
            "ledger": run.ledger}


def tool_records(script: dict[str, Any], run: WeekRun) -> dict[str, dict[str, int]]:
    """Per harness: the shell calls the script made (``scripted``), those the harness refused to run
    (``refused``: no hook runs for them) and the PostToolUse records its hooks spooled (``spooled``): a record
    missing from a call that ran is a tool call the test-run signal never saw."""
    out: dict[str, dict[str, int]] = {}
    for s in script["sessions"]:
        h = s["harness"]
        row = out.setdefault(h, {"scripted": 0, "refused": run.refused.get(h, 0),
                                 "spooled": run.tool_records.get(h, 0)})
        row["scripted"] += sum(1 for t in s["turns"] for a in t.get("actions") or [] if a.get("tool") == "shell")
    return out


def summarise(script: dict[str, Any], run: WeekRun) -> dict[str, Any]:
    """The whole score of one week: facts (per fact and per signal), the overall fraction, noise, no-answer
    turns, model calls, wall time and the runs' problems."""
    facts = score_facts(script, run)
    per_signal = {}
    for sig in SIGNALS:
        mine = [f for f in facts if f["signal"] == sig]
        per_signal[sig] = {"facts": len(mine), "back": sum(f["back"] for f in mine),
                           "fraction": round(sum(f["back"] for f in mine) / len(mine), 3) if mine else None}
    needs = [n for f in facts for n in f["needs"]]
    via = Counter(n["via"] for n in needs if n["back"])
    return {"script": script.get("name"), "script_problems": check_script(script), "via": dict(via),
            "sessions": len(script["sessions"]), "turns": len(run.turns),
            "facts": facts, "per_signal": per_signal,
            "overall": {"facts": len(facts), "back": sum(f["back"] for f in facts),
                        "fraction": round(sum(f["back"] for f in facts) / len(facts), 3) if facts else None,
                        "needs": len(needs), "needs_back": sum(n["back"] for n in needs),
                        "needs_prompt_alone": sum(n["prompt_alone"] for n in needs)},
            "noise": noise(script, run), "no_answer_turns": no_answer_turns(script, run),
            "tool_records": tool_records(script, run),
            "model_calls": model_calls(run), "problems": run.problems, "installs": run.installs,
            "turn_seconds": [t.seconds for t in run.turns], "wall_s": run.seconds}
