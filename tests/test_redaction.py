"""Redaction at write: secrets become typed markers before storage, FTS and embedding (issue 6, item 4).

Every fake secret is built from pieces, so no secret-shaped literal sits in the repository.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from pathlib import Path

import pytest

from memcue.sidecar.store import NewMemory, Store, redact
from tests.conftest import start_sidecar

ALNUM = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY2z4A6c8D0eF"
AWS_ID = "AKIA" + "QX7Z" * 4
AWS_SECRET = "wJalrXUtnFEMI" + "/K7MDENG/bPxRfiCY" + "Ex4mpLeKey"
GH = "ghp" + "_" + ALNUM[:36]
JWT = ("eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + "."
       + "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk")
PEM = ("-----BEGIN " + "RSA PRIVATE KEY-----\n" + "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
       + "aNjPVq3kSlgMsq7ZFBb6xdLWq9JFqZ2vxW0sb6NTZfXkH1uBpGnNRXl1\n" + "-----END " + "RSA PRIVATE KEY-----")

#: (kind, text with the secret, the secret itself, text that must survive around it)
CASES = [
    ("aws-access-key", f"the deploy user is {AWS_ID} in us-east-1", AWS_ID, "in us-east-1"),
    ("aws-secret-key", f"aws_secret_access_key = {AWS_SECRET}\nregion = eu-west-1", AWS_SECRET,
     "aws_secret_access_key = "),
    ("gcp-api-key", "maps key AIza" + "SyD4x9QwErTyUiOpAsDfGhJkLzXcVbNm123 for staging",
     "SyD4x9QwErTyUiOpAsDfGhJkLzXcVbNm123", "for staging"),
    ("azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=memcuedev;AccountKey="
     + ALNUM * 2 + "==;EndpointSuffix=core.windows.net", ALNUM * 2, "AccountName=memcuedev;AccountKey="),
    ("github-token", f"set GITHUB_TOKEN to {GH} before pushing", GH, "before pushing"),
    ("github-token", "fine-grained: github_pat_" + "11ABCDEFG0" + ALNUM, ALNUM, "fine-grained:"),
    ("gitlab-token", "CI uses glpat" + "-" + "xY3zA9bC2dE5fG8hJ1kL for the registry", "xY3zA9bC2dE5fG8hJ1kL",
     "for the registry"),
    ("slack-token", "bot token xox" + "b-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx in env",
     "1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "in env"),
    ("slack-webhook", "alerts post to https://hooks.slack.com/services/" + "T0000AAAA/B0000BBBB/" + ALNUM[:24],
     ALNUM[:24], "alerts post to"),
    ("openai-key", "OPENAI_API_KEY is sk" + "-proj-" + ALNUM + " (rotated in May)", ALNUM, "(rotated in May)"),
    ("anthropic-key", "use sk" + "-ant-api03-" + ALNUM + "-" + ALNUM[:20] + "AA for the judge", ALNUM,
     "for the judge"),
    ("jwt", f"curl -H 'Authorization: Bearer {JWT}' localhost", "dBjftJeZ4CVPmB92K27uhbUJU1p1r", "localhost"),
    ("private-key", f"the deploy key:\n{PEM}\nkeep it in the vault", "MIIEpAIBAAKCAQEA", "keep it in the vault"),
    ("url-password", "connect with postgres://admin:" + "hunter2pass" + "@db.internal:5432/app", "hunter2pass",
     "postgres://admin:"),
    ("password", 'password = "Tr0ub4dor&3xyz" in the old config', "Tr0ub4dor&3xyz", "password = \""),
    ("password", "export DB_PASSWORD=s3cr3tValue42", "s3cr3tValue42", "export DB_PASSWORD="),
    ("secret", '{"client_secret": "' + ALNUM[:24] + '"}', ALNUM[:24], '{"client_secret": "'),
    ("token", "auth_token: 9f8e7d6c5b4aZZ", "9f8e7d6c5b4aZZ", "auth_token: "),
    ("api-key", "api_key='" + ALNUM[:18] + "'", ALNUM[:18], "api_key='"),
]


@pytest.mark.parametrize(("kind", "text", "secret", "kept"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_kind_is_replaced_by_its_marker(kind: str, text: str, secret: str, kept: str) -> None:
    out = redact(text)
    assert f"[REDACTED:{kind}]" in out.text, out.text
    assert secret not in out.text
    assert kept in out.text
    assert out.count >= 1


def test_url_password_keeps_user_and_host() -> None:
    out = redact("clone https://deploy:" + "gh0stPass99" + "@git.example.com/team/repo.git")
    assert out.text == "clone https://deploy:[REDACTED:url-password]@git.example.com/team/repo.git"
    assert out.count == 1


def test_pem_block_is_removed_whole() -> None:
    out = redact(f"before\n{PEM}\nafter")
    assert out.text == "before\n[REDACTED:private-key]\nafter"


def test_counts_every_secret() -> None:
    out = redact(f"{AWS_ID} and {GH} and password=Hunter2Hunter2")
    assert out.count == 3
    assert set(out.kinds) == {"aws-access-key", "github-token", "password"}


NOT_SECRETS = [
    f"fixed in commit {hashlib.sha1(b'x').hexdigest()} after review",
    f"short hash {hashlib.sha1(b'x').hexdigest()[:7]} broke the build",
    f"request id {uuid.UUID(int=0x358F62CC057A49EC940250C099080EBE)} failed at 3am",
    f"the model's sha256 is {hashlib.sha256(b'y').hexdigest()}",
    "the password reset flow sends an email to the user",
    "rate limiting uses a token bucket with 100 tokens per minute",
    "contact alice@example.com about the release",
    "docs live at https://docs.example.com/path?x=1&page=2",
    "test fixture data: b64 'SGVsbG8gV29ybGQhIFRoaXMgaXMgdGVzdCBkYXRh' decodes to a greeting",
    "token = get_token()",
    "password = os.environ['DB_PASSWORD']",
    "secret_key = settings.SECRET_KEY",
    "api_key: str = Field(default='')",
    "max_tokens = 600 and token_count: 12",
    "password: ${DB_PASSWORD} comes from the environment",
    "Token: the bucket refills every second",
    "we use scikit-learn (sk-learn-style estimators) for the baseline",
    "the sidecar listens on http://127.0.0.1:8123/health",
    "retry at 10:30, port: 5432, timeout=30s",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_kept(text: str) -> None:
    out = redact(text)
    assert out.text == text
    assert out.count == 0


def test_fast_enough_for_imports() -> None:
    text = ("We decided the sidecar retries the embed call 3 times; config: memcue/sidecar/config.py, "
            "port=8123 is the default, see https://example.com/docs?x=1 for why. ") * 2
    text = text[:200]
    for _ in range(50):
        redact(text)
    n = 2000
    started = time.perf_counter()
    for _ in range(n):
        redact(text)
    per_ms = (time.perf_counter() - started) / n * 1000
    assert per_ms < 0.25, f"{per_ms:.3f} ms per memory"


def test_store_writes_the_redacted_text(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db", want_vec=False)
    try:
        result = store.remember(NewMemory(content=f"deploy with {GH}", project="p"))
        assert result.redacted == 1
        row = store.fetch([result.id])[result.id]
        assert row["content"] == "deploy with [REDACTED:github-token]"
        again = store.remember(NewMemory(content=f"deploy with {GH}", project="p"))
        assert again.duplicate and again.id == result.id
        clean = store.remember(NewMemory(content="nothing secret here", project="p"))
        assert clean.redacted == 0
        framed = store.remember(NewMemory(content=f"bob: use {GH}", metadata={"embed_text": f"[May] bob: use {GH}"}))
        [(_, _, _, meta)] = [p for p in store.pending_embeddings() if p[0] == framed.id]
        assert meta["embed_text"] == "[May] bob: use [REDACTED:github-token]"
    finally:
        store.close()


def test_real_sidecar_redacts_and_the_secret_is_not_findable(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        out = sc.client.remember(f"the CI bot pushes with {GH} and {AWS_ID}", project="proj")
        assert out["redacted"] == 2
        batch = sc.client.remember_batch([
            {"content": "password=" + "Sup3rS3cret!", "project": "proj"},
            {"content": "no secret in this one", "project": "proj"},
        ])
        assert [b["redacted"] for b in batch] == [1, 0]
        for secret in (GH, AWS_ID, "Sup3rS3cret"):
            found = sc.client.recall(secret, project="proj", mode="keyword")
            assert not any(secret in r["content"] for r in found["results"])
            assert not any(r["memory_id"] == out["id"] for r in found["results"]), secret
        found = sc.client.recall("CI bot pushes", project="proj", mode="keyword")
        assert any("[REDACTED:github-token]" in r["content"] for r in found["results"])
    finally:
        sc.stop()
