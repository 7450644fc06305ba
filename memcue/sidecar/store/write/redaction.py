"""Secrets out of memories before they are stored, indexed or embedded: each becomes a typed marker such as
``[REDACTED:aws-access-key]``; the text around it (and the name of an assigned secret) is kept.

What is found: cloud keys (AWS access key ids and secret keys next to an ``aws_secret_access_key``-like name,
GCP API keys, Azure storage account keys and SAS signatures), GitHub, GitLab, Slack (tokens and webhook URLs),
npm, Hugging Face and Stripe tokens, OpenAI- and Anthropic-style API keys, JWTs, ``Bearer`` tokens, PEM private
key blocks (the whole block), the password of ``scheme://user:pass@host`` (user and host kept) and
``password=`` / ``secret:`` / ``token=`` / ``api_key=`` style assignments (quoted or not; the name is kept).
Prefixes and lengths follow the vendors' documented formats as gitleaks and detect-secrets encode them.

Why not detect-secrets (1.5.0, evaluated in a scratch venv): it is built to scan files for review, not to
rewrite text. (1) It reports a secret's value, not its span, and for several kinds not even the whole value:
GitHub and GitLab tokens come back as their prefix only (``ghp``, ``glpat``), a JWT without its signature, a
PEM key as its ``BEGIN … PRIVATE KEY`` header line (it scans line by line), so replacing what it reports would
leave most of the secret in place. (2) It has no detector for OpenAI ``sk-proj-``, Anthropic ``sk-ant-``, GCP
``AIza`` keys or an unquoted ``aws_secret_access_key = …``. (3) With its entropy plugins (needed for generic
keys) it flags ordinary words, git commit hashes, UUIDs, sha256 digests and base64 test data (on a 16-line
sample of prose and code every line had findings) and costs 1.1 ms per 200-character memory; its regex plugins
alone cost 0.21 ms. This module: 0.006-0.04 ms per 150-200-character memory (prose to code-like text);
``tests/test_redaction.py`` holds the false-positive cases.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

#: The marker that replaces a secret of ``kind``.
MARKER = "[REDACTED:{kind}]"


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    #: Builds the replacement from the match (None: the whole match becomes the marker); returns None to keep
    #: the match (a validator said it is not a secret).
    replace: Callable[[re.Match[str]], str | None] | None = None


def _marker(kind: str) -> str:
    return MARKER.format(kind=kind)


#: Values that name a secret rather than being one: placeholders, variables, templates, code references.
_NOT_A_VALUE = re.compile(
    r"""^(?:
        \$\{?[A-Za-z_][A-Za-z0-9_]*\}?           # $VAR, ${VAR}
      | \{\{.*\}\} | \{[A-Za-z_]*\} | %\([a-z_]+\)s | %s   # templates
      | <[^<>]*> | \*+ | x{3,} | \.{3} | …       # <your-token>, ****, xxx, ...
      | (?i:none|null|nil|true|false|undefined|required|optional|empty|redacted|changeme|secret|password|token)
      | \[REDACTED:[a-z0-9-]+\]
      | [A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\s*[(\[].*   # get_token(), os.environ[...]
      | [A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+            # settings.SECRET_KEY
    )$""",
    re.VERBOSE,
)


def _plausible(value: str, *, quoted: bool) -> bool:
    """Whether an assigned value looks like a secret: not a placeholder or code reference; an unquoted one
    also at least 6 characters with a digit, a symbol or mixed case (so ``token: the`` in prose stays)."""
    if not value or _NOT_A_VALUE.match(value):
        return False
    if quoted:
        return len(value) >= 3
    if len(value) < 6:
        return False
    return (any(c.isdigit() for c in value) or not value.isalnum()
            or (any(c.isupper() for c in value) and any(c.islower() for c in value)))


# -- assignments: password = "…", API_TOKEN=…, "secret": "…" --------------------------------------------------
#: A name's last part that makes its value a secret, and the marker kind.
_SECRET_WORDS = {"password": "password", "passwd": "password", "pwd": "password", "passphrase": "password",
                 "pass": "password", "secret": "secret", "token": "token", "apikey": "api-key"}
#: Two-part endings (``api_key``, ``AccessKey``, ``client_secret`` is covered by ``secret``).
_SECRET_PAIRS = {("api", "key"): "api-key", ("access", "key"): "api-key", ("secret", "key"): "secret",
                 ("private", "key"): "secret", ("auth", "key"): "api-key", ("account", "key"): "secret",
                 ("access", "token"): "token", ("auth", "token"): "token", ("client", "secret"): "secret"}
_NAME_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _name_kind(name: str) -> str | None:
    """The marker kind for an assignment to ``name`` (``DB_PASSWORD``, ``apiKey``, ``github.token``), or None
    when the name does not end in a secret word (``max_tokens``, ``token_count``, ``compass``)."""
    parts = [p.lower() for p in _NAME_PARTS.findall(name)]
    if not parts:
        return None
    if len(parts) >= 2 and (parts[-2], parts[-1]) in _SECRET_PAIRS:
        return _SECRET_PAIRS[(parts[-2], parts[-1])]
    return _SECRET_WORDS.get(parts[-1])


_ASSIGNMENT = re.compile(
    r"""(?P<name>(?P<nq>["']?)\b[A-Za-z][A-Za-z0-9_.\-]*(?P=nq))   # the name, maybe quoted (JSON, YAML)
        (?P<sep>\s*(?::=|=>|[:=])\s*)
        (?!["'`]?\[REDACTED:)                                     # already a marker
        (?:(?P<q>["'`])(?P<qval>[^"'`\n]{1,512})(?P=q)           # a quoted value
          |(?P<val>[^\s"'`,;)\]}]{1,512}))                       # or an unquoted one
    """,
    re.VERBOSE,
)


def _assignment(m: re.Match[str]) -> str | None:
    kind = _name_kind(m.group("name").strip("\"'"))
    if kind is None:
        return None
    quoted = m.group("q") is not None
    value = m.group("qval") if quoted else m.group("val")
    if not _plausible(value, quoted=quoted):
        return None
    q = m.group("q") or ""
    return f"{m.group('name')}{m.group('sep')}{q}{_marker(kind)}{q}"


# -- the rules, in order: whole blocks first, then specific formats, then generic assignments ---------------
def _keep_prefix(kind: str, group: str = "pre") -> Callable[[re.Match[str]], str]:
    return lambda m: m.group(group) + _marker(kind)


def _url_password(m: re.Match[str]) -> str | None:
    if _NOT_A_VALUE.match(m.group("pw")):
        return None
    return f"{m.group('pre')}{_marker('url-password')}@"


def _openai(m: re.Match[str]) -> str | None:
    body = m.group("body")
    # Real keys mix digits and letters; a kebab-case word after "sk-" (``sk-learn-style-wrapper``) does not.
    if not any(c.isdigit() for c in body) or not any(c.isalpha() for c in body):
        return None
    return _marker("openai-key")


_RULES: tuple[_Rule, ...] = (
    _Rule("private-key", re.compile(
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        re.DOTALL)),
    _Rule("url-password", re.compile(r"(?P<pre>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\[\]]+:)(?P<pw>[^\s/?#@]+)@"),
          _url_password),
    _Rule("slack-webhook", re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+")),
    _Rule("azure-storage-key", re.compile(r"(?P<pre>\bAccountKey=)[A-Za-z0-9+/]{40,}={0,2}", re.IGNORECASE),
          _keep_prefix("azure-storage-key")),
    _Rule("azure-sas", re.compile(r"(?P<pre>[?&]sig=)[A-Za-z0-9%+/]{30,}={0,2}(?:%3D)*"),
          _keep_prefix("azure-sas")),
    _Rule("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b")),
    _Rule("aws-secret-key", re.compile(
        r"(?P<pre>(?i:\baws_?(?:secret_?(?:access_?)?key|secret)|\bsecret_?access_?key)[\"']?\s*(?:[:=]|=>)?\s*"
        r"[\"']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), _keep_prefix("aws-secret-key")),
    _Rule("gcp-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")),
    _Rule("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    _Rule("gitlab-token", re.compile(r"\bgl(?:pat|dt|rt|ptt|soat|cbt)-[A-Za-z0-9_\-]{20,}")),
    _Rule("slack-token", re.compile(r"\bxox[baprse]-[A-Za-z0-9\-]{10,}|\bxapp-\d-[A-Za-z0-9\-]{10,}")),
    _Rule("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    _Rule("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_\-]{20,})"), _openai),
    _Rule("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    _Rule("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    _Rule("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{34,}\b")),
    _Rule("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*")),
    _Rule("bearer-token", re.compile(r"(?P<pre>\b[Bb]earer\s+)(?!\[REDACTED:)[A-Za-z0-9._~+/\-]{20,}=*"),
          _keep_prefix("bearer-token")),
    _Rule("secret", _ASSIGNMENT, _assignment),
)

#: A cheap first look: text without any of these cannot hold a secret of any rule (most memories).
_MAYBE = re.compile(r"[=:]|PRIVATE KEY|AKIA|ASIA|ABIA|ACCA|A3T|AIza|gh[pousr]_|github_pat_|gl[a-z]{1,3}-|xox|xapp-"
                    r"|sk-|[rs]k_(?:live|test)|npm_|hf_|eyJ|[Bb]earer|sig=")


_MARKED = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")


@dataclass(frozen=True)
class Redacted:
    """``text`` with secrets replaced, and how many were (``count``) of which ``kinds``."""

    text: str
    count: int
    kinds: tuple[str, ...] = ()


def redact(text: str) -> Redacted:
    """Replace every secret in ``text`` with its marker (see the module docstring). Never raises; text
    without a secret comes back unchanged (the same object)."""
    if not _MAYBE.search(text):
        return Redacted(text, 0)
    kinds: list[str] = []
    for rule in _RULES:

        def sub(m: re.Match[str], rule: _Rule = rule) -> str:
            out = _marker(rule.kind) if rule.replace is None else rule.replace(m)
            if out is None:
                return m.group(0)
            kinds.append(rule.kind if rule.replace is not _assignment else _MARKED.search(out).group(1))
            return out

        text = rule.pattern.sub(sub, text)
    return Redacted(text, len(kinds), tuple(kinds))
