"""The synthetic workload of the hook latency benchmark: the project memories it seeds (the demo's
``seed.jsonl`` plus generated variants in the same style), the prompts it sends, and the
UserPromptSubmit payloads that carry them.

Everything is deterministic for a given ``random.Random``: the benchmark draws the prompts first and
the generated memories second from one generator, so results stay comparable between runs.
"""

from __future__ import annotations

import json
import random
import re
import time
from importlib import resources
from pathlib import Path
from typing import Any

#: Memories seeded into the benchmark project.
SEED_TOTAL = 1000

# -- generated memories ----------------------------------------------------------------------------

_SERVICES = ["billing-api", "web-ui", "ledger-worker", "tax-service", "notifications", "auth-gateway",
             "reporting", "fx-rates", "webhooks-relay", "partner-api"]
_MODULES = ["billing/invoices/service.py", "billing/payments/stripe_handler.py", "billing/tax/taxly.py",
            "billing/dunning/scheduler.py", "billing/money.py", "web/src/pages/Invoices.tsx",
            "web/src/api/queries.ts", "ledger/postings.py", "reporting/exports/csv.py", "auth/tokens.py",
            "notifications/email/templates.py", "fx/snapshot.py"]
_TECH = [("Postgres advisory locks", "Redis locks"), ("httpx", "requests"), ("pytest fixtures", "unittest setUp"),
         ("TanStack Query", "useEffect fetching"), ("Alembic migrations", "hand-written SQL"),
         ("structlog", "the stdlib logging config"), ("pydantic v2 models", "dataclasses"),
         ("k6", "Locust"), ("Playwright", "Cypress"), ("uv", "pip-tools"), ("ruff", "flake8 and black"),
         ("SQS", "RabbitMQ"), ("Vault", ".env files"), ("OpenTelemetry", "custom timing logs")]
_REASONS = ["it kept the p95 under 200 ms in the load test", "the on-call team already knows it",
            "it removed a whole class of flaky tests", "partners asked for it in the Q3 review",
            "it avoids a second network hop per request", "the old way leaked connections under load",
            "it is what the platform team supports", "audit needs a record of every change"]
_SYMPTOMS = ["timeouts after a deploy", "duplicate rows in the exports", "a 500 on empty carts",
             "wrong totals for multi-currency invoices", "a memory leak in the worker",
             "emails sent twice", "a deadlock between two migrations", "stale data after a refund",
             "a race when two webhooks arrive together", "slow page loads for large accounts"]
_CAUSES = ["a missing index on account_id", "a retry without an idempotency key",
           "float arithmetic on money", "an N+1 query in the serializer", "a connection pool of size 1",
           "a cache key without the currency", "the job running in two pods at once",
           "a timezone-naive datetime", "an unbounded SELECT"]
_FIXES = ["added the index concurrently", "wrapped the handler in an idempotency check",
          "switched to integer minor units", "prefetched the related rows", "raised the pool to 10",
          "added the currency to the cache key", "took an advisory lock per job",
          "stored timestamps as timestamptz", "paginated the query by id"]
_TASKS = [("reset the local database", "make db-reset"), ("regenerate the OpenAPI client", "pnpm gen:api"),
          ("replay a Stripe webhook", "stripe events resend {evt}"), ("run the slow tests", "pytest -m slow"),
          ("rotate the Taxly key", "vault kv put secret/taxly key=..."),
          ("tail the worker logs on staging", "kubectl -n billing-staging logs -f deploy/{svc}"),
          ("profile a slow endpoint", "py-spy record -o profile.svg -- python -m billing.api"),
          ("rebuild the search index", "python -m billing.search.reindex --batch 5000")]
_PEOPLE = ["Yuki", "Sam", "Priya", "Marek", "Ana", "Tomás", "Lena", "Kwame", "Noor", "Jonas"]
_AREAS = ["the tax engine", "Stripe integration", "the dunning flow", "the partner API", "CI pipelines",
          "the design system", "ledger reconciliation", "the FX snapshot job", "on-call runbooks"]


