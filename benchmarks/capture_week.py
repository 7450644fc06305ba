"""The scripted week (issue 14, "Measured"): do the facts a user states, commits, fixes and asks the agent to save
in one session come back into the model's context when a later session, often in the other harness, needs
them, through the real Claude Code and Codex binaries with memcue's default install and no model of memcue's?

Run: ``.venv/bin/python benchmarks/capture_week.py [--split dev|test|test2|…|all]`` (``make bench-week``;
needs ``make harnesses``; about a minute per split). Scripts: ``benchmarks/data/week/<split>.json`` (format in
benchmarks/README.md); ``all`` runs every split present, each in its own fresh week. Writes
``benchmarks/results/capture_week.{json,md}``.

How: ``capture_week_run.run_week`` (a temporary repository, HOME and MEMCUE_HOME; a loopback model playing the
script's tool calls and answers); ``capture_week_score.summarise`` (which facts came back where, noise, what the
no-answer turns got, who called the model). The PostToolUse hook's added latency is not re-measured here: it is
``benchmarks/results/tool_hook_latency.json``'s number, cited.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, git_commit, git_dirty, say, write_results  # noqa: E402
from capture_week_run import run_week  # noqa: E402
from capture_week_score import SIGNALS, summarise  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "week"
#: The week scripts present: ``dev`` first, then the held-out ones (a new split needs no code change).
SPLITS = tuple(sorted((p.stem for p in DATA.glob("*.json")), key=lambda name: (name != "dev", len(name), name)))
TARGET_BACK, TARGET_NOISE = 0.90, 0.10
LATENCY_FILE = RESULTS_DIR / "tool_hook_latency.json"


def load_script(split: str) -> dict[str, Any] | None:
    """``benchmarks/data/week/<split>.json``, None when that split is not written yet."""
    path = DATA / f"{split}.json"
    return json.loads(path.read_text()) if path.exists() else None


def run_split(script: dict[str, Any], keep: bool) -> dict[str, Any]:
    """Run one week script in a fresh temporary folder and score it (``summarise``'s dict)."""
    root = Path(tempfile.mkdtemp(prefix="memcue-week-"))
    say(f"week {script.get('name')!r} in {root}")
    result = summarise(script, run_week(script, root, say=say))
    if not keep:
        import shutil
        shutil.rmtree(root, ignore_errors=True)
    return result


def post_tool_latency() -> dict[str, Any] | None:
    """The PostToolUse hook's added p50 (ms) from ``tool_hook_latency.json``, cited (None when absent)."""
    try:
        data = json.loads(LATENCY_FILE.read_text())
    except (OSError, ValueError):
        return None
    rows = [r for r in data.get("rows", data.get("results", [])) if "PostToolUse" in str(r.get("case", ""))]
    added = [r.get("added_p50_ms") for r in rows if r.get("added_p50_ms") is not None]
    return {"source": "benchmarks/results/tool_hook_latency.json", "added_p50_ms_max": max(added) if added
            else None, "cases": len(rows)}


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: the summary (splits side by side), then per split its facts, noise, no-answer
    turns and model calls."""
    splits = report["splits"]
    names = list(splits)
    out = ["# Scripted week through the real Claude Code and Codex (issue 14, Measured)", "",
           f"memcue's default install; loopback scripted model; commit {report['commit']}"
           f"{' (dirty)' if report['dirty'] else ''}. Targets: facts back >= {_pct(TARGET_BACK)}, noise <= "
           f"{_pct(TARGET_NOISE)}, 0 model tokens spent by memcue, PostToolUse added p50 <= 15 ms.", "",
           "| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]

    def row(label: str, cell: Any) -> None:
        out.append(f"| {label} | " + " | ".join(str(cell(splits[n])) for n in names) + " |")

    row("sessions / turns", lambda s: f"{s['sessions']} / {s['turns']}")
    row("facts back (every later need)", lambda s: f"{s['overall']['back']}/{s['overall']['facts']} = "
        f"{_pct(s['overall']['fraction'])}")
    row("needs met (turn level)", lambda s: f"{s['overall']['needs_back']}/{s['overall']['needs']}")
    for sig in SIGNALS:
        row(f"- {sig}", lambda s, sig=sig: f"{s['per_signal'][sig]['back']}/{s['per_signal'][sig]['facts']} = "
            f"{_pct(s['per_signal'][sig]['fraction'])}")
    row("noise (answering rows with no expect string)", lambda s: f"{s['noise']['noise']}/{s['noise']['rows']} = "
        f"{_pct(s['noise']['noise_fraction'])}")
    row("needs the prompt hook alone meets (replayed as of each prompt)", lambda s: (
        f"{s['overall'].get('needs_prompt_alone', 0)}/{s['overall']['needs']}"))
    row("needs met via prompt / session / earlier-turn / combined blocks", lambda s: " / ".join(
        str(s["via"].get(k, 0)) for k in ("prompt", "session", "earlier", "combined")))
    row("memories injected into never-stored questions", lambda s: sum(t["injected"] for t in s["no_answer_turns"]
                                                                      if t["probe"]))
    row("memories injected into task turns needing nothing", lambda s: sum(
        t["injected"] for t in s["no_answer_turns"] if not t["probe"]))
    row("PostToolUse records spooled / shell calls run (claude-code; codex)", lambda s: "; ".join(
        f"{v['spooled']}/{v['scripted'] - v.get('refused', 0)}" + (f" ({v['refused']} refused by the harness)"
                                                                   if v.get("refused") else "")
        for _, v in sorted(s["tool_records"].items())))
    row("model requests not from a harness (memcue)", lambda s: s["model_calls"]["non_harness_requests"])
    row("wall time (s)", lambda s: s["wall_s"])
    lat = report["post_tool_use"]
    out += ["", f"PostToolUse added latency p50: {lat['added_p50_ms_max'] if lat else 'n/a'} ms (worst PostToolUse "
            f"case, cited from `{lat['source'] if lat else LATENCY_FILE.name}`, not re-measured here)."]
    for name in names:
        out += split_markdown(name, splits[name])
    return "\n".join(out) + "\n"


def split_markdown(name: str, s: dict[str, Any]) -> list[str]:
    """One split's detail: facts, noise, no-answer turns, model calls, problems."""
    out = ["", f"## {name}: {s['script']}", "", "| fact | signal | introduced | back | where | why not |",
           "|---|---|---|---|---|---|"]
    for f in s["facts"]:
        where = "; ".join(f"{n['turn']} ({n['harness']}) {n['via'] or 'missing'}" for n in f["needs"])
        out.append(f"| {f['fact']} | {f['signal']} | {f['introduced']} | {'yes' if f['back'] else 'no'} | {where} | "
                   f"{f['why'].replace('|', '/')} |")
    n = s["noise"]
    out += ["", f"Rows at the end: {n['all_rows']} ({n['bookkeeping']} bookkeeping, {n['captured_prompts']} "
            f"captured prompts); answering rows {n['rows']} by kind {n['by_kind']}; {n['answer_a_fact']} hold every "
            f"expect string of some fact; {n['noise']} hold none:"]
    out += [f"- {line}" for line in n["noisy"]] or ["- (none)"]
    out += ["", "Turns that need nothing (a question about something never stored, or a task): what the prompt hook "
            "injected (all of it noise):"]
    for t in s["no_answer_turns"]:
        label = "never stored" if t["probe"] else "task"
        out.append(f"- {t['turn']} ({t['harness']}, {label}) \"{t['prompt'][:90]}\": {t['injected']} injected")
        out += [f"  - {line}" for line in t["lines"]]
    m = s["model_calls"]
    out += ["", f"Model calls: {m['turn_requests']} in the harnesses' turns, {m['harness_other_requests']} other "
            f"harness requests, {m['non_harness_requests']} from anything else (~{m['non_harness_tokens_est']} "
            f"tokens); user agents {m['user_agents']}; `memcue ledger`: "
            f"{'not present' if m['ledger'] is None else json.dumps(m['ledger'])[:300]}."]
    if s["problems"]:
        out += ["", "Stub problems:"] + [f"- {p}" for p in s["problems"]]
    if s["script_problems"]:
        out += ["", "The script breaks the format's rules:"] + [f"- {p}" for p in s["script_problems"]]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the chosen splits and write the results; exit 0 (the numbers are the result, not a pass/fail)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--keep", action="store_true", help="keep the temporary week folders")
    args = parser.parse_args(argv)
    began = time.monotonic()
    wanted = SPLITS if args.split == "all" else (args.split,)
    splits = {}
    for split in wanted:
        script = load_script(split)
        if script is None:
            say(f"no {split}.json under {DATA}: skipped")
            continue
        splits[split] = run_split(script, args.keep)
    if not splits:
        say("no week script found")
        return 1
    report = {"benchmark": "capture_week", "commit": git_commit(), "dirty": git_dirty(), "splits": splits,
              "post_tool_use": post_tool_latency(), "wall_s": round(time.monotonic() - began, 1)}
    write_results(args.out_dir, "capture_week", report, markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
