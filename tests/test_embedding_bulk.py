"""Bulk embedding (a backlog, an import): the real model's two sessions side by side give the same vectors as
one query at a time, in the order given, and the second session is released after the backlog."""

from __future__ import annotations

import numpy as np
import pytest

from memcue.sidecar.runtime.embedding import Embedder, ModelNotReady

TEXTS = [
    "money is integer cents, never floats",
    "the staging deploy switches blue-green through the haproxy weights on port 8443",
    "ok",
    "session tokens are kept in memory only, so a cold start clears them and the app logs people out",
    "secrets only in the OS keychain",
    "run the migrations with `make db-migrate` before the integration tests, never by hand",
    "PAY-219: the refund webhook retried forever because the signature check used the wrong clock",
]


def test_bulk_vectors_match_one_at_a_time_in_order(embedder: Embedder) -> None:
    bulk = embedder.embed_bulk(TEXTS)
    assert len(bulk) == len(TEXTS)
    for text, vector in zip(TEXTS, bulk, strict=True):
        single = embedder.embed([text])[0]
        assert vector.shape == single.shape and vector.dtype == np.float32
        assert float(vector @ single) > 0.999, text
    assert embedder.release_bulk() and not embedder.release_bulk()


def test_bulk_before_the_model_is_ready_raises(tmp_path: object) -> None:
    with pytest.raises(ModelNotReady):
        Embedder(tmp_path).embed_bulk(TEXTS)  # type: ignore[arg-type]
