"""Shared fixtures: a short temp MEMCUE_HOME, a real sidecar process, the real hook as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcue.client import Client
from memcue.core.paths import Locations
from memcue.sidecar.recall import baselines, probe_vectors
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import Store

REPO = Path(__file__).resolve().parent.parent


def _short_tmp() -> Path:
    # AF_UNIX paths must stay short: pytest's tmp_path can be too deep.
    return Path(tempfile.mkdtemp(prefix="mc-", dir="/tmp"))


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh data dir, exported as MEMCUE_HOME for this test and its subprocesses."""
    root = _short_tmp()
    monkeypatch.setenv("MEMCUE_HOME", str(root))
    yield root
    _stop_sidecar(Locations(root))
    shutil.rmtree(root, ignore_errors=True)


def _is_sidecar_of(pid: int, root: Path) -> bool:
    """True when process ``pid`` is a memcue sidecar whose data dir is ``root`` (read from /proc), so a pid file
    left behind never gets a process that reused its pid signalled."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"memcue" in cmdline and (f"MEMCUE_HOME={root}".encode() in environ or str(root).encode() in cmdline)


def _stop_sidecar(loc: Locations) -> None:
    try:
        pid = int(loc.pid_file.read_text())
    except (OSError, ValueError):
        return
    if not _is_sidecar_of(pid, loc.root):
        return
    try:
        os.kill(pid, signal.SIGCONT)
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


class Sidecar:
    """A real sidecar process (``python -m memcue.sidecar``) in its own data dir."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.loc = Locations(root)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memcue.sidecar"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.client = Client(self.loc, timeout_s=60)
        deadline = time.monotonic() + 60
        while not self.client.is_up():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"sidecar did not start: {self.proc.stderr.read().decode() if self.proc.stderr else ''}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self) -> str:
        try:
            return self.loc.sidecar_log.read_text()
        except OSError:
            return ""


def start_sidecar(root: Path, **extra_env: str) -> Sidecar:
    # Native memory sources are looked for under an empty home of the test's, not the user's ~/.claude etc.
    env = {**os.environ, "MEMCUE_HOME": str(root), "OPENBLAS_NUM_THREADS": "1",
           "MEMCUE_NATIVE_HOME": str(root / "native-home"), **extra_env}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME"):
        if name not in extra_env:
            env.pop(name, None)
    return Sidecar(root, env)


@pytest.fixture
def sidecar(home: Path) -> Iterator[Sidecar]:
    """A real sidecar with the real embedding model, in a fresh data dir."""
    sc = start_sidecar(home)
    yield sc
    sc.stop()


@pytest.fixture
def keyword_sidecar(home: Path) -> Iterator[Sidecar]:
    """A real sidecar without the embedding model (keyword recall), for tests that need no vectors."""
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    yield sc
    sc.stop()


def wait_until(what: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    """Call ``what`` every 0.1 s until it returns something truthy or ``timeout_s`` (s) pass; its last value."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = what()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def run_hook(
    payload: object,
    event: str = "user-prompt-submit",
    *,
    env: dict[str, str] | None = None,
    raw: bytes | None = None,
    timeout: float = 30,
    harness: str = "claude-code",
) -> subprocess.CompletedProcess[bytes]:
    """Run the real hook of ``harness`` as a subprocess with ``payload`` (JSON-encoded) or ``raw`` bytes on
    stdin."""
    data = raw if raw is not None else json.dumps(payload).encode()
    return subprocess.run(
        [sys.executable, "-m", "memcue.hooks", harness, event],
        input=data,
        capture_output=True,
        env=env or dict(os.environ),
        timeout=timeout,
    )


def prompt_payload(prompt: str, cwd: str, session_id: str = "3f1c8a2e-5b7d-4e21-9c0a-1d2e3f4a5b6c") -> dict:
    """A Claude Code UserPromptSubmit payload (the exact shape the harness sends)."""
    return {
        "session_id": session_id,
        "transcript_path": f"/home/dev/.claude/projects/x/{session_id}.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def context_of(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The additionalContext the hook printed ("" for empty stdout); asserts the output shape."""
    out = proc.stdout.decode("utf-8")
    if not out.strip():
        return ""
    data = json.loads(out)
    assert set(data) == {"hookSpecificOutput"}
    return data["hookSpecificOutput"]["additionalContext"]


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The real default embedding model, loaded once per test session (assembled from packages, offline)."""
    emb = Embedder(tmp_path_factory.mktemp("models"))
    emb.load()
    assert emb.state == "ready", emb.error
    return emb


def embed_pending(store: Store, emb: Embedder) -> None:
    """Embed every pending memory into the already bound vector table (no rebind, no baselines)."""
    pending = store.pending_embeddings(100_000)
    vectors = emb.embed([text for _, text, _, _ in pending])
    store.set_embeddings([(mid, vec.tobytes()) for (mid, _, _, _), vec in zip(pending, vectors, strict=True)])


def embed_all(store: Store, emb: Embedder) -> None:
    """Bind the model and embed every pending memory with its baseline, as the sidecar's worker does."""
    store.bind_model(emb.model_id, emb.dim)
    rows = store.pending_embeddings(100_000)
    if not rows:
        return
    matrix = np.vstack(emb.embed([content for _, content, _, _ in rows]))
    store.set_embeddings([(mid, matrix[i].tobytes()) for i, (mid, _, _, _) in enumerate(rows)])
    base = baselines(matrix, probe_vectors(emb.embed))
    store.set_baselines([(mid, float(base[i])) for i, (mid, _, _, _) in enumerate(rows)])
