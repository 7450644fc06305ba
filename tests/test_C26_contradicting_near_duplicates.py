"""Case C26, contradicting near-duplicates: a statement and its reversal ("... allowed ..." / "... forbidden ...",
enable/disable, increase/decrease) score above the near-duplicate cosine with the default model, yet must stay
two memories, never one merged row: through ``remember`` and through a statement the user types in a prompt
(the capture signal promotes through the same duplicate check)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import Sidecar, prompt_payload, run_hook, wait_until

from memcue.sidecar.dedup import NEAR_DUPLICATE_COSINE, same_specifics
from memcue.sidecar.runtime.embedding import Embedder

PAIRS = [
    ("Direct pushes to main are allowed for docs changes", "Direct pushes to main are forbidden for docs changes"),
    ("Enable the retry cache in staging", "Disable the retry cache in staging"),
    ("Increase the worker pool size before the nightly import", "Decrease the worker pool size before the nightly "
                                                                 "import"),
    ("Use the old billing API for refunds", "Use the new billing API for refunds"),
    ("Run the migrations before the deploy", "Run the migrations after the deploy"),
    ("Sort the audit log in ascending order", "Sort the audit log in descending order"),
    ("Keep the error rate below one percent", "Keep the error rate above one percent"),
    ("Retry at least three times", "Retry at most three times"),
    ("Pick the larger of the two buffers", "Pick the smaller of the two buffers"),
    # Fresh-clone trial: these reversals were merged as one memory.
    ("Upload artifacts to S3 at the start of the job", "Upload artifacts to S3 at the end of the job"),
    ("Scale the workers up when the queue is long", "Scale the workers down when the queue is long"),
    ("Align the totals column to the left", "Align the totals column to the right"),
    ("Give the export job high priority", "Give the export job low priority"),
    ("Give the cache more memory", "Give the cache less memory"),
    ("Run the lint step early in the pipeline", "Run the lint step late in the pipeline"),
]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_C26_reversals_are_not_the_same_specifics(a: str, b: str) -> None:
    assert not same_specifics(a, b)
    assert same_specifics(a, a.replace("the ", "the  "))


def test_C26_the_model_alone_would_merge_a_reversal(embedder: Embedder) -> None:
    a, b = embedder.embed(list(PAIRS[0]))
    assert float(a @ b) >= NEAR_DUPLICATE_COSINE, "the polarity check is what keeps them apart"


def _ready(sc: Sidecar) -> None:
    assert wait_until(lambda: sc.client.health()["model"]["state"] == "ready", 60)


def test_C26_remember_keeps_a_statement_and_its_reversal_apart(sidecar: Sidecar) -> None:
    _ready(sidecar)
    for a, b in PAIRS:
        first = sidecar.client.remember(a, project="p")
        second = sidecar.client.remember(b, project="p")
        assert not second["duplicate"] and second["id"] != first["id"], (a, b)


def test_C26_a_reversed_statement_in_a_prompt_becomes_its_own_memory(sidecar: Sidecar, tmp_path: Path) -> None:
    project = tmp_path / "docs-site"
    project.mkdir()
    _ready(sidecar)
    sidecar.client.remember(PAIRS[0][0], project=os.path.realpath(project), kind="decision")
    sidecar.client.wait_idle(timeout_s=60)
    said = f"From now on {PAIRS[0][1][0].lower()}{PAIRS[0][1][1:]}."
    assert run_hook(prompt_payload(said, str(project), "c26-session-0001")).returncode == 0
    time.sleep(0.3)

    def stored() -> list[str]:
        rows = sidecar.client.list_recent(project=os.path.realpath(project))["results"]
        return [r["content"] for r in rows if "forbidden" in r["content"]]

    assert wait_until(stored), "the reversal was merged into the earlier statement"
    contents = [r["content"] for r in sidecar.client.list_recent(project=os.path.realpath(project))["results"]]
    assert any("allowed" in c for c in contents)
