"""Query text analysis shared by recall's stages, channels and time understanding: words, stop words,
light stems, the safe FTS5 keyword query, key terms, cue terms, whether a text asks something and identifiers
matched whole. Imports nothing else of recall."""

from memcue.sidecar.recall.query.identifiers import (
    IDENTIFIER_KINDS,
    carried,
    family,
    identifiers,
    number_pieces,
    siblings,
)
from memcue.sidecar.recall.query.terms import (
    KEY_TERMS,
    MAX_TERMS,
    STOP_WORDS,
    TIME_WORDS,
    KeywordQuery,
    asking_words,
    compounds,
    content_terms,
    cue_terms,
    is_question,
    key_terms,
    keyword_query,
    sentence_spans,
    stem,
    words,
)

__all__ = [
    "IDENTIFIER_KINDS", "carried", "family", "identifiers", "number_pieces", "siblings",
    "KEY_TERMS", "MAX_TERMS", "STOP_WORDS", "TIME_WORDS", "KeywordQuery", "asking_words", "compounds",
    "content_terms", "cue_terms", "is_question", "key_terms", "keyword_query", "sentence_spans", "stem", "words",
]
