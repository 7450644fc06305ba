"""The compact recall block (issue 6, item 3): its rendering under the budget, the ``memcue://`` address that
parses back, its removal from captured prompts, and the recall-usage log it feeds."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from memcue.core.address import address, memory_id_of, parse_address
from memcue.mcp.shape import parse_ids as mcp_parse_ids
from memcue.sidecar.api_models import ExpandIn, FetchIn
from memcue.sidecar.inject.render import COMPACT_CUES, compact_line, left_out_line, render_compact
from memcue.sidecar.runtime.tokenizer import TokenCounter
from memcue.sidecar.settings import load_settings
from memcue.sidecar.store import ServedRecall, Store
from memcue.sidecar.store.sqlite import usage as usage_store
from memcue.sidecar.store.write.strip import strip_injected
from memcue.sidecar.usage import UsageRecorder, served_recall

TAG = re.compile(r'^<memcue-recall session_id="(?P<session>[^"]*)" query_id="(?P<query>[^"]*)">$')
LINE = re.compile(r"^(?P<score>\d+\.\d\d) (?P<address>memcue://\S+)(?: \[(?P<cues>[^\]]*)\])?$")
PROJECTS = ["/home/ana/src/billing-api", "/srv/other/billing-api", "", "C:/Users/bo/my repo", "billing-api"]


def _results(n: int, project: str = "/home/ana/src/billing-api") -> list[dict]:
    return [{"memory_id": 400 + i, "project": project, "score": 0.05, "memory_kind": "decision",
             "channel_scores": {"semantic": 0.9 - i / 1000, "bm25": 3.1},
             "cue_terms": ["jwt", "clock-skew", "middleware", "extra"][: 1 + i % 4]} for i in range(n)]


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    c = TokenCounter(tmp_path_factory.mktemp("tk"))
    assert c.mode == "tiktoken", c.error
    return c


def test_compact_block_shape_and_addresses_parse_back(counter: TokenCounter) -> None:
    results = _results(3)
    block = render_compact(results, session_id="sess-1", query_id="q123", count_tokens=counter.count,
                           max_tokens=600, max_chars=9500)
    lines = block.text.split("\n")
    assert TAG.match(lines[0]).groupdict() == {"session": "sess-1", "query": "q123"}
    assert lines[-1] == "</memcue-recall>"
    assert "memcue fetch <ids> --query-id q123" in lines[-2] and "fetch tool" in lines[-2]
    assert block.included == 3 and block.left_out == 0 and len(lines) == 3 + 3
    for line, r in zip(lines[1:4], results, strict=True):
        m = LINE.match(line)
        assert m, line
        assert m["score"] == f"{r['channel_scores']['semantic']:.2f}"
        assert parse_address(m["address"]) == (r["project"], r["memory_id"])
        assert m["cues"].split(", ") == r["cue_terms"][:COMPACT_CUES]
    assert block.tokens == counter.count(block.text) and block.chars == len(block.text)


def test_compact_line_without_cues_or_cosine_uses_the_fused_score() -> None:
    line = compact_line({"memory_id": 7, "project": "", "score": 0.0456, "channel_scores": {"bm25": 2.0},
                         "cue_terms": []})
    assert line == "0.05 memcue:///7"


@pytest.mark.parametrize("max_tokens", [120, 250, 400])
def test_compact_block_cut_at_a_line_within_the_budget(counter: TokenCounter, max_tokens: int) -> None:
    results = _results(40)
    block = render_compact(results, session_id="s", query_id="q", count_tokens=counter.count,
                           max_tokens=max_tokens, max_chars=9500)
    assert 0 < block.included < len(results) and block.included + block.left_out == len(results)
    assert counter.count(block.text) <= max_tokens
    lines = block.text.split("\n")
    assert lines[-3] == left_out_line(block.left_out)
    assert lines[1:1 + block.included] == [compact_line(r) for r in results[: block.included]]
    # One more line would not have fitted: the cut is at the budget, not before it.
    n = block.included
    more = [lines[0], *lines[1:1 + n], compact_line(results[n]), left_out_line(block.left_out - 1), *lines[-2:]]
    assert counter.count("\n".join(more)) > max_tokens


def test_compact_block_character_cap_and_nothing_fits(counter: TokenCounter) -> None:
    results = _results(200)
    block = render_compact(results, session_id="s", query_id="q", count_tokens=counter.count,
                           max_tokens=100_000, max_chars=2000)
    assert len(block.text) <= 2000 and 0 < block.included < 200
    assert render_compact(results, session_id="s", query_id="q", count_tokens=counter.count, max_tokens=20,
                          max_chars=9500).text == ""
    assert render_compact([], session_id="s", query_id="q", count_tokens=counter.count, max_tokens=600,
                          max_chars=9500).text == ""


def test_tag_attributes_are_escaped(counter: TokenCounter) -> None:
    text = render_compact(_results(1), session_id='a"b<c', query_id="q", count_tokens=counter.count,
                          max_tokens=600, max_chars=9500).text
    assert html.unescape(TAG.match(text.split("\n")[0])["session"]) == 'a"b<c'


@pytest.mark.parametrize("project", PROJECTS)
def test_address_round_trip(project: str) -> None:
    addr = address(project, 412)
    assert addr.startswith("memcue://") and " " not in addr
    assert parse_address(addr) == (project, 412)
    assert memory_id_of(addr) == 412


def test_projects_sharing_a_directory_name_get_different_addresses() -> None:
    assert address("/home/ana/src/billing-api", 1) != address("/srv/other/billing-api", 1)
    assert parse_address("memcue://412") == (None, 412)


@pytest.mark.parametrize("bad", ["memcue://proj/abc", "memcue://", "http://x/12", "12a"])
def test_bad_addresses_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        memory_id_of(bad)


def test_every_id_reader_takes_addresses() -> None:
    a, b = address("/home/ana/src/billing-api", 412), address("", 97)
    assert mcp_parse_ids([a, "15", b]) == [412, 15, 97]
    assert mcp_parse_ids(f"{a}, #15") == [412, 15]
    assert FetchIn(ids=f"{a}, 15", query_id="q").ids == [412, 15]
    assert FetchIn(ids=[a, 15]).ids == [412, 15]
    assert ExpandIn(ids=[a]).id_list() == [412]
    with pytest.raises(ValueError):
        mcp_parse_ids("memcue://x/notanid")


def test_strip_removes_compact_blocks(counter: TokenCounter) -> None:
    text = render_compact(_results(50), session_id="s", query_id="q", count_tokens=counter.count, max_tokens=200,
                          max_chars=9500).text
    assert "left out" in text
    assert strip_injected(f"see this:\n{text}\nwhy jwt?") == "see this:\n\nwhy jwt?"
    cut_off = "\n".join(text.split("\n")[:-1])  # pasted without the closing tag
    assert strip_injected(f"{cut_off}\nwhy jwt?") == "why jwt?"
    kept = "open memcue:///home/ana/412 please\n0.83 is my score"
    assert strip_injected(kept) == kept


def _served(qid: str, session: str, created_at: float, items: list[tuple[int, str, tuple[str, ...]]],
            served_by: str = "hook", block: str = "compact") -> ServedRecall:
    return ServedRecall(qid, session, served_by, block, created_at, tuple(items))


def test_usage_log_marks_and_counts(tmp_path: Path) -> None:
    store = Store(tmp_path / "u.db", want_vec=False)
    now = 1_000_000.0
    store.log_recalls([
        _served("q1", "s1", now - 10, [(1, "decision", ("bm25", "semantic")), (2, "bug", ("semantic",))]),
        _served("q2", "s1", now - 5, [(1, "decision", ("bm25",)), (3, "note", ("graph",))]),
        _served("q3", "", now - 1, [(2, "bug", ("bm25",))], served_by="question", block=""),
    ], now=now)
    assert store.mark_used([1, 2], query_id="q1", now=now) == 2
    assert store.mark_used([1], query_id="q1", now=now) == 0  # already used: first time kept
    assert store.mark_used([3], query_id="q1", now=now) == 0  # q1 did not show memory 3
    assert store.mark_used([1], session_id="s1", now=now) == 1  # the session's latest recall with 1: q2
    assert store.mark_used([2], session_id="nobody", now=now) == 0
    stats = store.usage_stats(since=now - 100)
    assert stats["items"] == {"used": 3, "unused": 2, "total": 5, "used_fraction": 0.6}
    assert stats["recalls"] == {"used": 2, "unused": 1, "total": 3, "used_fraction": round(2 / 3, 4)}
    assert stats["by_channel"]["bm25"] == {"used": 2, "unused": 1, "total": 3, "used_fraction": round(2 / 3, 4)}
    assert stats["by_channel"]["semantic"]["used"] == 2 and stats["by_channel"]["graph"]["unused"] == 1
    assert stats["by_kind"]["decision"] == {"used": 2, "unused": 0, "total": 2, "used_fraction": 1.0}
    assert stats["by_kind"]["bug"]["used"] == 1 and stats["by_kind"]["bug"]["unused"] == 1
    assert stats["by_served"]["hook/compact"]["total"] == 4 and stats["by_served"]["question"]["total"] == 1
    assert store.usage_stats(since=now - 3)["items"]["total"] == 1  # only q3 is that recent


def test_usage_log_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "b.db", want_vec=False)
    now = 10_000_000.0
    old = now - (usage_store.RETENTION_DAYS + 1) * 86400
    store.log_recalls([_served("old", "s", old, [(1, "note", ("bm25",))])], now=old)
    store.log_recalls([_served("new", "s", now, [(1, "note", ("bm25",))])], now=now)
    assert store.usage_stats(since=0)["recalls"]["total"] == 1
    monkeypatch.setattr(usage_store, "MAX_RECALLS", 3)
    store.log_recalls([_served(f"q{i}", "s", now, [(i, "note", ("bm25",))]) for i in range(5)], now=now)
    conn = store._reader()
    assert [r[0] for r in conn.execute("SELECT query_id FROM recall_log ORDER BY id")] == ["q2", "q3", "q4"]
    assert conn.execute("SELECT count(*) FROM recall_items").fetchall()[0][0] == 3  # items went with them


def test_recorder_writes_off_the_caller_and_flushes_before_marking(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db", want_vec=False)
    woken: list[bool] = []
    rec = UsageRecorder(store, on_record=lambda: woken.append(True))
    result = {"memory_id": 5, "memory_kind": "bug", "channel_scores": {"bm25": 1.0}}
    rec.record(served_recall("qa", "s", "hook", [result], "compact"))
    rec.record(served_recall("qb", "s", "hook", [], "compact"))  # showed nothing: not kept
    assert woken == [True]
    assert store.usage_stats(since=0)["items"]["total"] == 0  # nothing written by record itself
    assert rec.mark_used([5], query_id="qa") == 1  # flushed first, then marked
    assert rec.stats(30)["by_kind"]["bug"]["used"] == 1


def test_prompt_block_option(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    assert load_settings(cfg, env={}).prompt_block == "full"
    cfg.write_text('[hooks]\nprompt_block = "compact"\n')
    assert load_settings(cfg, env={}).prompt_block == "compact"
    assert load_settings(cfg, env={"MEMCUE_PROMPT_BLOCK": "full"}).prompt_block == "full"
    cfg.write_text('[hooks]\nprompt_block = "tiny"\n')
    bad = load_settings(cfg, env={})
    assert bad.prompt_block == "full" and "hooks.prompt_block" in bad.error
    assert load_settings(tmp_path / "none.toml", env={"MEMCUE_PROMPT_BLOCK": "compact"}).prompt_block == "compact"
