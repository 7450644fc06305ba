"""Shared set-up of the real-harness tests (``-m real_harness``): the installed harness programs, a private
HOME, a project with memories in a real sidecar, and ``memcue install`` run as the user runs it.

The harness programs come from ``make harnesses`` (npm ``@anthropic-ai/claude-code`` and ``@openai/codex``,
PyPI ``hermes-agent`` in its own venv, under ``.harnesses/`` or ``$MEMCUE_HARNESS_DIR``). When one is
missing the test is skipped, unless ``MEMCUE_REQUIRE_HARNESSES=1`` (``make test`` and CI set it): then it
fails, so a broken install step cannot pass as a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, Sidecar, start_sidecar

from memcue.core.project import resolve_project
from memcue.sidecar.inject.service import SESSION_RECENT

HARNESS_DIR = Path(os.environ.get("MEMCUE_HARNESS_DIR") or REPO / ".harnesses")
PROGRAMS = {
    "claude": HARNESS_DIR / "npm" / "node_modules" / ".bin" / "claude",
    "codex": HARNESS_DIR / "npm" / "node_modules" / ".bin" / "codex",
    "hermes": HARNESS_DIR / "hermes" / "bin" / "hermes",
}

#: The fact the prompt's recall must bring (oldest, so it is not among the session block's newest).
FACT = "The billing service stores invoices in PostgreSQL 16 behind pgbouncer in transaction mode"
QUESTION = "which database do the billing service invoices live in?"
#: Newer memories: more of them than the session-start block offers (pinned, then the newest
#: ``inject.service.SESSION_RECENT``), so it leaves FACT out.
NEWER = [
    "Release notes are drafted in docs/changelog.md before every tag",
    "The web client is built with Vite and served by Caddy",
    "Feature flags live in config/flags.toml and are read at start-up",
    "Pull requests need one approval from the owning team",
    "Logs ship to Loki through the vector agent on each host",
    "The CI runners use Python 3.12 and Node 22",
    "Staging is refreshed from a masked production snapshot every Monday",
    "Error budgets are tracked per service in the SLO dashboard",
    "Frontend strings go through the i18n extractor before release",
    "Cron jobs run in UTC; the scheduler is in ops/cron.yaml",
    "The mobile app talks to the API through the gateway at api.internal",
    "Database migrations are written with Alembic and reviewed by the data team",
    "Screenshots in the docs are regenerated with the playwright script in tools/",
    "The design system lives in packages/ui and is versioned separately",
    "Secrets are read from Vault at start-up, never from files in the repo",
    "Load tests run with k6 against the staging cluster on Thursdays",
    "The search index is rebuilt nightly from the events table",
    "API errors follow RFC 9457 problem details",
    "The support team reads alerts in the #oncall-support channel",
    "Background jobs use Celery with Redis as the broker",
    "Images are resized on upload by the thumbnailer worker",
    "Dependency updates come in through Renovate every Tuesday",
    "The admin panel is only reachable over the VPN",
    "Time zones are stored as IANA names, never offsets",
    "Money amounts are integers in minor units",
    "Every service exposes /healthz and /readyz",
    "The data warehouse is loaded by dbt models in analytics/",
    "Email templates are MJML files compiled at build time",
    "The public status page is updated by the incident commander",
    "Translations are managed in Crowdin and synced weekly",
    "Audit logs are kept for seven years in cold storage",
    "The GraphQL schema is generated from the resolvers, not written by hand",
    "Docker images are built with BuildKit and tagged with the git SHA",
    "The marketing site is a separate Astro project in the www repository",
    "On-call handoff happens every Wednesday at 11:00",
    "Terraform state lives in an S3 bucket with DynamoDB locking",
    "The mobile release train ships every second Thursday",
    "Python code is formatted with ruff format, line length 100",
    "Customer exports are zipped CSV files mailed as signed links",
    "The websocket gateway is written in Go and scales on connection count",
    "Rate limits are 100 requests per minute per API key",
    "Product analytics events are sent to PostHog from the browser only",
    "The legal team signs off on every change to the privacy policy page",
    "Kubernetes manifests are rendered with Kustomize overlays per environment",
    "Backups of object storage are copied to a second region nightly",
    "The PDF renderer runs headless Chromium in its own container",
    "Design reviews happen on Tuesdays with the platform guild",
    "SMS messages are sent through Twilio with a fallback to MessageBird",
    "The changelog follows the Keep a Changelog format",
    "TLS certificates are issued by cert-manager from Let's Encrypt",
    "New hires get read-only production access for their first month",
    "The recommendation model is retrained every Sunday night",
    "JavaScript packages are installed with pnpm and a frozen lockfile",
    "Internal docs are written in Markdown and published with MkDocs",
    "Uptime checks ping every public endpoint once a minute from three regions",
    "Video uploads are transcoded by a queue of ffmpeg workers",
    "The accessibility audit runs axe on every page before release",
    "Git tags follow semantic versioning with a v prefix",
    "Office Wi-Fi guests get a separate VLAN with no internal access",
    "The chatbot answers from the help center articles only",
    "Geo lookups use the MaxMind database refreshed weekly",
    "Team retrospectives are held on the last Friday of each sprint",
]
PINNED = "Deploys are frozen on Fridays; ask Priya before shipping"


#: Claude Code's own environment switches (docs: "Environment variables"): no telemetry, no update check,
#: no other traffic than the model API.
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}


def user_claude_settings(env: dict[str, str], original: bytes) -> Path:
    """Write ``original`` as the user's own ``~/.claude/settings.json`` under ``env``'s HOME (what an install
    must keep and an uninstall give back byte for byte); returns its path."""
    settings = Path(env["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_bytes(original)
    return settings


def program(name: str) -> Path:
    """The installed harness program ``name``; skips (or fails, see module doc) when it is missing."""
    path = PROGRAMS[name]
    if not path.exists():
        message = f"{name} is not installed under {HARNESS_DIR}: run `make harnesses`"
        if os.environ.get("MEMCUE_REQUIRE_HARNESSES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def private_env(root: Path, memcue_home: Path, **extra: str) -> dict[str, str]:
    """An environment whose HOME (and so every harness's config dir) is ``root/home``; nothing of the user's
    own config is read or written. Harness-specific home variables are dropped so the defaults under HOME
    are the ones exercised."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME") and not k.startswith(("ANTHROPIC_",
                                                                                               "OPENAI_"))}
    env.update(HOME=str(home), MEMCUE_HOME=str(memcue_home), OPENBLAS_NUM_THREADS="1", NO_COLOR="1", **extra)
    return env