def generated_memories(n: int, rng: random.Random) -> list[dict[str, Any]]:
    """``n`` realistic project memories (decisions, bugs, how-tos, notes, preferences, events), each
    ``{"content", "kind", "age_days"}``."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        kind = ["decision", "bug", "howto", "note", "preference", "event"][i % 6]
        svc, mod = rng.choice(_SERVICES), rng.choice(_MODULES)
        ticket = f"BILL-{2000 + i}"
        if kind == "decision":
            use, alt = rng.choice(_TECH)
            text = f"{svc}: we use {use} rather than {alt} in {mod}, because {rng.choice(_REASONS)} ({ticket})."
        elif kind == "bug":
            text = (f"{ticket}: {rng.choice(_SYMPTOMS)} in {svc} ({mod}); root cause was "
                    f"{rng.choice(_CAUSES)}. Fix: {rng.choice(_FIXES)}.")
        elif kind == "howto":
            task, cmd = rng.choice(_TASKS)
            cmd = cmd.format(evt=f"evt_{rng.randrange(10**6):06d}", svc=svc)
            text = f"To {task} for {svc}: `{cmd}` (see {ticket} for the background)."
        elif kind == "note":
            text = (f"{rng.choice(_PEOPLE)} owns {rng.choice(_AREAS)} since sprint {rng.randint(10, 60)}; "
                    f"ask them before changing {mod} ({ticket}).")
        elif kind == "preference":
            use, alt = rng.choice(_TECH)
            text = f"In {svc}, prefer {use} over {alt}; reviewers flag {alt} in new code ({mod}, {ticket})."
        else:
            text = (f"Deployed {svc} v{rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)} to "
                    f"{rng.choice(['staging', 'prod'])}; {rng.choice(_SYMPTOMS)} checked, none seen ({ticket}).")
        out.append({"content": text, "kind": kind, "age_days": round(rng.uniform(0, 120), 1)})
    return out


def load_seed() -> list[dict[str, Any]]:
    """The demo's packaged seed memories (``memcue/demo/seed.jsonl``)."""
    text = resources.files("memcue.demo").joinpath("seed.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# -- prompts ---------------------------------------------------------------------------------------

_PROMPTS = [
    "why did we pick advisory locks for the scheduler again?",
    "customers are getting charged twice after stripe webhooks, have we seen this before?",
    "how do I run the db migrations on staging?",
    "the test suite hangs when I run it in parallel with xdist, any idea why?",
    "are we storing prices as decimals or as cents these days?",
    "which port is the local postgres exposed on? psql to 5432 isn't working",
    "what does pre-commit run on the python code these days, still black and flake8?",
    "the invoices page is super laggy for big customers, is that a known thing?",
    "write a haiku about autumn",
    "add a retry with backoff to the Taxly client",
    "where do secrets for local dev come from?",
    "refactor InvoiceTable.tsx to use the virtualized list",
    "what's our convention for commit messages?",
    "can you explain what the dunning scheduler does?",
    "fix the failing test in tests/test_proration.py",
    "how do I get the web ui talking to my local api?",
    "who should I ask about the tax engine?",
    "why is the CI job for the partner api so slow?",
    "bump fastapi to the latest version and fix whatever breaks",
    "what was the root cause of the duplicate emails last month?",
    "rename amount to amount_minor everywhere in the ledger module",
    "do we soft-delete invoices?",
    "is there a fake for Taxly I can use in tests?",
    "summarise the open bugs in the billing api",
    "write a SQL query listing customers with overdue invoices",
    "what's the bundle size budget for the web ui?",
    "how should status fields be modelled in the database?",
    "the staging dump restore fails with an owner error",
    "set up playwright for the refund flow",
    "what timezone do we store timestamps in?",
    "ok thanks",
    "explain this stack trace: psycopg.errors.LockNotAvailable",
    "should I use useEffect to fetch the customer here?",
    "make the export endpoint stream CSV instead of building it in memory",
    "what happened with the NUMERIC(12,2) money columns?",
    "how do I replay a stripe webhook locally?",
    "the FX snapshot job ran twice last night",
    "add an index on invoices(account_id, status)",
    "why does the dashboard tooltip look broken in dark mode?",
    "what's the API versioning scheme for partners?",
]
_TEMPLATES = [
    "what did we decide about {tech} in {svc}?",
    "have we seen {symptom} in {svc} before?",
    "how do I {task}?",
    "who owns {area} now?",
    "is {tech} still preferred over {alt}?",
    "look at {mod} and tell me why it's slow",
    "what was the fix for {ticket}?",
    "{symptom} again in {svc}, any ideas?",
]


def prompts(n: int, rng: random.Random) -> list[str]:
    """``n`` varied prompts: hand-written ones first, then templated ones about the seeded topics."""
    out = list(_PROMPTS[:n])
    while len(out) < n:
        use, alt = rng.choice(_TECH)
        out.append(rng.choice(_TEMPLATES).format(
            tech=use, alt=alt, svc=rng.choice(_SERVICES), symptom=rng.choice(_SYMPTOMS),
            task=rng.choice(_TASKS)[0], area=rng.choice(_AREAS), mod=rng.choice(_MODULES),
            ticket=f"BILL-{2000 + rng.randrange(700)}"))
    return out


def payload(prompt: str, cwd: str, session_id: str) -> dict[str, Any]:
    """A Claude Code UserPromptSubmit payload as the harness writes it on stdin."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    return {"session_id": session_id,
            "transcript_path": f"{Path.home()}/.claude/projects/{slug}/{session_id}.jsonl",
            "cwd": cwd, "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt}


def seed_rows(project: str, rng: random.Random, total: int = SEED_TOTAL) -> list[dict[str, Any]]:
    """``total`` rows (default ``SEED_TOTAL``) for ``/remember/batch`` in ``project``: the demo seed first,
    then generated variants; ``created_at`` (unix s) is now minus each memory's ``age_days``."""
    now = time.time()
    base = load_seed()
    rows = base + generated_memories(max(0, total - len(base)), rng)
    return [{"content": m["content"], "kind": m["kind"], "pinned": bool(m.get("pinned")), "project": project,
             "created_at": now - float(m.get("age_days", 0)) * 86400, "source": "bench",
             "source_id": f"bench:{i}", "metadata": {"tags": m.get("tags", [])}}
            for i, m in enumerate(rows[:total])]
