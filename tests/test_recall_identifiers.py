"""Exact identifiers (issue 15, failure kind 3): a ticket id, env var, flag, path or version is matched whole.

On a real SQLite store with the real embedding model, in process: the memory that carries the identifier asked
about ranks first and is the only one a prompt hook injects; siblings that share its parts (``PAY-21`` for
``PAY-219``, a note on ``2.4.1`` for ``2.4.0``, ``BILLING_TIMEOUT`` for ``BILLING_TIMEOUT_MS``) are at most weak.
"""

from __future__ import annotations

import pytest
from conftest import embed_all

from memcue.sidecar.inject.policy import injectable
from memcue.sidecar.recall import RecallRequest, recall
from memcue.sidecar.recall.query import carried, identifiers
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import NewMemory, Store

MEMORIES = [
    "PAY-219: refunds older than 30 days fail with a 409 because the ledger window is closed; routed to manual review",
    "PAY-21: the checkout button double-submits on slow networks; debounced it",
    "PAY-291: payment webhook retries arrive out of order; we sort them by event.created",
    "PAY-2190 tracks the refund export to the accounting system",
    "Upgrading httpx to 2.4.1 broke proxy auth in the payment client",
    "httpx 2.4.0 leaks connections when a request is cancelled; we close the client explicitly",
    "Version 3.0.0 of the payment SDK drops Python 3.8",
    "BILLING_TIMEOUT_MS is the per-request timeout of the billing client in milliseconds (default 4000)",
    "BILLING_TIMEOUT is the old name of the billing timeout in seconds; removed in March",
    "BILLING_RETRIES sets how many times the billing client retries (default 3)",
    "Running the importer with --dry-run still uploads the manifest; the flag only skips the database writes",
    "The importer's --dry-run-all flag was removed last year",
    "src/billing/tax.py rounds each line half-even before summing",
    "src/billing/tax_rates.py holds the rate table, loaded once at start",
]
NOW = 1_780_000_000.0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Store:
    s = Store(tmp_path_factory.mktemp("ids") / "memcue.db")
    s.remember_many([NewMemory(content=c, kind="note", project="pay", created_at=NOW - 86400 * (i + 1))
                     for i, c in enumerate(MEMORIES)])
    embed_all(s, embedder)
    return s


def test_identifiers_are_read_whole() -> None:
    assert identifiers("what was PAY-219?") == ["pay-219"]
    assert identifiers("any problem with httpx v2.4.0?") == ["2.4.0"]
    assert identifiers("how do we round tax") == []
    assert carried(["pay-219"], "PAY-219: refunds") == ["pay-219"]
    assert carried(["pay-219"], "PAY-21 and PAY-2190 and PAY-291") == []
    assert carried(["2.4.0"], "pinned to v2.4.0") == ["2.4.0"]
    assert carried(["2.4.0"], "2.4.0.1 and 12.4.0 and 2.4.01") == []
    assert carried(["tax.py"], "see src/billing/tax.py") == ["tax.py"]
    assert carried(["tax.py"], "see src/billing/tax.pyc and mytax.py") == []
    assert carried(["--dry-run"], "--dry-run-all") == []


@pytest.mark.parametrize(("prompt", "expected"), [
    ("what was PAY-219?", 0),
    ("PAY-219 — remind me what broke", 0),  # asks what was done (work_recall), about that identifier
    ("any known problems with httpx 2.4.0?", 5),
    ("what does BILLING_TIMEOUT_MS do?", 7),
    ("why does --dry-run upload anything", 10),
    ("I'm about to change the rounding in tax.py", 12),
])
def test_the_memory_carrying_the_identifier_ranks_first_and_alone_is_injected(
        store: Store, embedder: Embedder, prompt: str, expected: int) -> None:
    answer = recall(store, embedder, RecallRequest(query=prompt, project="pay", limit=8, now=NOW))
    assert answer["results"][0]["content"] == MEMORIES[expected]
    assert answer["results"][0]["support"] == "identifier"
    injected = [r["content"] for r in injectable(answer, 8)]
    assert injected == [MEMORIES[expected]]


def test_an_identifier_no_memory_carries_injects_no_sibling(store: Store, embedder: Embedder) -> None:
    answer = recall(store, embedder, RecallRequest(query="what was PAY-218?", project="pay", limit=8, now=NOW))
    assert injectable(answer, 8) == []