def memcue_cli(*args: str, env: dict[str, str]) -> dict:
    """Run ``python -m memcue <args> --json`` as the user would; returns the decoded JSON output."""
    proc = subprocess.run([sys.executable, "-m", "memcue", *args, "--json"], capture_output=True, env=env,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr.decode() + proc.stdout.decode()
    return json.loads(proc.stdout)


def project_dir(root: Path, name: str = "ledger") -> Path:
    """A git repository (when git is installed) to run the harness in. Its name matches none of the memories,
    so the session-start recall on the name leaves FACT to the prompt hook."""
    path = root / name
    path.mkdir(parents=True)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def seeded_sidecar(memcue_home: Path, project: Path) -> Sidecar:
    """A real sidecar (real model) holding FACT, the NEWER memories and one PINNED one for ``project``, every
    vector computed."""
    assert len(NEWER) > SESSION_RECENT  # else the session-start block holds FACT and the prompt's recall skips it
    sc = start_sidecar(memcue_home)
    scope = resolve_project(str(project))
    sc.client.remember(FACT, project=scope, kind="decision")
    for text in NEWER:
        sc.client.remember(text, project=scope, kind="decision")
    sc.client.remember(PINNED, project=scope, kind="decision", pinned=True)
    sc.client.wait_idle(timeout_s=120)
    return sc


def wait_for_bookkeeping(sc: Sidecar, count: int, timeout_s: float = 15.0) -> int:
    """Wait until the sidecar holds ``count`` bookkeeping rows (the answer at Stop and the session's end reach
    it through the spool); returns how many it holds then."""
    deadline = time.monotonic() + timeout_s
    while sc.client.health()["counts"]["bookkeeping"] < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return int(sc.client.health()["counts"]["bookkeeping"])


def run(argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 120,
        stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """Run a harness program; the output is kept for the failure message."""
    return subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd, timeout=timeout)


def explain(proc: subprocess.CompletedProcess[bytes], sidecar: Sidecar) -> str:
    """What to show when a harness run did not do what the test expects."""
    return (f"exit {proc.returncode}\nstdout: {proc.stdout.decode(errors='replace')[-3000:]}\n"
            f"stderr: {proc.stderr.decode(errors='replace')[-3000:]}\nsidecar log: {sidecar.log()[-3000:]}")


def promoted_and_tool_records(sc: Sidecar, home: Path, timeout_s: float = 30.0) -> tuple[list[dict], list[dict]]:
    """Wait (at most ``timeout_s`` s) for promoted candidates in ``sc``; returns them and every tool record the
    hooks spooled under ``home`` (``"op":"tool"`` lines), in file order."""
    deadline = time.monotonic() + timeout_s
    while not (promoted := sc.client.candidates(state="promoted")["results"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    spooled = [json.loads(line) for f in (home / "spool").glob("*.jsonl") for line in f.read_text().splitlines()
               if '"op":"tool"' in line]
    return promoted, spooled


#: The Codex provider table that points ``codex exec`` at a loopback ``responses`` stub at ``{url}`` (no retries,
#: so a stub that fails shows at once); ``STUB_API_KEY`` must be set in the environment.
CODEX_STUB_PROVIDER = """[model_providers.stub]
name = "Loopback stub"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""
