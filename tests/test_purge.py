"""``memcue purge``: a memory (a secret that got stored) deleted for good, every version, from every table and
index, its text left in neither the database file nor its WAL (issue 16; DESIGN.md section 8). Real sidecar
with the real model (so vectors exist), the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import Sidecar

TOKEN = "zq7vault-recovery-phrase"


def _cli(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcue", *args], input=stdin, capture_output=True, text=True,
                          env={**os.environ, "MEMCUE_HOME": str(home)}, timeout=120)


def _bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.glob("memcue.db*"))


def test_purge_removes_every_version_everywhere_and_asks_first(sidecar: Sidecar, tmp_path: Path) -> None:
    client, project = sidecar.client, str(tmp_path)
    first = client.remember(f"the vault recovery phrase is {TOKEN} for Orbital Vault", project=project)["id"]
    second = client.update({"memory_id": first, "content": f"the vault recovery phrase is now {TOKEN}-2"})["id"]
    kept = client.remember("the staging vault is unsealed by the on-call engineer", project=project)["id"]
    client.wait_idle(timeout_s=120)
    assert TOKEN.encode() in _bytes(sidecar.root)

    refused = _cli(sidecar.root, "purge", str(second))  # no terminal, no --yes: nothing happens
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert client.fetch([second])["results"]

    done = _cli(sidecar.root, "purge", f"#{second}", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert f'"purged": [\n      {first},\n      {second}\n    ]' in done.stdout, done.stdout
    assert [r["memory_id"] for r in client.fetch([first, second, kept])["results"]] == [kept]
    assert client.recall(TOKEN, project=project, mode="keyword")["results"] == []
    answer = client.recall("what is the vault recovery phrase?", project=project)
    assert {r["memory_id"] for r in answer["results"]} <= {kept}, "the vector index forgot them too"
    assert TOKEN.encode() not in _bytes(sidecar.root), "the text is gone from the file and its WAL"
    assert b"Orbital Vault" not in _bytes(sidecar.root), "and from the entity graph"
    assert b"on-call engineer" in _bytes(sidecar.root), "the other memory is untouched"
    assert _cli(sidecar.root, "purge", str(second), "--yes").returncode == 1, "nothing left to purge"
    newest = client.remember("the vault is rotated every quarter", project=project)["id"]
    assert client.purge([newest])["purged"] == [newest]
    after = client.remember("the vault audit log is kept for a year", project=project)["id"]
    assert after > newest, "a purged id is never given to another memory (addresses and logs may name it)"
