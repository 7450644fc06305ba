"""Issue 14: what of a captured commit or test transition is embedded (``capture.embed_text``)."""

from __future__ import annotations

from memcue.sidecar.capture.embed_text import commit_embedding_text, transition_embedding_text


def test_a_commit_is_embedded_without_its_file_list_and_with_its_tests_as_words() -> None:
    assert commit_embedding_text("orders: skip zero-quantity lines", "A 0 typed into the till printed a line.",
                                 ("test_skips_zero_quantity_lines",)) == (
        "orders: skip zero-quantity lines\n\nA 0 typed into the till printed a line.\n\n"
        "Tests added: test skips zero quantity lines")
    assert commit_embedding_text("Bump version", "", ()) == "Bump version"


def test_a_transition_is_embedded_as_its_failure_in_words() -> None:
    key = ("FAIL: test_seeded_roll_declares_sesame (tests.test_crumb.SesameTest.test_seeded_roll_declares_sesame): "
           "AssertionError: 0.3408 != 0.3048")
    assert transition_embedding_text(key) == ("A test failed and then passed: FAIL: test seeded roll declares sesame : "
                                              "AssertionError: 0.3408 != 0.3048")
    assert transition_embedding_text("   ") is None
