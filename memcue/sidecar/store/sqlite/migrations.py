"""Schema migrations: small numbered functions applied in order and recorded (after llm's migrations.py).

``migrate(conn)`` applies every function not yet recorded in ``_migrations``. The vector table depends
on the embedding model's dimension, so it is created by ``ensure_vector_table`` rather than here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import apsw

from memcue.sidecar.store.sqlite.graph import link_entities
from memcue.sidecar.store.write import extract_entities

Migration = Callable[[apsw.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next migration (named by its function name, ``mNNN_…``)."""
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_create_tables(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY,
            content TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'note',
            project TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            pinned INTEGER NOT NULL DEFAULT 0,
            bookkeeping INTEGER NOT NULL DEFAULT 0,
            superseded_by INTEGER REFERENCES memories(id),
            source TEXT NOT NULL DEFAULT '',
            source_id TEXT UNIQUE,
            embedded INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX memories_project_created ON memories(project, created_at);
        CREATE INDEX memories_unembedded ON memories(embedded) WHERE embedded = 0;
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """
    )


@migration
def m002_create_fts(conn: apsw.Connection) -> None:
    # Bookkeeping rows are never indexed: they stay listable but cannot be a keyword candidate.
    conn.execute(
        """
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, content='memories', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories WHEN new.bookkeeping = 0 BEGIN
            INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories WHEN old.bookkeeping = 0 BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF content, bookkeeping ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content)
                SELECT 'delete', old.id, old.content WHERE old.bookkeeping = 0;
            INSERT INTO memories_fts(rowid, content)
                SELECT new.id, new.content WHERE new.bookkeeping = 0;
        END;
        """
    )


@migration
def m003_exact_duplicates(conn: apsw.Connection) -> None:
    # Writing the same text again in the same project reinforces the row instead of adding one.
    conn.execute(
        """
        ALTER TABLE memories ADD COLUMN content_sha1 TEXT;
        ALTER TABLE memories ADD COLUMN seen_count INTEGER NOT NULL DEFAULT 1;
        CREATE INDEX memories_project_sha1 ON memories(project, content_sha1);
        """
    )


@migration
def m004_entity_graph(conn: apsw.Connection) -> None:
    # Entities named in memories and their co-occurrence edges (recall's spreading-activation channel).
    conn.execute(
        """
        CREATE TABLE entities (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, df INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE memory_entities (
            memory_id INTEGER NOT NULL, entity_id INTEGER NOT NULL, PRIMARY KEY (memory_id, entity_id)
        ) WITHOUT ROWID;
        CREATE INDEX memory_entities_entity ON memory_entities(entity_id, memory_id);
        CREATE TABLE entity_edges (
            src INTEGER NOT NULL, dst INTEGER NOT NULL, weight INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (src, dst)
        ) WITHOUT ROWID;
        """
    )
    rows = conn.execute("SELECT id, content FROM memories WHERE bookkeeping = 0").fetchall()
    for mid, content in rows:
        link_entities(conn, int(mid), extract_entities(content))


@migration
def m005_versions_and_baseline(conn: apsw.Connection) -> None:
    # valid_from/valid_to: when a fact holds (valid_at); superseded_at: when an update replaced it (as_of);
    # baseline: the memory's mean cosine to generic probe questions (support tiers, per memory).
    conn.execute(
        """
        ALTER TABLE memories ADD COLUMN valid_from REAL;
        ALTER TABLE memories ADD COLUMN valid_to REAL;
        ALTER TABLE memories ADD COLUMN superseded_at REAL;
        ALTER TABLE memories ADD COLUMN baseline REAL;
        CREATE INDEX memories_created ON memories(created_at);
        """
    )


@migration
def m006_session_order(conn: apsw.Connection) -> None:
    # A memory's neighbours in its session (recall's session-context boost, layers' session context).
    conn.execute("CREATE INDEX memories_session_created ON memories(session_id, created_at, id)")


@migration
def m007_serving_indexes(conn: apsw.Connection) -> None:
    # memories_scope makes the counts of a recall's scope (the graph's N, doc_count) index-only: 19 ms ->
    # 0.5 ms at 24k rows. memories_pinned serves the pinned fallback without reading the project's rows.
    conn.execute(
        """
        CREATE INDEX memories_scope ON memories(project, bookkeeping, superseded_by);
        CREATE INDEX memories_pinned ON memories(pinned, project) WHERE pinned = 1;
        """
    )


@migration
def m008_missing_baselines(conn: apsw.Connection) -> None:
    # The worker asks for embedded rows without a baseline on every wake; without this it reads the table.
    conn.execute("CREATE INDEX memories_no_baseline ON memories(id) WHERE embedded = 1 AND baseline IS NULL")


@migration
def m009_forgotten(conn: apsw.Connection) -> None:
    # forgotten_at (Unix s): a soft delete. A forgotten memory never answers but can still be fetched.
    # memories_scope gains the column so the scope counts (graph N, doc_count) stay index-only.
    conn.execute(
        """
        ALTER TABLE memories ADD COLUMN forgotten_at REAL;
        DROP INDEX memories_scope;
        CREATE INDEX memories_scope ON memories(project, bookkeeping, superseded_by, forgotten_at);
        """
    )


@migration
def m010_recall_usage(conn: apsw.Connection) -> None:
    # Recalls served (hook blocks, questions) and the memories each showed; used_at is set when a fetch or
    # expand names the recall (store/sqlite/usage.py). Bounded on write: usage.RETENTION_DAYS, MAX_RECALLS.
    conn.execute(
        """
        CREATE TABLE recall_log (
            id INTEGER PRIMARY KEY,
            query_id TEXT NOT NULL UNIQUE,
            session_id TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            served_by TEXT NOT NULL,
            block TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX recall_log_created ON recall_log(created_at);
        CREATE INDEX recall_log_session ON recall_log(session_id, created_at);
        CREATE TABLE recall_items (
            query_id TEXT NOT NULL REFERENCES recall_log(query_id) ON DELETE CASCADE,
            memory_id INTEGER NOT NULL,
            kind TEXT NOT NULL DEFAULT '',
            channels TEXT NOT NULL DEFAULT '[]',
            used_at REAL,
            PRIMARY KEY (query_id, memory_id)
        ) WITHOUT ROWID;
        CREATE INDEX recall_items_memory ON recall_items(memory_id);
        """
    )



@migration
def m011_delivered_ids(conn: apsw.Connection) -> None:
    # Source ids (a hook's request id, a spool record's spool_id) of writes that landed on an existing row as an
    # exact duplicate: the same id delivered again is then a no-op, not another sighting (memories.py).
    conn.execute(
        """
        CREATE TABLE delivered_ids (
            source_id TEXT PRIMARY KEY,
            memory_id INTEGER NOT NULL,
            created_at REAL NOT NULL
        ) WITHOUT ROWID;
        """
    )


@migration
def m012_candidates(conn: apsw.Connection) -> None:
    # What capture signals noticed, held apart from memories so a candidate never answers a recall; promoted
    # through the gate (capture/gate.py). (signal, turn, content_sha1) holds one delivery once.
    conn.execute(
        """
        CREATE TABLE candidates (
            id INTEGER PRIMARY KEY,
            content TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'note',
            project TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL DEFAULT '',
            harness TEXT NOT NULL DEFAULT '',
            turn TEXT NOT NULL DEFAULT '',
            signal TEXT NOT NULL,
            evidence TEXT NOT NULL DEFAULT '{}',
            content_sha1 TEXT NOT NULL,
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'promoted', 'rejected', 'expired')),
            memory_id INTEGER,
            reason TEXT NOT NULL DEFAULT '',
            decided_at REAL,
            UNIQUE (signal, turn, content_sha1)
        );
        CREATE INDEX candidates_state_created ON candidates(state, created_at);
        CREATE INDEX candidates_pending_expiry ON candidates(expires_at) WHERE state = 'pending';
        """
    )


@migration
def m013_recall_log_receipt(conn: apsw.Connection) -> None:
    # A session's receipt (store/sqlite/sessions.py): each block's size in tokens, and why a hook showed nothing
    # (a row with no items; usage_stats joins items, so such rows count nowhere in it).
    conn.execute(
        """
        ALTER TABLE recall_log ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE recall_log ADD COLUMN skipped TEXT NOT NULL DEFAULT '';
        """
    )


@migration
def m014_distill_ledger(conn: apsw.Connection) -> None:
    # The optional model distiller's ledger (store/sqlite/ledger.py): every session it considered, the tokens
    # spent, what came of it; the day's spend is summed from here, so the budget holds across restarts.
    conn.execute(
        """
        CREATE TABLE distill_ledger (
            id INTEGER PRIMARY KEY,
            created_at REAL NOT NULL,
            session_id TEXT NOT NULL DEFAULT '',
            project TEXT NOT NULL DEFAULT '',
            harness TEXT NOT NULL DEFAULT '',
            runner TEXT NOT NULL DEFAULT '',
            target TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            trigger TEXT NOT NULL DEFAULT '',
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            tokens_from TEXT NOT NULL DEFAULT '',
            outcome TEXT NOT NULL,
            candidates INTEGER NOT NULL DEFAULT 0,
            error TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX distill_ledger_created ON distill_ledger(created_at);
        CREATE INDEX distill_ledger_session ON distill_ledger(session_id, created_at);
        """
    )


@migration
def m015_candidate_vectors(conn: apsw.Connection) -> None:
    # Recurrence (capture/recurrence.py): a pending candidate's embedding, computed once when it is examined, so
    # a later candidate is compared with every pending one of its project and kind without embedding them again;
    # ``vector_model`` says which model made it (a vector of another model is not compared).
    conn.execute(
        """
        ALTER TABLE candidates ADD COLUMN vector BLOB;
        ALTER TABLE candidates ADD COLUMN vector_model TEXT NOT NULL DEFAULT '';
        CREATE INDEX candidates_pending_scope ON candidates(project, kind) WHERE state = 'pending';
        """
    )


@migration
def m016_memory_tags(conn: apsw.Connection) -> None:
    # Tags on memories (``store.write.tags``): one row per (memory, tag); memory_tags_tag finds the memories of a
    # tag for ``list --tag`` without reading every memory's tags.
    conn.execute(
        """
        CREATE TABLE memory_tags (
            memory_id INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (memory_id, tag)
        ) WITHOUT ROWID;
        CREATE INDEX memory_tags_tag ON memory_tags(tag, memory_id);
        """
    )


@migration
def m018_reindex_vectors(conn: apsw.Connection) -> None:
    # A re-index to another embedding model (store/sqlite/reindex.py): each memory's new vector and baseline, kept
    # apart from memories_vec (the old model's vectors stay whole until the swap), so a stopped re-index resumes
    # where it was. A purged memory leaves no vector here either.
    conn.execute(
        """
        CREATE TABLE reindex_vectors (id INTEGER PRIMARY KEY, vector BLOB NOT NULL, baseline REAL);
        CREATE TRIGGER reindex_vectors_ad AFTER DELETE ON memories BEGIN
            DELETE FROM reindex_vectors WHERE id = old.id;
        END;
        """
    )


@migration
def m019_recall_log_project(conn: apsw.Connection) -> None:
    # The project a hook served (store/sqlite/sessions.py): a session whose blocks showed nothing and that stored
    # nothing still belongs to the project it ran in. Rows logged before have ''.
    conn.execute("ALTER TABLE recall_log ADD COLUMN project TEXT NOT NULL DEFAULT ''")


def migrate(conn: apsw.Connection) -> list[str]:
    """Apply pending migrations in one transaction each; return the names applied."""
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    applied = []
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        with conn:
            fn(conn)
            conn.execute("INSERT INTO _migrations(name, applied_at) VALUES (?, ?)", (fn.__name__, time.time()))
        applied.append(fn.__name__)
    return applied


def schema_version(conn: apsw.Connection) -> int:
    """Number of migrations applied (the schema version)."""
    return int(conn.execute("SELECT count(*) FROM _migrations").fetchall()[0][0])


def ensure_vector_table(conn: apsw.Connection, dim: int) -> None:
    """Create the ``memories_vec`` vec0 table for ``dim``-dimension vectors (cosine distance) if absent.

    ``project`` and ``kind`` are metadata columns so a KNN query can be scoped and filtered in place.
    """
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS memories_vec USING vec0("
        f"embedding float[{int(dim)}] distance_metric=cosine, project text, kind text)"
    )
