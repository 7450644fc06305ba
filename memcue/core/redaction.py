"""Secrets out of text before it is spooled, stored, indexed, embedded or logged: each becomes a typed marker
such as ``[REDACTED:aws-access-key]``; the text around it (and the name of an assigned secret) is kept.

Standard library only: the hook's spool writer and log (``memcue.hooks``) and the store's one write-preparation
path (``memcue.sidecar.store.write.prepare``) both call ``redact``. A hook is a new process each time, so no
pattern is compiled at import: each rule names literal triggers and is compiled the first time a text holds one
(a tool record that names no secret word and no token prefix compiles nothing; ``benchmarks/redaction_cost.py``
measures it per record shape).

What is found:
- blocks and rows: PEM private keys (the whole block, also when cut before its END line), cloud credential CSVs (a
  header naming a secret column such as ``Secret access key``, ``Password`` or ``client_secret``, quoted or not:
  those columns of every row), ``.netrc`` entries, ``.pgpass`` lines (``host:port:db:user:password``);
- vendor formats with a prefix, as the vendors document them and gitleaks encodes them: AWS (access key ids; a
  secret key after its id or next to an ``aws_secret_access_key``-like name), GCP API keys, Azure storage keys and
  SAS signatures, GitHub, GitLab, Slack (tokens, webhook URLs), OpenAI, Anthropic, Stripe (keys and ``whsec_``
  webhook secrets), npm, PyPI, RubyGems, Docker Hub, Hugging Face, SendGrid, Twilio (``SK`` key ids; ``AC`` account
  ids when the text names Twilio; an API secret right after its ``SK`` id), Resend, MessageBird and Cohere (by
  name), Brevo, Mailgun, HashiCorp Vault (tokens; unseal and recovery keys as ``vault operator init`` prints
  them), Doppler, Telegram and Discord bot tokens (a Discord token's first part must be a user id in base64, or its
  first and last parts mix digits with both cases) and Discord webhook URLs, DigitalOcean, Netlify, Fly.io, Shopify,
  Linear, Notion, NuGet, Atlassian, Postman, 1Password service accounts, age keys, Grafana, Sentry, Supabase
  (``sbp_``, ``sb_secret_``), Databricks, New Relic, Microsoft Entra client secrets (``…Q~…``), Teams webhooks,
  Sentry DSN keys, Honeycomb keys (``hcaik_`` …, and after ``x-honeycomb-team``), Cloudflare origin CA keys
  (``v1.0-…``), Airtable PATs (``pat….<hex>``), LaunchDarkly SDK and mobile keys (``sdk-``/``mob-`` and a UUID),
  Azure DevOps PATs in the 84-character format, Azure storage and Cosmos DB keys where the text is about storage
  keys or Cosmos DB, JWTs; a legacy ``s.`` Vault token when the text names Vault;
- credentials by their place: ``Authorization: <any scheme> …`` (``Bot``, ``SSWS`` …; a scheme memcue does not know
  needs a generated-looking credential) and FCM's ``key=``, ``"auths"`` entries of a Docker config, SQL ``IDENTIFIED
  BY '…'`` / ``PASSWORD '…'``, a password given third to ``new PDO(…)``/``mysqli(…)``/``DriverManager
  .getConnection(…)`` or second, after a user, to ``NetworkCredential``, ``PasswordAuthentication``, basic-auth
  helpers (``auth=(user, pw)``, ``SetBasicAuth``), LDAP binds and ``.login(user, pw)``; a literal signing key given
  to ``jwt.sign``/``jwt.encode``/``SignedString``; a literal key given to an SDK client (``AzureKeyCredential``,
  PagerDuty's ``APISession``, Segment's ``analytics.load``, ``algoliasearch(appId, …)``: generated-looking only); a
  literal set for or defaulted to a secret's name in a call (``define('DB_PASSWORD', …)``, ``props.put("….password",
  …)``, ``System.setProperty``, ``ENV.fetch('X_PASSWORD', …)``, ``os.getenv("API_TOKEN", …)``: no spaces);
  ``redis-cli -a``, ``requirepass``/``masterauth`` lines and ``CONFIG SET``; ``-u USER -p PW`` on one command line
  (mongodump, cqlsh; not mysql's ``-p db``), ``echo PW | … --password-stdin``, fish's ``set -x NAME value``, an
  ``*_AUTH`` variable's generated value (``REDISCLI_AUTH``), PgBouncer's userlist lines, a generated
  ``credentials:`` value (Prometheus), ``AuthenticationHeaderValue(scheme, …)``, Ruby's ``ENV.fetch(name) {
  default }``, Codecov's ``-t``; the password of ``scheme://user:pw@host`` (also with an empty user,
  ``redis://:pw@host``, or an e-mail address as the user) and of a Go DSN (``user:pw@tcp(…)``);
  ``curl -u user:pw`` / ``--user user:pw``, flags such as ``--token X``, ``--api-key=X``, ``--password X``
  (``--token-file path`` is a path), single-dash ones (keytool's ``-storepass``/``-srcstorepass``/``-keypass``,
  Go's ``-token=X``, PowerShell's ``-Password``), openssl's ``pass:…``, ``ConvertTo-SecureString '…'
  -AsPlainText``, ``-P``/``-D`` properties named as secrets (``-PnexusPassword=…``), ``mysql -p'pw'``, ``sshpass -p
  pw``, ``docker login``/``az login``/``oc login`` ``-p pw``, ``ldapsearch -w pw``, a password given positionally
  after its user (``rabbitmqctl add_user u pw``, ``htpasswd -b [-c] file u pw``, ``mosquitto_passwd -b``, ``net
  user u pw /add``, ``echo 'u:pw' | chpasswd``), a token given to ``snyk auth``/``ngrok authtoken``, npm's
  ``_auth=`` line and Yarn's ``npmAuthIdent``, a Kubernetes ``- name: <a secret's name>`` / ``value: …`` pair
  (``DB_PASSWORD``, ``AWS_SECRET_ACCESS_KEY``), an XML ``<add key="ClearTextPassword" value="…"/>`` pair or
  ``<password>…</password>`` element, a query parameter such as ``?appid=``/``&api_key=`` with a generated-looking
  value, a Terraform variable named as a secret (its ``default``), a password in a sentence (``the db password is
  …``, ``the ADO pat for the org is …``, ``user admin, pass …``, ``set `MQ_PASSWORD` in `.env` to …``, ``the webhook
  secret is …``, ``creds: admin / …``, ``the password you gave (…)``: the word after must look like a value), a key
  in one (``use this key: …``, ``the api key is …``: 20+ letters and digits with 3+ digits; hex only after ``api
  key``), a rotated credential given as ``the new one … is …`` in a text about credentials (a strong value only);
- assignments whose name ends in a secret word (``password``, ``passwd``, ``pwd``, ``pass``, ``psk``, ``secret``,
  ``token``, ``api_key``, ``PGPASSWORD``, ``client_secret`` …; ``*_PAT`` environment names), quoted or not, in code,
  JSON, YAML (nested blocks such as compose ``environment:``), ``.env`` files and shell ``export``; the name is
  kept. An environment-style name (``POSTGRES_PASSWORD``) or a config line (the name opens the line, the value ends
  it) is trusted with a short value; in prose a value must look like one (a digit, a symbol or mixed case). A
  ``*_KEY`` name (``STRIPE_KEY``) needs a key-like value (16+ characters, letters and digits), a lower-case one
  (``routing_key``) a generated-looking one; so does an environment name with a secret word inside
  (``SECRET_KEY_BASE``: 16+ characters mixing digits and both cases, or 32+ hex digits). A ``…passphrase`` name
  takes 4+ lower-case words joined by ``-`` (``cinder-otter-maple-raven``). A header or pair inside a quoted string
  (``-H "X-Api-Key: …"``, a JSON-encoded command) is an assignment too.

Not secrets, kept as written: examples (``sk-...``, ``YOUR_API_KEY``, ``django-insecure-change-me``, ``ghp_XXXX…``,
``hf_***``, a PEM block with no key in it), a flag named in prose (``use --password via stdin``, ``the --token
flag``, ``the -password option``), the verb "pass" before code (``pass `strict=True```), upper-case
metavariables (``rabbitmqctl add_user USER PW``), ``@file`` values, openssl/keytool references (``-passin env:X``,
``-storepass:env X``), validation rule lists (``required|min:12``), secret-store paths (``prod/db/password``, also
with a field: ``secret/data/db:password`` in an Ansible ``hashi_vault`` lookup), elided values (``whsec_...``),
versions (``^9.0.2``), test output (``--- PASS: TestX``), a shell expansion (``${DB_PASSWORD:?set it}``), an ARN's
``secret:`` part, placeholders and references (``${VAR}``, ``<token>``, ``get_token()``, ``settings.SECRET_KEY``: a
dotted name only where code can stand, not in a quoted string, a URL or a shell argument), f-string fields
``{cfg['pw']}``, YAML tags ``!vault``, identifiers that name a secret such as ``--secret=db-password``, the rest of
an ``==``), paths (``PWD=/home/me/src``), numbers and durations (``TOKEN_TTL=3600``, ``timeout: 30s``; a password of
6+ digits is still a password), lower-case identifiers in prose or YAML (``pass: test_login_flow``), names that only
start with a secret word (``password_reset_url``, ``token_count``), git SHAs, detect-secrets' ``hashed_secret``
digests, Sealed Secrets' ciphertext (``encryptedData:``), UUIDs and sha256 and sha512 digests (``sha512-…`` integrity
hashes; bare hex or a UUID is a secret only where a vendor's call or command takes one:
``algoliasearch(appId, '…')``, ``snyk auth …``, ``the api key is …``). ``tests/test_redaction.py`` holds both
lists; ``benchmarks/redaction_quality.py`` measures misses and false positives on a dev split and held-out splits.

Why not detect-secrets (1.5.0, evaluated in a scratch venv): it is built to scan files for review, not to
rewrite text. (1) It reports a secret's value, not its span, and for several kinds not even the whole value:
GitHub and GitLab tokens come back as their prefix only (``ghp``, ``glpat``), a JWT without its signature, a
PEM key as its ``BEGIN … PRIVATE KEY`` header line (it scans line by line), so replacing what it reports would
leave most of the secret in place. (2) It has no detector for OpenAI ``sk-proj-``, Anthropic ``sk-ant-``, GCP
``AIza`` keys or an unquoted ``aws_secret_access_key = …``. (3) With its entropy plugins (needed for generic
keys) it flags ordinary words, git commit hashes, UUIDs, sha256 digests and base64 test data and costs 1.1 ms
per 200-character memory. gitleaks (Go) cannot run in the hook's interpreter; its rule formats are followed here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memcue.core.limits import (
    CAPTURE_MAX_CHARS,
    CAPTURE_TAIL_CHARS,
    CUT_MARKER,
    PRECUT_CHARS,
    PRECUT_GUARD_CHARS,
    cap_text,
    cut_ends,
    join_ends,
)

#: The marker that replaces a secret of ``kind``.
MARKER = "[REDACTED:{kind}]"
_MARKED = r"\[REDACTED:([a-z0-9-]+)\]"


def _marker(kind: str) -> str:
    return MARKER.format(kind=kind)


class Redacted:
    """``text`` with secrets replaced, and how many were (``count``) of which ``kinds`` (marker kinds, in the
    order the rules found them)."""

    __slots__ = ("text", "count", "kinds")

    def __init__(self, text: str, count: int, kinds: tuple[str, ...] = ()) -> None:
        self.text = text
        self.count = count
        self.kinds = kinds

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Redacted) and (self.text, self.count, self.kinds) == (
            other.text, other.count, other.kinds)

    def __hash__(self) -> int:
        return hash((self.text, self.count, self.kinds))

    def __repr__(self) -> str:
        return f"Redacted(text={self.text!r}, count={self.count}, kinds={self.kinds!r})"


#: A replacement: the match -> its new text, or None to keep the match (a validator said it is no secret).
Replace = Callable[[re.Match[str]], "str | None"]


class _Rule:
    """One kind of secret: ``source`` compiled on first use, tried only when ``text`` holds one of ``triggers``
    (``fold``: looked for in the lower-cased text; empty: always). ``replace`` builds the new text (None: the
    whole match becomes the marker of ``kind``); ``scan`` replaces the regex substitution altogether."""

    __slots__ = ("kind", "source", "flags", "triggers", "fold", "replace", "scan", "_pattern")

    def __init__(self, kind: str, source: str, triggers: tuple[str, ...] = (), *, fold: bool = False,
                 flags: int = 0, replace: Replace | None = None,
                 scan: Callable[[re.Pattern[str], str, list[str]], str] | None = None) -> None:
        self.kind, self.source, self.flags, self.triggers, self.fold = kind, source, flags, triggers, fold
        self.replace, self.scan = replace, scan
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(self.source, self.flags)
        return self._pattern

    def wanted(self, text: str, lower: str) -> bool:
        hay = lower if self.fold else text
        return not self.triggers or any(t in hay for t in self.triggers)

    def apply(self, text: str, kinds: list[str]) -> str:
        if self.scan is not None:
            return self.scan(self.pattern, text, kinds)

        def sub(m: re.Match[str]) -> str:
            if self.replace is None and _example_value(m.group(0)):
                return m.group(0)  # a vendor prefix on a made-up body: ghp_XXXX…, xoxb-your-token
            out = _marker(self.kind) if self.replace is None else self.replace(m)
            if out is None:
                return m.group(0)
            found = re.findall(_MARKED, out)
            kinds.extend(found or [self.kind])
            return out

        return self.pattern.sub(sub, text)


# -- what a value must look like ------------------------------------------------------------------------------
#: Values that name a secret rather than being one: placeholder words (compared lower-cased) ...
_PLACEHOLDER_WORDS = frozenset(
    "none null nil true false yes no undefined required optional empty redacted changeme secret password passwd "
    "pass pw pwd token string str int bytes ... … replace_me replaceme replace-me placeholder todo tbd "
    "your_token your-token your_password your-password your_api_key your-api-key read write enabled disabled "
    "inherit auto default dev test local demo wrong invalid bad incorrect".split())
#: English words that follow a flag or a secret's name in prose, not a value (``use --password via stdin``,
#: ``Set --api-key from the environment``).
_PROSE_WORDS = frozenset(
    "a an the and or but if is are was be to of in on at by for from via with without into instead only when "
    "then this that these those it its as must should will can may not never always here there first so "
    "because since unless until while where which who what how why do does did has have had you we they it's "
    "also too just than like flag option argument parameter variable setting field".split())
#: Words that mark a made-up value in an example (``django-insecure-change-me``, ``REPLACE_WITH_YOUR_KEY``,
#: ``your-api-key-here``), compared with the value's ``_``/``-`` separated words, lower-cased.
_EXAMPLE_WORDS = frozenset(
    "your yours my replace change changeme me here example examples sample placeholder insecure dummy todo "
    "tbd xxx xxxx redacted".split())
#: ... and prefixes of variables, templates and command substitutions (``$VAR``, ``${{ … }}``, ``$(gh auth
#: token)``, ``{{ .Values.x }}``, ``{t['pw']}``, ``<your-token>``, ``%(name)s``, a marker already there), the
#: rest of an ``==`` (``tiktoken==0.12.0``) and an Azure Key Vault reference in app settings.
_PLACEHOLDER_PREFIXES = ("$", "`", "{", "<", "%(", "%s", "[REDACTED:", "=", "(", "@Microsoft.KeyVault(")
_PATH_CHARS = frozenset("_.@+-/~")


def _is_reference(value: str, *, code: bool = True) -> bool:
    """A code reference or a path: ``get_token()``, ``os.environ[...]``, ``settings.SECRET_KEY``, ``{name}``,
    ``[CLS]``, ``/home/me/src``, ``~/.ssh/id_rsa``, ``./token.txt``, ``C:\\Users\\me`` (plain string work: no
    pattern to compile in a hook process). ``code`` False: the value stands where code cannot (a quoted string,
    a YAML value, a URL, a shell argument), so a dotted name (``Copper89.Tundra``) is no attribute access there;
    a call or an index still is. A dotted name with a part that mixes digits and both cases is never code."""
    if value.startswith(("/", "~/", "./", "../")):
        return all(c.isalnum() or c in _PATH_CHARS for c in value)
    if value[1:3] == ":\\":
        return " " not in value
    if len(value) > 2 and value[0] == value[-1] == "%" and value[1:-1].replace("_", "a").isalnum():
        return True  # a Windows environment variable: %NUGET_PASSWORD%
    value = value.replace("::", ".").removesuffix("!")  # Rust/C++/PHP paths (std::env::var), TypeScript's x!
    if value[:1] in "{[" and value[-1:] in "}]":
        inner = value[1:-1]
        return not inner or inner.replace("_", "a").isalpha()
    cuts = [i for i in (value.find("("), value.find("[")) if i > 0]
    head = value[:min(cuts)].rstrip() if cuts else value
    parts = head.replace("?.", ".").split(".")  # JavaScript's optional chaining: a?.b is a.b
    return ((bool(cuts) or ("." in head and code)) and all(part.isidentifier() for part in parts)
            and (bool(cuts) or not any(_random_looking(part) or _password_part(part) for part in parts)))


def _password_part(word: str) -> bool:
    """A 6+ character word mixing digits with upper- and lower-case letters (``Copper89``, ``L1LgZk``)."""
    return (len(word) >= 6 and any(c.isdigit() for c in word) and any(c.isupper() for c in word)
            and any(c.islower() for c in word))


#: Shapes that stand where a value would without being one: a file given with ``@`` (``@password.txt``), a
#: validation rule list (``required|string|min:12``), a sub-option (``id=npmrc,src=…``), a file name
#: (``auth.txt``, ``client.pem``).
_NOT_VALUE_SHAPES = (r"^(?:[\w.\-/~]+\.(?:txt|json|pem|key|env|conf|cfg|ya?ml|ini|toml|gpg|asc|crt|p12|pfx|jks|ovpn|"
                     r"example|sample|template|dist|local|md|lock)$|[\w.\-]+:v?\d+(?:\.\d+)+$|[a-z]+(?:[A-Z][a-z]+)+$|"
                     r"@[\w./~\-]+$|[a-z_]+(?::[\w,.]+)?(?:\|[a-z_]+(?::[\w,.]+)?)+$|[a-z]+=[^\s]*,)")
#: Ports as ``-p`` takes them in docker and ssh (``8080:80``, ``5432/tcp``).
_PORTS = r"\d+(?::\d+)*(?:/(?:tcp|udp))?"
#: A secret manager's reference, a scheme and a path with no user info (``op://Dev/postgres/password``,
#: ``vault:secret/data/app#db_password``); ``base64:`` values (Laravel's ``APP_KEY``) are secrets.
_URI_REFERENCE = r"^(?!base64:)[a-z][a-z0-9+.\-]{0,20}:(?://)?[\w.\-#:]*/[\w.\-#:/]*$"
#: Lower-case words joined by ``/``, maybe with a field after ``:`` or ``#`` (``prod/db/password``,
#: ``secret/data/db:password`` as Ansible's hashi_vault lookup takes it).
_STORE_PATH = r"^[a-z][a-z0-9_\-]*(?:/[a-z0-9_\-]+)+(?:[:#][a-z0-9_\-]+)?$"
#: Four or more of one masking letter: ``sk_test_xxxxxxxx``, ``ghp_XXXXXXXX``.
_MASK_RUN = r"(?:x{4,}|X{4,})(?![A-Za-z0-9]*[A-WYZa-wyz0-9])"
#: First words of an instruction standing where a value would (``fill in``, ``paste your token``).
_FILL_WORDS = frozenset("fill paste insert enter put set add fixme tbd todo see use ask".split())


def _example_value(value: str) -> bool:
    """A made-up value in an example or a doc: elided (``sk-...``, ``123456:ABC-DEF…``), an upper-case
    ``WORD_WORD`` name standing for a value (``YOUR_SENDGRID_API_KEY``), or words only (letters joined by ``_``,
    ``-``, ``.``) one of which marks an example (``_EXAMPLE_WORDS``: ``django-insecure-change-me``); masked
    (``hf_***``, a run of ``xxxx`` to its end); an instruction (``TODO: set in vault``)."""
    if "..." in value or "\u2026" in value or "***" in value or re.search(_MASK_RUN, value):
        return True
    if "<" in value and ">" in value or "your" in re.split(r"[^a-z]+", value.lower()):
        return True  # r8_<paste-your-token>, xoxb-your-token
    first = re.split(r"[^A-Za-z]+", value, maxsplit=1)[0].lower()
    if " " in value and first in _EXAMPLE_WORDS | _FILL_WORDS:
        return True  # "TODO: set in vault", "paste your token here"
    words = value.replace("-", "_").replace(".", "_").split("_")
    if len(words) < 2 or not all(w.isalpha() for w in words):
        return False
    return value.replace("_", "").isupper() or any(w.lower() in _EXAMPLE_WORDS for w in words)


def _salt(value: str) -> bool:
    """A 40+ character value with no space that mixes digits, both cases and symbols (WordPress' ``AUTH_KEY``
    salts, ``(fm@1452!Xb…``): generated, whatever character it opens with."""
    return (len(value) >= 40 and " " not in value and any(c.isdigit() for c in value)
            and any(c.isupper() for c in value) and any(c.islower() for c in value)
            and any(not c.isalnum() for c in value))


def _random_looking(word: str) -> bool:
    """A 16+ character run of digits, upper- and lower-case letters (``PDxG1ihkBJQLquiN``): no code name."""
    return (len(word) >= 16 and any(c.isdigit() for c in word) and any(c.isupper() for c in word)
            and any(c.islower() for c in word))


def _not_a_value(value: str, *, code: bool = True) -> bool:
    """True when ``value`` names a secret rather than being one (placeholder words, prose words, examples,
    variables, templates, code references, paths), or is masked (``****``, ``xxx``). ``code``: as in
    ``_is_reference``."""
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or low in _PROSE_WORDS:
        return True
    if value.startswith(_PLACEHOLDER_PREFIXES) and not _salt(value):
        return True
    if _example_value(value) or re.match(_NOT_VALUE_SHAPES, value) or re.match(_URI_REFERENCE, value):
        return True
    if re.match(_STORE_PATH, value) and any(word in value for word in _NAMING_WORDS):
        return True  # a path in a secret store: prod/db/password
    if len(value) >= 3 and (set(value) == {"*"} or set(value.lower()) == {"x"}):
        return True
    if re.match(_YAML_TAG, value):
        return True
    if re.match(_IDENTIFIER, value) and any(word in value for word in _NAMING_WORDS):
        return True
    return _is_reference(value, code=code)


#: A number, or a duration: ``3600``, ``30s``, ``1.5h``.
_NUMBER = r"^\d+(?:\.\d+)?(?:ms|s|m|h|d|w|y|sec|min)?$"
#: Lower-case words joined by ``_`` or ``-`` without a digit (``test_login_flow``): an identifier.
_IDENTIFIER = r"^[a-z]+(?:[_-][a-z]+)+$"
#: An identifier holding one of these names a secret (``--secret=db-password``, ``secret: api-token``).
_NAMING_WORDS = ("password", "passwd", "secret", "token", "key", "credential")
#: Capitalised words run together without a digit (``NotPresent``, ``ConnectionRefused``): a code name.
_PASCAL_CASE = r"^(?:[A-Z][a-z]+){2,}$"
#: A YAML tag standing where a value would (``password: !vault |``, ``secret: !Ref DbSecretArn``).
_YAML_TAG = r"^!!?[A-Za-z]+$"
#: An environment-variable name (``POSTGRES_PASSWORD``, ``PGPASSWORD``).
_ENV_NAME = r"^[A-Z][A-Z0-9_]*$"


#: A version or a version range (``^9.0.2``, ``~2.4``, ``>=1.2``, ``v3.1.0``): a dependency, not a secret.
_VERSION = r"^(?:[\^~<>=!]=?|v)?\d+(?:\.(?:\d+|x|\*))+(?:[-+.][0-9A-Za-z.\-]+)?$"


def _plausible(value: str, *, quoted: bool, kind: str, env: bool, config: bool, key_only: bool,
               literal: bool = False) -> bool:
    """Whether an assigned ``value`` looks like a secret of ``kind`` (see the module docstring). ``env``: the
    name is an environment variable's; ``config``: the assignment is a config line; ``key_only``: the name only
    ends in ``key``; ``literal``: the value stands where no code can (a YAML value on its own lines)."""
    if not value or _not_a_value(value, code=not (quoted or literal)) or re.match(_VERSION, value):
        return False
    if re.match(_NUMBER, value):
        return kind == "password" and value.isdigit() and len(value) >= 6
    if key_only and not env:  # ``routing_key``, ``sort_key``: only a generated-looking value is a secret
        return _random_looking(value) or (len(value) >= 32 and all(c in "0123456789abcdef" for c in value.lower()))
    if key_only:
        return (len(value) >= 16 and " " not in value and any(c.isdigit() for c in value)
                and any(c.isalpha() for c in value))
    if quoted or env:
        return len(value) >= 3
    if re.match(_IDENTIFIER, value) or re.match(_PASCAL_CASE, value):
        return False
    if config:
        return len(value) >= 3
    if len(value) < 6:
        return False
    return (any(c.isdigit() for c in value) or not value.isalnum()
            or (any(c.isupper() for c in value) and any(c.islower() for c in value)))


# -- assignments: password = "…", API_TOKEN=…, "secret": "…", POSTGRES_PASSWORD: … ---------------------------
#: A name's last part that makes its value a secret, and the marker kind.
_SECRET_WORDS = {"password": "password", "passwd": "password", "pwd": "password", "passphrase": "password",
                 "pass": "password", "psk": "password", "secret": "secret", "token": "token", "apikey": "api-key"}
#: Endings of a one-part name (``PGPASSWORD``, ``csrftoken``) that make it a secret's name.
_SECRET_ENDINGS = (("password", "password"), ("passwd", "password"), ("passphrase", "password"),
                   ("secret", "secret"), ("token", "token"), ("apikey", "api-key"))
#: Two-part endings (``api_key``, ``AccessKey``; ``client_secret`` is covered by ``secret``).
_SECRET_PAIRS = {("api", "key"): "api-key", ("access", "key"): "api-key", ("secret", "key"): "secret",
                 ("private", "key"): "secret", ("auth", "key"): "api-key", ("account", "key"): "secret",
                 ("access", "token"): "token", ("auth", "token"): "token", ("client", "secret"): "secret",
                 ("signing", "key"): "secret", ("encryption", "key"): "secret", ("master", "key"): "secret",
                 ("fernet", "key"): "secret"}
_NAME_PARTS = r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])"


def _name_kind(name: str) -> tuple[str, bool] | None:
    """The marker kind for an assignment to ``name`` (``DB_PASSWORD``, ``apiKey``, ``github.token``) and whether
    only a ``*_KEY`` ending made it one; None when the name does not end in a secret word (``max_tokens``,
    ``token_count``, ``compass``, ``password_reset_url``)."""
    parts = [p.lower() for p in re.findall(_NAME_PARTS, name)]
    if not parts or name == "PASS" or parts[-2:] == ["public", "key"]:
        # a test runner's verdict (``--- PASS: TestX``) or a public key: not a secret's name
        return None
    if len(parts) >= 2 and parts[-2] == "hashed":
        return None  # a digest kept to recognise a secret (detect-secrets' ``hashed_secret``), not the secret
    if len(parts) >= 2 and (parts[-2], parts[-1]) in _SECRET_PAIRS:
        return _SECRET_PAIRS[(parts[-2], parts[-1])], False
    if parts[-1] in _SECRET_WORDS:
        return _SECRET_WORDS[parts[-1]], False
    for ending, kind in _SECRET_ENDINGS:
        if parts[-1].endswith(ending):
            return kind, False
    if parts[-1] == "key" and len(parts) >= 2:
        return "api-key", True
    return None


#: A name ending in a secret word, its separator, and (looked at, not consumed, so a name inside a value that is
#: no secret is still seen) its value.
_ASSIGNMENT = (
    r"""(?<![A-Za-z0-9_.\-])(?P<nq>["']?)
        (?P<name>(?:[A-Za-z][A-Za-z0-9_.\-]{0,100}?)?(?i:pass(?:word|wd|phrase)?|pwd|psk|secret|token|key))(?P=nq)\]?
        (?P<sep>[ \t]*(?::=|=>|[:=])[ \t]*)
        (?=(?!["'`]?\[REDACTED:)
          (?:(?P<q>["'`])(?P<qval>[^"'`\n]{1,512})(?P=q)            # a quoted value
            |(?P<val>[^\s"'`,;)\]}]{1,512})))                      # or an unquoted one
    """)
#: What may stand before a name that opens a config line: indentation, a YAML list dash, ``export``/``set``.
_LINE_OPENER = r"^[ \t]*(?:-[ \t]+)?(?:export[ \t]+|set[ \t]+|ENV[ \t]+)?$"


def _config_line(m: re.Match[str], value_end: int) -> bool:
    """True when the name opens its line and the value ends it (a comment may follow): a config file's line."""
    text = m.string
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", value_end)
    rest = text[value_end:end if end >= 0 else len(text)].strip()
    return bool(re.match(_LINE_OPENER, text[start:m.start()])) and (not rest or rest.startswith("#"))


#: Where an assignment's name may end: a secret word, maybe a closing quote, then the separator. Found first (a
#: cheap scan), so the full pattern runs only where a secret's name may be.
_HINT = r"""(?i:pass(?:word|wd|phrase)?|pwd|psk|secret|token|key)["']?\]?[ \t]*(?::=|=>|[:=])"""
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_hint: list[re.Pattern[str]] = []


def _assignment_starts(text: str) -> list[int]:
    """Where the name of each possible secret assignment in ``text`` starts (its opening quote, if any)."""
    if not _hint:
        _hint.append(re.compile(_HINT))
    starts: list[int] = []
    for h in _hint[0].finditer(text):
        start, floor = h.start(), max(0, h.start() - 100)
        while start > floor and text[start - 1] in _NAME_CHARS:
            start -= 1
        if start > 0 and text[start - 1] in "\"'":
            start -= 1
        starts.append(start)
    return starts


def _sealed(text: str, at: int, value: str) -> bool:
    """True for a Bitnami Sealed Secret's ciphertext (base64 that opens with ``Ag``, under ``encryptedData:``):
    only the cluster's controller can decrypt it, and it is meant to be committed."""
    return "encryptedData:" in text[:at] and re.fullmatch(r"Ag[A-Za-z0-9+/]{100,}={0,2}", value) is not None


def _scan_assignments(pattern: re.Pattern[str], text: str, kinds: list[str]) -> str:
    """``text`` with the value of every secret assignment (``_ASSIGNMENT``) replaced by its marker."""
    out: list[str] = []
    done = 0
    for at in _assignment_starts(text):
        m = pattern.match(text, at) if at >= done else None
        if m is None and at >= done and text[at] in "\"'":
            # A quote around the whole pair ('-H "X-Api-Key: …"', a JSON string holding a command); one that
            # closes right after the separator ('"PGPASSWORD=" + x') is code.
            m = pattern.match(text, at + 1)
            m = m if m is not None and m.group("q") is None else None
        if m is None or _not_an_assignment(m):
            continue
        named = _name_kind(m.group("name"))
        if named is None:
            continue
        kind, key_only = named
        quoted = m.group("q") is not None
        if quoted and m.group("sep").lstrip() == ":" and not m.group("nq") and m.group("sep")[:1] in " \t":
            continue  # psql's variable interpolation (``PASSWORD :'newpw'``), not a name and its value
        value = m.group("qval") if quoted else m.group("val")
        if _sealed(text, at, value):
            continue
        start = m.start("qval") if quoted else m.start("val")
        end = start + len(value)
        config = _config_line(m, end + (1 if quoted else 0))
        # An environment name trusts a short value when it is set (``=``) or opens a config line; after a colon in
        # a log line or prose (``missing env var API_TOKEN: NotPresent``) the value must look like one.
        env = bool(re.match(_ENV_NAME, m.group("name"))) and ("=" in m.group("sep") or config)
        config = config and not env
        if not (_plausible(value, quoted=quoted, kind=kind, env=env, config=config, key_only=key_only)
                or _diceware(m.group("name"), value)):
            continue
        out.append(text[done:start])
        out.append(_marker(kind))
        kinds.append(kind)
        done = end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _diceware(name: str, value: str) -> bool:
    """A passphrase of 4+ lower-case words joined by ``-`` given to a ``…passphrase`` name (``cinder-otter-maple-
    raven``): not an identifier there, unless a word is a placeholder, prose or an example's."""
    words = value.split("-")
    return (name.lower().endswith("passphrase") and len(words) >= 4 and all(w.isalpha() and w.islower() for w in words)
            and not any(w in _PLACEHOLDER_WORDS or w in _PROSE_WORDS or w in _EXAMPLE_WORDS or w in _FILL_WORDS
                        for w in words))


def _not_an_assignment(m: re.Match[str]) -> bool:
    """A name and separator that are part of something else: a shell expansion (``${DB_PASSWORD:?set it}``)
    or a colon-separated resource name (``arn:aws:secretsmanager:…:secret:prod/db``)."""
    text, at = m.string, m.start()
    if text[max(0, at - 2):at] == "${":
        return True
    return m.group("sep") == ":" and at > 0 and text[at - 1] == ":"


# -- the rules' replacements -----------------------------------------------------------------------------------
def _keep_prefix(kind: str, group: str = "pre") -> Replace:
    return lambda m: m.group(group) + _marker(kind)


def _url_password(m: re.Match[str]) -> str | None:
    if _not_a_value(m.group("pw"), code=False):
        return None
    return f"{m.group('pre')}{_marker('url-password')}@"


def _openai(m: re.Match[str]) -> str | None:
    body = m.group("body")
    # Real keys mix digits and letters; a kebab-case word after "sk-" (``sk-learn-style-wrapper``) does not.
    if not any(c.isdigit() for c in body) or not any(c.isalpha() for c in body):
        return None
    return _marker("openai-key")


def _valued(kind: str) -> Replace:
    """Keep ``pre`` and the quotes ``q`` around the value (``val``, or ``qval`` when quoted); the value becomes the
    marker unless it is a placeholder, a path, a variable, a number or another flag."""
    def replace(m: re.Match[str]) -> str | None:
        value = m.groupdict().get("qval") or m.group("val") or ""
        if not value or _not_a_value(value, code=False) or value.startswith("-") or re.match(_NUMBER, value):
            return None
        if "--" in m.group("pre") and (re.fullmatch(r"[A-Z][A-Z0-9_]{1,30}[\])>]*", value)
                                       or m.group("pre").endswith("  ")):
            return None  # a usage line: a metavariable ([--token TOKEN]) or a help table's description column
        if re.fullmatch(r"[A-Z]{2,}(?:_[A-Z]+)*[\])>]*[,.]?", value):
            return None  # a metavariable of a usage line or a comment (``rabbitmqctl add_user USER PW``)
        if re.fullmatch(_PORTS, value):
            return None  # -p 8080:80
        q = m.group("q") or ""
        return f"{m.group('pre')}{q}{_marker(kind)}{q}"
    return replace


def _key_like(kind: str) -> Replace:
    """Keep ``pre`` and the quotes ``q``; the value ``val`` becomes the marker only when it looks generated: 16+
    characters mixing digits and both cases, or 32+ hex digits (a name alone did not make it a secret)."""
    def replace(m: re.Match[str]) -> str | None:
        value = m.group("val")
        hex_digits = len(value) >= 32 and all(c in "0123456789abcdef" for c in value.lower())
        if _not_a_value(value) or not (hex_digits or _random_looking(value)):
            return None
        q = m.group("q") or ""
        return f"{m.group('pre')}{q}{_marker(kind)}{q}"
    return replace


#: What each character of a group of four stands for when base64 encodes three ASCII digits.
_DIGITS_B64 = ("MNO", "DTjz", "AEIMQUYcgk", "wxyz012345")


def _discord(m: re.Match[str]) -> str | None:
    # The first part is a user id (17-20 digits) in base64, or the token is plainly generated (its first and last
    # parts each mix digits with both cases); a dotted CamelCase name is neither.
    part, last = m.group("id"), m.group(0).rsplit(".", 1)[1]
    whole = len(part) - len(part) % 4
    if all(c in _DIGITS_B64[i % 4] for i, c in enumerate(part[:whole])) or (
            _password_part(part) and _password_part(last)):
        return _marker("discord-token")
    return None


def _prose_password(m: re.Match[str]) -> str | None:
    """A password given in a sentence (``the db password is Xy7-kq2p``, ``user admin, pass Blue62!``): kept
    unless the word after it looks like a value (6+ characters with a digit, a symbol or mixed case)."""
    value, q = m.group("val"), m.group("q") or ""
    said = m.group("pre").lower()
    if not re.search(r"\b(?:is|was|to|gave|sent|provided|shared|pasted|supplied)\b|=|pass|pw|creds|credentials|login"
                     r"|\b(?:log|sign)\w*[ \t]*in|\b(?:for|of|on|in)\b[^:]*:[ \t]*$", said):
        return None  # "stored secret 'prod/db'": a secret or token is given only with is/was/to/=
    if m.string.startswith(("..", "\u2026"), m.end("val")) or value.endswith("_"):
        return None  # elided: "the signing secret is whsec_..."
    if q == "`" and said.startswith("pass") and not said.startswith(("passw", "passp")) and (
            "=" in value or "(" in value or re.fullmatch(r"[A-Za-z_][A-Za-z_.]*", value)):
        return None  # the verb: "pass `strict=True`", "pass `disallowed_special`"
    if value.startswith("-") or not _plausible(value, quoted=bool(q), kind="password", env=False, config=False,
                                               key_only=False):
        return None
    return f"{m.group('pre')}{q}{_marker('password')}{q}"


def _hcl_variable(m: re.Match[str]) -> str | None:
    """A Terraform ``variable "db_password" {… default = "…"}``: the default of a variable named as a secret."""
    named = _name_kind(m.group("name"))
    value = m.group("val")
    if named is None or not _plausible(value, quoted=True, kind=named[0], env=False, config=True,
                                       key_only=named[1]):
        return None
    at = m.start("val") - m.start()
    return m.group(0)[:at] + _marker(named[0]) + m.group(0)[at + len(value):]


def _private_key(m: re.Match[str]) -> str | None:
    """The whole PEM block, unless its body holds no key material (``[redacted]``, ``...``: 40 characters at
    least, a short RSA key has hundreds)."""
    body = re.sub(r"\s", "", m.group("body"))
    return None if len(body) < 40 or _example_value(body) else _marker("private-key")


#: Authorization schemes whose credential may be any 8+ characters; another word's credential must look
#: generated (a digit, or both cases) so that prose after "Authorization:" stays.
_AUTH_SCHEMES = frozenset("basic token digest apikey api-key key sso-key accesskey access-key bot ssws splunk "
                          "geniekey dsn signature credential hmac negotiate ntlm".split())


_VALUED_PASSWORD = _valued("password")


def _user_password(m: re.Match[str]) -> str | None:
    """The value after ``-u USER … -p``: a password, except on a mysql/mariadb command line, where ``-p`` alone
    asks for one and the next word is the database."""
    line = m.string[m.string.rfind("\n", 0, m.start()) + 1:m.start()]
    command = re.split(r"[|;&]", line)[-1]
    if re.match(r"\s*(?:sudo\s+)?(?:\w+=\S*\s+)*(?:\S*/)?(?:mysql|mariadb)\w*\b", command):
        return None
    return _VALUED_PASSWORD(m)


def _generated(kind: str) -> Replace:
    """The whole match becomes the marker of ``kind`` when it mixes digits with both cases (a generated key), not
    when it is a code name (``re_compile_pattern_for_words``)."""
    def replace(m: re.Match[str]) -> str | None:
        return _marker(kind) if _random_looking(m.group(0).replace("_", "")) else None
    return replace


def _basic_credential(m: re.Match[str]) -> str | None:
    """A ``Basic`` credential: base64 that mixes cases or holds a digit (``Basic authentication`` is prose)."""
    cred = m.group("cred")
    if not (any(c.isdigit() for c in cred) or (any(c.isupper() for c in cred) and any(c.islower() for c in cred))):
        return None
    return m.group("pre") + _marker("basic-auth")


def _auth_header(m: re.Match[str]) -> str | None:
    scheme = (m.group("scheme") or "key=").lower()
    cred = m.group("cred")
    if scheme not in _AUTH_SCHEMES and scheme != "key=" and not (
            any(c.isdigit() for c in cred) or (any(c.isupper() for c in cred) and any(c.islower() for c in cred))):
        return None
    kind = "basic-auth" if scheme == "basic" else "auth-token"
    return m.group("pre") + _marker(kind)


#: Column names of a credential CSV whose fields are secrets (``Secret access key``, ``client_secret``).
_CSV_COLUMNS = (r"secret[ _]access[ _]key|password|secret|client[ _]secret|secret[ _]key|token|api[ _]key|"
                r"access[ _]token|private[ _]key")
#: A header cell: a column's name, maybe quoted (no brackets or operators: a line of code is no header).
_CSV_CELL = r"[\w \t\"'.\-]*"
#: A secret column's name next to a comma or a header's end: a CSV header may be there.
_CSV_TRIGGERS = tuple(f"{word}{end}" for word in ("password", "secret", "token", "key")
                      for end in (",", "\"", "\n", "\r"))
_CSV_SECRET_COLUMN = rf"(?i)^\s*[\"']?(?:[\w.\-]+[ _])?(?:{_CSV_COLUMNS})[\"']?\s*$"


def _credential_csv(m: re.Match[str]) -> str:
    """A CSV header naming secret columns, and the rows under it with those fields replaced."""
    header, rows = m.group("header"), m.group("rows")
    columns = header.split(",")
    secret = [i for i, c in enumerate(columns) if re.match(_CSV_SECRET_COLUMN, c)]
    out = []
    for row in rows.split("\n"):
        fields = row.split(",")
        if len(fields) == len(columns):
            for i in secret:
                if fields[i].strip():
                    fields[i] = _marker("cloud-credential")
        out.append(",".join(fields))
    return header + "\n" + "\n".join(out)


def _cli_password(program: str, flag: str, triggers: tuple[str, ...]) -> _Rule:
    """The password given to ``program``'s (a pattern) short ``flag`` (a pattern, with the spacing it allows
    before its value) later on the same command line: ``mysql -pPW``, ``sshpass -p PW``, ``redis-cli -a PW``."""
    return _Rule("password", rf"(?P<pre>\b(?:{program})\b[^\n|;&]{{0,300}}?[ \t]{flag})(?P<q>[\"']?)"
                 r"(?P<val>[^\s\"'`;|&)\-][^\s\"'`;|&)]*)(?P=q)", triggers, replace=_valued("password"))


#: An argument before the one a rule wants: a quoted string, an object literal or a plain expression
#: (``process.env.URL!``, ``user``, ``{ id: user.id }``).
_ARG = r"(?:'[^'\n]*'|\"[^\"\n]*\"|\{[^{}\n]*\}|[\w.!$\[\]]+)"


def _call_secret(kind: str, callee: str, before: int, triggers: tuple[str, ...], *, key_like: bool = False) -> _Rule:
    """The quoted literal given as argument ``before`` + 1 to a call of ``callee`` (a pattern), the ones before it
    plain (``_ARG``): ``new NetworkCredential(user, "pw")``, ``algoliasearch(appId, "key")``. ``key_like``: only a
    generated-looking value (16+ characters mixing digits and both cases, or 32+ hex digits)."""
    return _Rule(kind, rf"(?P<pre>{callee}\s*\(\s*(?:{_ARG}\s*,\s*){{{before}}})(?P<q>['\"])(?P<val>[^'\"\n]+)(?P=q)",
                 triggers, replace=_key_like(kind) if key_like else _valued(kind))


def _named_call(m: re.Match[str]) -> str | None:
    """A literal set for (or defaulted to) a secret's name in a call: ``define('DB_PASSWORD', '…')``,
    ``props.put("mail.smtp.password", "…")``, ``ENV.fetch('DB_PASSWORD', '…')``; a value with a space is a label."""
    named = _name_kind(m.group("name"))
    value = m.group("val")
    if named is None or any(c.isspace() for c in value) or not _plausible(
            value, quoted=True, kind=named[0], env=bool(re.match(_ENV_NAME, m.group("name"))), config=False,
            key_only=named[1]):
        return None
    return f"{m.group('pre')}{m.group('q')}{_marker(named[0])}{m.group('q')}"


def _named_value(kind: str | None = None) -> Replace:
    """Keep ``pre`` and the quotes ``q``; the value (``val``, or ``qval`` when quoted) becomes the marker (of
    ``kind``, or of the name's kind) when the name (group ``name``: ``AWS_SECRET_ACCESS_KEY``, ``nexusPassword``)
    is a secret's and the value looks like one (as a config line's would)."""
    def replace(m: re.Match[str]) -> str | None:
        named = _name_kind(m.group("name"))
        value = m.groupdict().get("qval") or m.group("val") or ""
        q = m.group("q") or ""
        if named is None or value.startswith("-") or not _plausible(
                value, quoted=bool(q), kind=named[0], env=bool(re.match(_ENV_NAME, m.group("name"))), config=True,
                key_only=named[1]):
            return None
        return f"{m.group('pre')}{q}{_marker(kind or named[0])}{q}"
    return replace


def _env_key(kind: str) -> Replace:
    """Keep ``pre`` and the quotes ``q``; the value ``val`` becomes the marker when it looks like a key given to an
    environment name (16+ characters, letters and digits, no placeholder)."""
    def replace(m: re.Match[str]) -> str | None:
        q = m.group("q") or ""
        if not _plausible(m.group("val"), quoted=bool(q), kind=kind, env=True, config=False, key_only=True):
            return None
        return f"{m.group('pre')}{q}{_marker(kind)}{q}"
    return replace


def _dash_flag(m: re.Match[str]) -> str | None:
    """A single-dash flag's secret (``keytool -storepass …``, Go's ``-token=…``, PowerShell's ``-Password '…'``);
    ``pass:``/``env:``/``file:`` values are openssl/keytool references (or already redacted)."""
    value = m.group("qval") or m.group("val") or ""
    if re.match(r"(?:pass|env|file|fd|stdin)(?::|$)", value):
        return None
    return _valued("password" if "pass" in m.group("flag").lower() else "secret")(m)


#: What makes a rotated credential's "new one" a password (``_rotated``): the text is about credentials ...
_CREDENTIAL_TALK = r"(?i)rotat|passw|passphrase|credential|\bcreds?\b|vault|secret|\bpw\b"
#: ... and the value is strong: 8+ characters with a digit and a letter, and mixed case or a symbol.
_STRONG = r"^(?=[^\s]*\d)(?=[^\s]*[A-Za-z])(?=[^\s]*(?:[A-Z][^\s]*[a-z]|[a-z][^\s]*[A-Z]|[!@#$%^&*+=?~]))\S{8,}$"


def _rotated(m: re.Match[str]) -> str | None:
    """A credential given as "the new one" (``rotated it, new one for the vpn user is "…"``): only in a text about
    credentials and only a strong value (``_STRONG``)."""
    value, q = m.group("val"), m.group("q") or ""
    if not re.search(_CREDENTIAL_TALK, m.string) or not re.match(_STRONG, value) or _not_a_value(value, code=False) \
            or re.match(_VERSION, value):
        return None
    return f"{m.group('pre')}{q}{_marker('password')}{q}"


def _prose_key(m: re.Match[str]) -> str | None:
    """A key given in a sentence (``use this key: …``, ``the api key is …``): 20+ letters and digits with 3+ digits;
    bare hex only after ``api key``/``access key`` (``the key is <sha>`` is a digest)."""
    value = m.group("val")
    hex_only = all(c in "0123456789abcdef" for c in value.lower())
    if sum(c.isdigit() for c in value) < 3 or not any(c.isalpha() for c in value) or _not_a_value(value) or (
            hex_only and not re.search(r"(?i)(?:api|access)[ \t]+key", m.group("pre"))):
        return None
    q = m.group("q") or ""
    return f"{m.group('pre')}{q}{_marker('api-key')}{q}"


def _htpasswd(m: re.Match[str]) -> str | None:
    """``htpasswd -b [-c] file user password`` (``-n``: no file) and ``mosquitto_passwd -b file user password``: the
    password, the last of the positional arguments."""
    words = m.group("args").split()
    flags = [w for w in words if w.startswith("-")]
    rest = words[len(flags):]
    if words[:len(flags)] != flags or "b" not in "".join(flags):
        return None
    wanted = 2 if "n" in "".join(flags) else 3
    if len(rest) < wanted:
        return None
    value = rest[wanted - 1]
    if value[0] not in "'\"":
        value = value.rstrip("'\",")  # the command inside a string literal: "… user pw",
    bare = value.strip("'\"")
    if not bare or _not_a_value(bare, code=False):
        return None
    args = m.group("args")
    at = args.index(value, len(" ".join(words[:len(flags) + wanted - 1])))
    q = value[0] if value[0] in "'\"" and value[-1] == value[0] and len(value) > 1 else ""
    return f"{m.group('pre')}{args[:at]}{q}{_marker('password')}{q}{args[at + len(value):]}"


#: Where a single-dash secret flag may be (``_dash_flag``): after a space.
_DASH_FLAG_TRIGGERS = ("storepass", "keypass", " -pass", " -api", " -token", " -auth", " -access", " -client",
                       " -secret")
#: A secret-named key's closing quote: where ``_named_call`` may apply.
_NAMED_CALL_TRIGGERS = tuple(f"{end}{q}" for end in ("word", "wd", "pass", "secret", "token", "key")
                             for q in "'\"")
_HEX = "[0-9a-f]"
#: How a Discord bot token starts: a user id's first digit (1-9) in base64.
_DISCORD_STARTS = ("MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT")
_TOKEN_END = r"(?![A-Za-z0-9_\-])"
#: The rules, in order: whole blocks first, then vendor formats, then credentials by place, then assignments.
#: A YAML key naming a secret whose value sits on the lines below it, more indented: a plain scalar, or a
#: ``|`` / ``>`` block (``MYSQL_ROOT_PASSWORD:`` then ``    s3cr3t`` on the next line).
_YAML_BLOCK = (r"(?m)^(?P<indent>[ \t]*)(?:-[ \t]+)?"
               r"(?P<name>(?:[A-Za-z][A-Za-z0-9_.\-]{0,100}?)?(?i:pass(?:word|wd|phrase)?|pwd|psk|secret|token|key))"
               r"[ \t]*:[ \t]*"
               r"(?:[|>][-+]?[0-9]?)?[ \t]*(?:#[^\n]*)?\n(?P<body>(?:(?P=indent)[ \t]+\S[^\n]*(?:\n|\Z))+)")


def _yaml_block(m: re.Match[str]) -> str | None:
    """The marker in place of a secret name's value on the following, more indented lines (``_YAML_BLOCK``);
    None (unchanged) when the name is no secret's or the lines are a nested mapping or list, not a value."""
    named = _name_kind(m.group("name"))
    lines = [line.strip() for line in m.group("body").splitlines() if line.strip()]
    if named is None or not lines or re.match(r"^(?:-\s|#|[\w.\-\"']+\s*:(?:\s|$))", lines[0]):
        return None
    kind, key_only = named
    value = " ".join(lines)
    env = bool(re.match(_ENV_NAME, m.group("name")))
    if not _plausible(value if len(lines) == 1 else value.replace(" ", ""), quoted=False, kind=kind, env=env,
                      config=True, key_only=key_only, literal=True):
        return None
    body = m.group("body")
    first_indent = body[:len(body) - len(body.lstrip(" \t"))]
    head = m.group(0)[:m.start("body") - m.start()]
    return f"{head}{first_indent}{_marker(kind)}" + ("\n" if body.endswith("\n") else "")


_RULES: tuple[_Rule, ...] = (
    _Rule("private-key", r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?P<body>.*?)"
          r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)", ("PRIVATE KEY",), flags=re.DOTALL,
          replace=_private_key),
    _Rule("cloud-credential", rf"(?im)^(?P<header>(?:{_CSV_CELL},)*[ \t]*[\"']?(?:[\w.\-]+[ _])?(?:{_CSV_COLUMNS})"
          r"[\"']?[ \t]*(?:,[^\n]*)?)\n(?P<rows>(?:[^\n]*,[^\n]*(?:\n|\Z))+)",
          _CSV_TRIGGERS, fold=True, replace=_credential_csv),
    _Rule("password", _YAML_BLOCK, ("pass", "pwd", "psk", "secret", "token", "key"), fold=True, replace=_yaml_block),
    _Rule("url-password", r"(?P<pre>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\[\]]*(?:@[^\s:/?#@\[\]]*)?:)(?P<pw>[^\s/?@]+)@",
          ("://",), replace=_url_password),
    _Rule("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
          ("hooks.slack.com",)),
    _Rule("azure-storage-key", r"(?P<pre>\bAccountKey=)[A-Za-z0-9+/]{40,}={0,2}", ("accountkey=",), fold=True,
          flags=re.IGNORECASE, replace=_keep_prefix("azure-storage-key")),
    _Rule("azure-sas", r"(?P<pre>[?&]sig=)[A-Za-z0-9%+/]{30,}={0,2}(?:%3D)*", ("sig=",),
          replace=_keep_prefix("azure-sas")),
    _Rule("aws-secret-key", r"(?P<pre>\b(?:AKIA|ASIA)[A-Z0-9]{16}\s*[,:;|]\s*)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
          ("AKIA", "ASIA"), replace=_keep_prefix("aws-secret-key")),
    # The secret given right after a Tencent (AKID…) or Alibaba (LTAI…) access key id.
    _Rule("cloud-secret-key", r"(?P<pre>\b(?:AKID[A-Za-z0-9]{32}|LTAI[A-Za-z0-9]{12,24})[\"']?\s*[,:;|]\s*[\"']?)"
          r"[A-Za-z0-9/+]{24,40}(?![A-Za-z0-9/+=])", ("AKID", "LTAI"), replace=_keep_prefix("cloud-secret-key")),
    # Backblaze B2 application keys: K, three digits, 27 more.
    _Rule("backblaze-key", r"\bK\d{3}[A-Za-z0-9+/]{27}(?![A-Za-z0-9+/])", ("K00",)),
    _Rule("twilio-auth-token", r"(?P<pre>\bRequestValidator\(\s*[\"'])[0-9a-f]{32}(?=[\"'])", ("RequestValidator",),
          replace=_keep_prefix("twilio-auth-token")),
    # A literal HMAC key: Python's hmac.new(b"…"), Ruby's HMAC.hexdigest(digest, '…', …), Node's createHmac(alg, '…').
    _Rule("secret", r"(?P<pre>\bhmac\.new\(\s*b?)(?P<q>['\"])(?P<val>[^'\"\n]{8,})(?P=q)", ("hmac.new",),
          replace=_valued("secret")),
    _Rule("secret", r"(?P<pre>\b(?:createHmac|HMAC\.(?:hexdigest|digest|base64digest))\s*\("
          r"(?:[^'\"(),\n]|\([^)\n]*\)|'[^'\n]*'|\"[^\"\n]*\")*?,\s*)(?P<q>['\"])(?P<val>[^'\"\n]{8,})(?P=q)",
          ("createHmac", "HMAC."), replace=_valued("secret")),
    _Rule("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
          ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
    _Rule("aws-secret-key", r"(?P<pre>(?i:\baws_?(?:secret_?(?:access_?)?key|secret)|\bsecret_?access_?key)"
          r"[\"']?\s*(?:[:=]|=>)?\s*[\"']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", ("secret",), fold=True,
          replace=_keep_prefix("aws-secret-key")),
    _Rule("gcp-api-key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", ("AIza",)),
    _Rule("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
          ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _Rule("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|soat|cbt)-[A-Za-z0-9_\-]{20,}",
          ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-")),
    _Rule("slack-token", r"\bxox[baprse]-[A-Za-z0-9\-]{10,}|\bxapp-\d-[A-Za-z0-9\-]{10,}", ("xox", "xapp-")),
    _Rule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", ("sk-ant-",)),
    _Rule("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_\-]{20,})", ("sk-",), replace=_openai),
    _Rule("stripe-key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", ("k_live_", "k_test_")),
    _Rule("webhook-secret", r"\bwhsec_[A-Za-z0-9+/=_\-]{20,}", ("whsec_",)),
    _Rule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    _Rule("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", ("pypi-AgE",)),
    _Rule("rubygems-token", rf"\brubygems_{_HEX}{{48}}\b", ("rubygems_",)),
    _Rule("docker-token", r"\bdckr_pat_[A-Za-z0-9_\-]{27,}", ("dckr_pat_",)),
    _Rule("huggingface-token", r"\bhf_[A-Za-z0-9]{34,}\b", ("hf_",)),
    _Rule("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{40,50}" + _TOKEN_END, ("SG.",)),
    _Rule("twilio-key", r"\bSK[0-9a-fA-F]{32}\b", ("SK",)),
    # The auth token goes with the account SID: the 32-hex value given right after one (``Client("AC…", "…")``).
    _Rule("twilio-auth-token", rf"(?P<pre>\bAC{_HEX}{{32}}[\"']?\s*,\s*[\"']?){_HEX}{{32}}\b", ("AC",),
          replace=_keep_prefix("twilio-auth-token")),
    _Rule("twilio-api-secret", r"(?P<pre>\[REDACTED:twilio-key\][\"']?\s*,\s*[\"']?)[A-Za-z0-9]{32}\b",
          ("twilio-key",), replace=_keep_prefix("twilio-api-secret")),
    _Rule("twilio-account", rf"\bAC{_HEX}{{32}}\b", ("twilio",), fold=True),
    _Rule("resend-key", r"\bre_[A-Za-z0-9_]{24,}\b", ("re_",), replace=_generated("resend-key")),
    # MessageBird access keys: 25 letters and digits, known by the vendor's name nearby (gitleaks' rule).
    _Rule("messagebird-key", r"(?<=[\"'`=: ])(?:live_|test_)?[A-Za-z0-9]{20,30}(?=[\"'`\s,;)]|$)", ("messagebird",),
          fold=True),
    # Cohere keys: 40 letters and digits, known by the vendor's name nearby (gitleaks' rule).
    _Rule("cohere-key", r"(?<=[\"'`=: ])[A-Za-z0-9]{40}(?=[\"'`\s,;)]|$)", ("cohere", "co_api_key"), fold=True),
    _Rule("brevo-key", r"\bx(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}\b", ("sib-",)),
    _Rule("incoming-webhook", r"(?P<pre>https?://[^\s/]+/hooks/)[a-z0-9]{26}\b", ("/hooks/",),
          replace=_keep_prefix("incoming-webhook")),
    _Rule("teams-webhook", r"https://[\w\-]+\.webhook\.office\.com/webhookb2/[\w\-@/]+", ("webhook.office.com",)),
    # A Sentry DSN's key (``https://<key>@o1.ingest.sentry.io/2``); the host and project are kept.
    _Rule("sentry-dsn", r"(?P<pre>https://)[0-9a-f]{32}(?::[0-9a-f]{32})?(?=@[\w.\-]*sentry)", ("sentry",),
          fold=True, replace=_keep_prefix("sentry-dsn")),
    _Rule("honeycomb-key", r"(?P<pre>\bx-honeycomb-team[\"']?\s*[:=]\s*)(?P<q>[\"']?)(?P<val>[A-Za-z0-9_]{16,})(?P=q)",
          ("honeycomb-team",), fold=True, replace=_valued("honeycomb-key")),
    # An Azure storage account or Cosmos DB key (86 base64 characters and ``==``) where the text is about storage
    # keys or Cosmos DB (a sha512 integrity digest has the same length: ``sha512-…`` is kept).
    _Rule("azure-storage-key", r"(?<![A-Za-z0-9+/])(?<!sha512-)[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])",
          ("storage", "keyname", "cosmos", "documents.azure.com"), fold=True),
    # A registry's ``"auth"`` in ~/.docker/config.json: base64 of user:password.
    _Rule("docker-auth", r"(?P<pre>\"auths?\"\s*:\s*\")(?P<q>)(?P<val>[A-Za-z0-9+/]{16,}={0,2})(?=\")", ("auths",),
          replace=_valued("docker-auth")),
    _Rule("mailgun-key", r"(?<![\w\-])key-(?=[a-z]*\d)[0-9a-z]{32}\b", ("key-",)),
    _Rule("vault-token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}", ("hvs.", "hvb.", "hvr.")),
    _Rule("vault-token", r"(?<![\w.\-])s\.[A-Za-z0-9]{24}" + _TOKEN_END, ("vault",), fold=True),
    _Rule("doppler-token", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{2,35}\.)?[A-Za-z0-9]{40,44}\b",
          ("dp.",)),
    _Rule("telegram-bot-token", r"(?<!\d)\d{5,16}:A[A-Za-z0-9_\-]{34}" + _TOKEN_END, (":A",)),
    _Rule("discord-token", r"\b(?P<id>[MNO][A-Za-z0-9_\-]{23,26})\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}"
          + _TOKEN_END, _DISCORD_STARTS, replace=_discord),
    _Rule("discord-webhook", r"(?P<pre>https://(?:canary\.|ptb\.)?discord(?:app)?\.com/api/webhooks/\d+/)"
          r"[A-Za-z0-9_\-]{40,}", ("discord",), fold=True, replace=_keep_prefix("discord-webhook")),
    _Rule("digitalocean-token", rf"\bdo[opr]_v1_{_HEX}{{64}}\b", ("_v1_",)),
    _Rule("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", ("shp",)),
    _Rule("netlify-token", r"\bnfp_[A-Za-z0-9]{36,48}\b", ("nfp_",)),
    # Mailgun's current private keys: 32 hex digits, then two groups of 8, where the text names Mailgun (gitleaks'
    # mailgun-private-api-token keyword; scanning every text with a dash for the shape cost 10 ms per 300 KB).
    _Rule("mailgun-key", r"\b[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}\b", ("mailgun",), fold=True),
    # Tailscale auth, OAuth client and API keys (``tskey-auth-<id>-<secret>``).
    _Rule("tailscale-key", r"\btskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}", ("tskey-",)),
    # Dynatrace API tokens: ``dt0c01.`` + 24 + ``.`` + 64 (gitleaks' dynatrace-api-token rule).
    _Rule("dynatrace-token", r"\bdt0[a-z]\d{2}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}\b", ("dt0",)),
    # Password hashes (crackable offline): crypt formats as htpasswd, /etc/shadow and Traefik's basic-auth labels
    # write them (bcrypt ``$2y$10$…``, Apache ``$apr1$…``, SHA-crypt ``$6$…``, yescrypt ``$y$…``; compose's ``$$``
    # escaping too), htpasswd's ``{SHA}`` and PgBouncer's quoted ``md5`` + 32 hex.
    _Rule("password-hash", r"(?<![\w$])\$\$?(?:2[abxy]|apr1|[156]|y)\$\$?(?:\d\d\$\$?|rounds=\d+\$|j9T\$)?"
          r"[./A-Za-z0-9]{8,}(?:\$\$?[./A-Za-z0-9]{8,})?", ("$2", "$apr1$", "$1$", "$5$", "$6$", "$y$", "$$")),
    _Rule("password-hash", r"\{S?SHA\}[A-Za-z0-9+/]{27,}={0,2}", ("SHA}",)),
    _Rule("password-hash", r"(?<=[\"'])md5[0-9a-f]{32}(?=[\"'])", ("md5",)),
    _Rule("notion-token", r"\b(?:ntn_[A-Za-z0-9]{40,50}|secret_[A-Za-z0-9]{43})\b", ("ntn_", "secret_")),
    _Rule("nuget-key", r"\boy2[a-z0-9]{43}\b", ("oy2",)),
    _Rule("atlassian-token", r"\bATATT3[A-Za-z0-9_\-=]{150,}", ("ATATT3",)),
    _Rule("fly-token", r"\b(?:fo1_[A-Za-z0-9_\-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})", ("fo1_", "fm1", "fm2")),
    _Rule("linear-key", r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b", ("lin_",)),
    _Rule("postman-key", rf"\bPMAK-{_HEX}{{24}}-{_HEX}{{34}}\b", ("PMAK-",)),
    _Rule("onepassword-token", r"\bops_eyJ[A-Za-z0-9+/_\-]{100,}={0,3}", ("ops_eyJ",)),
    _Rule("age-key", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b", ("AGE-SECRET-KEY-",)),
    _Rule("grafana-token", r"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})",
          ("glsa_", "glc_")),
    _Rule("sentry-token", r"\bsntr[ysu]_[A-Za-z0-9+/=_\-]{30,}", ("sntr",)),
    _Rule("supabase-token", rf"\bsbp_{_HEX}{{40}}\b", ("sbp_",)),
    _Rule("databricks-token", rf"\bdapi{_HEX}{{32}}(?:-\d)?\b", ("dapi",)),
    _Rule("newrelic-key", r"\bNRAK-[A-Z0-9]{27}\b", ("NRAK-",)),
    _Rule("honeycomb-key", r"\bhc[ax][im]k_[a-z0-9]{32,}\b", ("hcaik_", "hcxik_", "hcamk_", "hcxmk_")),
    _Rule("cloudflare-origin-ca-key", r"\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}\b", ("v1.0-",)),
    _Rule("supabase-token", r"\bsb_secret_[A-Za-z0-9_\-]{20,}", ("sb_secret_",)),
    _Rule("airtable-token", r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b", ("pat",)),
    # LaunchDarkly server-side SDK and mobile keys (a client-side id is public, and bare hex).
    _Rule("launchdarkly-key", r"\b(?:sdk|mob)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
          ("sdk-", "mob-")),
    # Azure DevOps PATs in the 84-character format: 52 random characters, JQQJ, …, AZDO at 76.
    _Rule("azure-devops-pat", r"\b[A-Za-z0-9]{52}JQQJ[A-Za-z0-9]{20}AZDO[A-Za-z0-9]{4}\b", ("AZDO",)),
    # ``vault operator init`` output: the unseal (or recovery) key shares.
    _Rule("vault-unseal-key", r"(?P<pre>\b(?:Unseal|Recovery) Key \d+:[ \t]*)[A-Za-z0-9+/]{20,}={0,2}",
          ("Unseal Key", "Recovery Key"), replace=_keep_prefix("vault-unseal-key")),
    _Rule("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*", ("eyJ",)),
    # Any scheme word (Bot, SSWS, Splunk, GenieKey …) or FCM's ``key=``; Bearer has its own rule below.
    _Rule("auth-token", r"(?P<pre>\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
          r"(?:(?!(?:bearer|new|await|null|none|nil)\b)(?P<scheme>[a-z][\w\-]{1,24})\s+|key=))(?!\[REDACTED:)(?P<cred>[A-Za-z0-9+/=._~:\-]{8,})",
          ("authorization",), fold=True, flags=re.IGNORECASE, replace=_auth_header),
    # ``Basic <base64>`` wherever the header is set: nginx ``proxy_set_header``, ``Header.Set(…)``, a logged request.
    _Rule("basic-auth", r"(?P<pre>(?<![\w\-])Basic[ \t]+)(?P<cred>[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])",
          ("Basic",), replace=_basic_credential),
    _Rule("bearer-token", r"(?P<pre>\b[Bb]earer\s+)(?!\[REDACTED:)[A-Za-z0-9._~+/\-]{20,}=*", ("earer",),
          fold=True, replace=_keep_prefix("bearer-token")),
    # A command may go on over lines ending in a backslash.
    _Rule("basic-auth", r"(?P<pre>\b(?:curl|http|https|xh)\b(?:[^\n|;&\\]|\\\n|\\){0,300}?[ \t\"']"
          r"(?:-[a-zA-Z]*u|--user|-a|--auth)(?:[ \t]+|=|[\"'][ \t]*,[ \t]*)(?P<q>[\"'])?[^\s:\"']*:)"
          r"(?P<val>(?(q)[^\"'\n]+|[^\s\"'@`;|&)]+))(?(q)(?P=q))", ("curl", "http", "xh "),
          fold=True, replace=_valued("basic-auth")),
    _cli_password(r"mysql\w*|mariadb\w*", "-p", ("mysql", "mariadb")),
    _cli_password(r"sshpass|[a-z][\w\-]*(?:[ \t]+[a-z][\w\-]*)?[ \t]+login", r"-p[ \t]*", ("sshpass", "login")),
    # Microsoft Entra (Azure AD) client secrets: three characters, a digit, ``Q~``, then 31-34 more (gitleaks'
    # azure-ad-client-secret rule).
    _Rule("azure-client-secret", r"(?<![\w~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![\w~.\-])",
          ("Q~",)),
    _cli_password(r"sqlcmd|bcp|osql|isql|mssql-cli", r"-P[ \t]*", ("sqlcmd", "bcp", "osql", "isql", "mssql-cli")),
    _cli_password(r"redis-cli", r"-a[ \t]+", ("redis-cli",)),
    # SQL: CREATE USER … IDENTIFIED BY '…', CREATE ROLE … PASSWORD '…'.
    _Rule("password", r"(?P<pre>(?<![\w\-])(?i:identified[ \t]+by|password)[ \t]+)(?P<q>')(?P<val>[^'\n]+)'",
          ("identified", "password"), fold=True, replace=_valued("password")),
    # A database connection's password given third: new PDO(dsn, user, password), mysqli(host, user, password),
    # DriverManager.getConnection(url, user, password).
    _call_secret("password", r"\b(?:PDO|mysqli|mysqli_connect|pg_connect|DriverManager\.getConnection)", 2,
                 ("PDO", "mysqli", "getConnection")),
    # A password given second, after a user: NetworkCredential, PasswordAuthentication, HTTP basic auth (requests'
    # auth=(user, pw) tuple, Go's SetBasicAuth), LDAP binds, smtplib/imaplib/ftplib ``.login(user, pw)``.
    _call_secret("password", r"(?:\b(?:NetworkCredential|PasswordAuthentication|HTTPBasicAuth|HTTPDigestAuth|BasicAuth|"
                 r"SetBasicAuth|simple_bind_s|simple_bind|bind_s)|\.login|(?<![\w.])auth\s*=\s*)", 1,
                 ("Credential(", "Authentication(", "Auth(", "bind_s(", "simple_bind(", ".login(", "auth=(",
                  "auth = (")),
    # A literal signing key: jwt.sign(payload, "…"), jwt.encode(payload, "…"), Go's SignedString([]byte("…")).
    _call_secret("secret", r"\bjwt\.(?:sign|encode|verify|decode)", 1, ("jwt.",)),
    _call_secret("secret", r"\bSignedString\s*\(\s*\[\]byte", 0, ("SignedString",)),
    # An SDK client given its key as a literal: AzureKeyCredential("…"), PagerDuty's APISession("…"), Segment's
    # analytics.load("…"), Algolia's algoliasearch(appId, "…") / SearchClient.create(appId, "…").
    _call_secret("api-key", r"\b(?:AzureKeyCredential|APISession|analytics\.load)", 0,
                 ("KeyCredential", "APISession", "analytics.load"), key_like=True),
    _call_secret("api-key", r"\b(?:algoliasearch|SearchClient(?:\.create)?)", 1, ("algoliasearch", "SearchClient"),
                 key_like=True),
    # A literal set for (or defaulted to) a secret's name: define('DB_PASSWORD', '…'), props.put("….password", "…"),
    # System.setProperty, ENV.fetch('DB_PASSWORD', '…'), os.getenv("API_TOKEN", "…"), t.Setenv(…).
    _Rule("secret", r"(?P<pre>\b(?:define|put|setProperty|set|fetch|getenv|get|setdefault|Setenv|setenv|"
          r"SetEnvironmentVariable)\s*\(\s*(?P<nq>['\"])(?P<name>[\w.\-]{2,100})(?P=nq)\s*,\s*)"
          r"(?P<q>['\"])(?P<val>[^'\"\n]+)(?P=q)", _NAMED_CALL_TRIGGERS, fold=True, replace=_named_call),
    # Connection strings: Oracle's thin JDBC URL (``jdbc:oracle:thin:user/pw@//host``), an ODBC ``PWD={…}``,
    # Neo4j's ``NEO4J_AUTH=user/pw``; a kubeconfig's ``client-key-data``; a Rails ``config/master.key`` shown.
    _Rule("password", r"(?P<pre>\bjdbc:oracle:\w+:[\w.$\-]+/)(?P<q>)(?P<val>[^@\s\"'/]+)(?=@)", ("jdbc:oracle",),
          replace=_valued("password")),
    _Rule("password", r"(?P<pre>(?<![\w])(?i:pwd|password)[ \t]*=[ \t]*\{)(?P<q>)(?P<val>[^}\n]+)(?=\})",
          ("pwd={", "pwd = {", "password={", "password = {"), fold=True, replace=_valued("password")),
    _Rule("password", r"(?P<pre>\bNEO4J_AUTH[\"']?[ \t]*[=:][ \t]*[\"']?[\w.\-]+/)(?P<q>)(?P<val>[^\s\"']+)",
          ("NEO4J_AUTH",), replace=_valued("password")),
    _Rule("private-key", r"(?P<pre>\bclient-key-data:[ \t]*)[A-Za-z0-9+/]{40,}={0,2}", ("client-key-data",),
          replace=_keep_prefix("private-key")),
    _Rule("secret", r"(?P<pre>\bmaster\.key[ \t]*\n)[0-9a-f]{32}\b", ("master.key",), replace=_keep_prefix("secret")),
    # A quoted key named just "Key" (ASP.NET's ``"Jwt": {"Key": "…"}``): only a generated value, letters and digits.
    _Rule("secret", r"(?P<pre>(?<![\w.\-])[\"']?(?:Key|key)[\"']?[ \t]*[:=][ \t]*)(?P<q>[\"'])"
          r"(?P<val>[A-Za-z0-9+/]{32,}={0,2})(?P=q)", ("key",), fold=True, replace=_key_like("secret")),
    # Rails' ``secret_key_base`` (128 hex digits) as ``credentials:show`` prints it.
    _Rule("secret", r"(?P<pre>\bsecret_key_base[\"']?[ \t]*[:=][ \t]*)(?P<q>[\"']?)(?P<val>[0-9a-f]{64,})(?P=q)",
          ("secret_key_base",), replace=_valued("secret")),
    # The AWS CLI's ``aws configure`` prompt, answered.
    _Rule("aws-secret-key", r"(?P<pre>\bAWS Secret Access Key \[[^\]\n]*\]:[ \t]*)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
          ("Secret Access Key [",), replace=_keep_prefix("aws-secret-key")),
    # A key or token given to a CLI or an SDK: ``mc alias set NAME URL ACCESS SECRET``,
    # Postmark's ``new ServerClient("…")``, Go's ``jwtKey = []byte("…")``; credentials given to Bundler and Poetry.
    _Rule("secret", r"(?P<pre>\bmc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+\S+[ \t]+)"
          r"(?P<q>[\"']?)(?P<val>[^\s\"']+)(?P=q)", ("mc alias", "mc config"), replace=_valued("secret")),
    _call_secret("api-key", r"\b(?:ServerClient|AccountClient)", 0, ("ServerClient(", "AccountClient(")),
    _Rule("secret", r"(?P<pre>\b(?P<name>[A-Za-z_]\w*)[ \t]*:?=[ \t]*\[\]byte\([ \t]*)(?P<q>\")(?P<qval>[^\"\n]+)\"",
          ("[]byte(",), replace=_named_value()),
    _Rule("secret", r"(?P<pre>\bbundle[ \t]+config[ \t]+(?:set[ \t]+)?(?:--(?:global|local)[ \t]+)?"
          r"[\w\-]+(?:\.[\w\-]+)+[ \t]+)(?P<q>[\"']?)(?P<val>[^\s:\"']+:[^\s\"']+)(?P=q)", ("bundle config",),
          replace=_valued("secret")),
    _Rule("password", r"(?P<pre>\bpoetry[ \t]+config[ \t]+http-basic\.[\w.\-]+[ \t]+"
          r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)[ \t]+)"
          r"(?:(?P<q>[\"'])(?P<qval>[^\"'\n]+)(?P=q)|(?P<val>[^\s\"'`;|&)#][^\s\"'`;|&)]*))",
          ("http-basic.",),
          replace=_valued("password")),
    # Windows and Samba: ``net use … /user:DOMAIN\\name PW``, ``smbclient -U user%PW``.
    _Rule("password", r"(?P<pre>\b(?i:net)[ \t]+(?i:use)\b[^\n]*?/(?i:user):\S+[ \t]+)(?P<q>[\"']?)"
          r"(?P<val>[^\s\"'/*][^\s\"']*)(?P=q)", ("net use",), fold=True, replace=_valued("password")),
    _Rule("password", r"(?P<pre>\b(?:smbclient|rpcclient|smbmap|smbget)\b[^\n|;&]*?(?:-U|--user(?:name)?)[ \t=]*"
          r"[\"']?[^\s%\"']+%)(?P<q>)(?P<val>[^\s\"']+)", ("smbclient", "rpcclient", "smbmap", "smbget"),
          replace=_valued("password")),
    # A user and a password after "creds:" / "login:" (``creds: admin / Adm1n#77``).
    _Rule("password", r"(?P<pre>(?<![\w./\-])(?i:creds|credentials|login)[ \t]*[:=][ \t]*[\w.@\-]+[ \t]*/[ \t]*)(?P<q>)"
          r"(?P<val>[^\s\"'`]+)", ("creds", "credentials", "login"), fold=True, replace=_prose_password),
    # … or given with a login in a sentence: "logging into grafana with admin / Xy7kq2pw", "sign in as ops/…".
    _Rule("password", r"(?P<pre>(?<![\w\-])(?i:log(?:s|ged|ging)?[ \t]*in(?:to)?|sign(?:s|ed|ing)?[ \t]*in(?:to)?)\b"
          r"[^\n/]{0,40}?[ \t](?i:with|as|using)[ \t]+[\w.@\-]{1,64}[ \t]*/[ \t]*)(?P<q>)(?P<val>[^\s\"'`/]+)",
          ("log", "sign"), fold=True, replace=_prose_password),
    _cli_password(r"ldap\w*", r"-w[ \t]*", ("ldap",)),
    # ``-u USER -p PW`` on one command (mongodump, mongosh, cqlsh, …): -p after -u is the user's password (a port or
    # a port mapping, ``-p 8080:80``, is a number: ``_valued`` keeps it; mysql's ``-p db`` asks and names a database).
    _Rule("password", r"(?P<pre>(?<![\w\-])-u[ \t]+[^\s\-]\S*[ \t]+(?:-{1,2}[\w\-]+(?:[ \t]+[^\s\-]\S*)?[ \t]+){0,3}?"
          r"-p[ \t]+)(?P<q>[\"']?)(?P<val>[^\s\"'`;|&)\-][^\s\"'`;|&)]*)(?P=q)", ("-p ",), replace=_user_password),
    # A password piped into a login: ``echo "PW" | docker login --password-stdin``.
    _Rule("password", r"(?P<pre>\b(?:echo|printf)(?:[ \t]+-[nes]+)*[ \t]+)(?P<q>[\"']?)(?P<val>[^\s\"'|$][^\s\"'|]*)"
          r"(?P=q)(?=[ \t]*\|[^\n|]*--password-stdin)", ("password-stdin",), replace=_valued("password")),
    # fish's ``set -x SMTP_PASSWORD value`` (``-gx``, ``-Ux``): an assignment by its name.
    _Rule("secret", r"(?P<pre>(?<![\w\-])set[ \t]+-[gxUlu]+[ \t]+(?P<name>[A-Za-z_]\w*)[ \t]+)(?P<q>[\"']?)"
          r"(?P<val>[^\s\"']+)(?P=q)", ("set -",), replace=_named_value()),
    # An ``*_AUTH`` environment variable holding a generated value (``REDISCLI_AUTH``; NEO4J_AUTH has its rule).
    _Rule("password", r"(?P<pre>\b[A-Z][A-Z0-9]*_AUTH[ \t]*=[ \t]*)(?P<q>[\"']?)(?P<val>[^\s\"']{16,})(?P=q)",
          ("_AUTH",), replace=_key_like("password")),
    # ``credentials: <token>`` (Prometheus' ``authorization:``/``basic_auth:`` blocks): a generated value only.
    _Rule("token", r"(?P<pre>(?<![\w\-])credentials[ \t]*:[ \t]*)(?P<q>[\"']?)(?P<val>[A-Za-z0-9._~+/\-]{20,}=*)(?P=q)"
          r"(?=[ \t]*(?:\n|$))", ("credentials:",), replace=_key_like("token")),
    # .NET's ``new AuthenticationHeaderValue("Bearer", "…")``.
    _call_secret("auth-token", r"\bAuthenticationHeaderValue", 1, ("AuthenticationHeaderValue",)),
    # Ruby's ``ENV.fetch("DB_PASSWORD") { "…" }``: a literal default for a secret's name.
    _Rule("secret", r"(?P<pre>\bfetch\(\s*(?P<nq>['\"])(?P<name>[\w.\-]{2,100})(?P=nq)\s*\)\s*\{\s*)"
          r"(?P<q>['\"])(?P<val>[^'\"\n]+)(?P=q)", ("fetch(",), replace=_named_call),
    # PgBouncer's userlist.txt: ``"user" "password"`` lines.
    _Rule("password", r"(?m)(?P<pre>^[ \t]*\"[^\"\n]+\"[ \t]+\")(?P<q>)(?P<val>[^\"\n]+)(?=\"[ \t]*$)", ("userlist",),
          replace=_valued("password")),
    # Codecov's uploader token: ``… codecov … -t TOKEN``.
    _Rule("token", r"(?P<pre>\bcodecov\b[^\n|;&]{0,200}?[ \t]-t[ \t]+)(?P<q>[\"']?)(?P<val>[^\s\"']+)(?P=q)",
          ("codecov",), replace=_valued("token")),
    # A password given positionally after its user: rabbitmqctl add_user USER PW, net user USER PW /add, htpasswd -b,
    # echo 'user:pw' | chpasswd.
    _Rule("password", r"(?P<pre>\brabbitmqctl\b[^\n;|&]{0,80}?[ \t](?:add_user|change_password|authenticate_user)"
          r"[ \t]+(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]+)[ \t]+)"
          r"(?:(?P<q>[\"'])(?P<qval>[^\"'\n]+)(?P=q)|(?P<val>[^\s\"'`;|&)<>]+))",
          ("rabbitmqctl",), replace=_valued("password")),
    _Rule("password", r"(?P<pre>\b(?i:net)[ \t]+(?i:user)[ \t]+(?:\"[^\"\n]+\"|[^\s\"/]+)[ \t]+)(?P<q>[\"']?)"
          r"(?P<val>[^\s\"'`;|&)<>/*][^\s\"'`;|&)<>]*)(?P=q)(?=[ \t]+/)", ("net user",), fold=True,
          replace=_valued("password")),
    _Rule("password", r"(?P<pre>\b(?:htpasswd|mosquitto_passwd)[ \t]+)(?P<args>[^\n;|&<>]+)",
          ("htpasswd", "mosquitto_passwd"), replace=_htpasswd),
    _Rule("password", r"(?P<pre>\becho[ \t]+(?P<uq>[\"']?)[\w.\-]+:)(?P<q>)(?P<val>[^\s\"':]+)(?=(?P=uq)[ \t]*\|[ \t]*"
          r"(?:sudo[ \t]+)?chpasswd)", ("chpasswd",), replace=_valued("password")),
    # Single-dash flags: keytool/jarsigner (-storepass, -srcstorepass, -keypass …), Go's flag package (-token=…),
    # PowerShell (-Password '…'); openssl's -passin/-passout pass:… and ConvertTo-SecureString '…' -AsPlainText.
    _Rule("password", r"(?P<pre>(?<![\w\-./])-(?P<flag>(?i:(?:src|dest|new)?(?:store|key)pass(?:word)?|password|passwd|"
          r"passphrase|api-?key|token|auth-?token|access-?token|client-?secret|secret))(?:[ \t]+|=))"
          r"(?:(?P<q>[\"'])(?P<qval>[^\"'\n]+)(?P=q)|(?P<val>[^\s\"'`;|&)]+))",
          _DASH_FLAG_TRIGGERS, fold=True, replace=_dash_flag),
    _Rule("password", r"(?P<pre>(?<![\w\-])-pass(?:in|out|word)?[ \t]+pass:)(?P<q>)(?P<val>[^\s\"'`;|&)]+)",
          ("pass pass:", "passin pass:", "passout pass:", "password pass:"),
          replace=_valued("password")),
    _Rule("password", r"(?P<pre>\bConvertTo-SecureString[ \t]+(?:-String[ \t]+)?)(?P<q>[\"'])(?P<val>[^\"'\n]+)(?P=q)"
          r"(?=[^\n]*-AsPlainText)", ("ConvertTo-SecureString",), replace=_valued("password")),
    # Gradle project and Java system properties named as secrets: -PnexusPassword=…, -Dspring.datasource.password=….
    _Rule("secret", r"(?P<pre>(?<![\w\-])-[PD](?P<name>[A-Za-z][\w.\-]*)=)(?:(?P<q>[\"'])(?P<qval>[^\"'\n]+)(?P=q)|"
          r"(?P<val>[^\s\"'`;|&)]+))", ("-P", "-D"), replace=_named_value()),
    # Redis: requirepass/masterauth (and keepalived's auth_pass) opening a config line, or given to CONFIG SET.
    _Rule("password", r"(?P<pre>(?:(?m:^)[ \t]*|\b(?i:config[ \t]+set)[ \t]+)(?:requirepass|masterauth|auth_pass)"
          r"[ \t]+)(?P<q>[\"']?)(?P<val>[^\s\"']+)(?P=q)", ("requirepass", "masterauth", "auth_pass"),
          replace=_valued("password")),
    # A CLI given its token: snyk auth …, snyk config set api=…, ngrok authtoken … / ngrok config add-authtoken ….
    _Rule("token", r"(?P<pre>\b(?:snyk[ \t]+auth[ \t]+|snyk[ \t]+config[ \t]+set[ \t]+api=|"
          r"ngrok[ \t]+(?:config[ \t]+add-)?authtoken[ \t]+))(?P<q>[\"']?)"
          r"(?P<val>[A-Za-z0-9_\-.]{16,})(?P=q)", ("snyk", "authtoken"), replace=_valued("token")),
    # A Go MySQL DSN's password: user:pw@tcp(host:port)/db.
    _Rule("password", r"(?P<pre>(?<![\w:/@.\-])[\w.\-]+:)(?P<q>)(?P<val>[^\s@/\"'`]+)(?=@(?:tcp|unix)\()",
          ("@tcp(", "@unix("), replace=_valued("password")),
    # npm's _auth (base64 of user:password) and Yarn's npmAuthIdent (user:password).
    _Rule("secret", r"(?m)^(?P<pre>[ \t]*(?://[^\s=]*:)?_(?:auth|password)[ \t]*=[ \t]*)(?P<q>[\"']?)"
          r"(?P<val>[A-Za-z0-9+/]{8,}={0,2})(?P=q)[ \t]*$", ("_auth", "_password"), replace=_valued("secret")),
    _Rule("secret", r"(?P<pre>\bnpmAuthIdent[\"']?[ \t]*:[ \t]*)(?P<q>[\"']?)(?P<val>[^\s\"':]+:[^\s\"']+)(?P=q)",
          ("npmAuthIdent",), replace=_valued("secret")),
    # An environment name for a personal access token: JIRA_PAT=…, ADO_PAT: ….
    _Rule("token", r"(?<![\w.\-])(?P<pre>(?:[A-Z0-9]+_)+PAT[\"']?[ \t]*[=:][ \t]*)(?P<q>[\"']?)"
          r"(?P<val>[A-Za-z0-9_\-.~+/=]{16,})(?P=q)(?![^\s\"',;])", ("_PAT",), replace=_env_key("token")),
    # A key in a sentence: "use this key: …", "the api key is …".
    _Rule("api-key", r"(?P<pre>(?<![\w\-./])(?i:(?:api|access|this|the|new)[ \t]+key)"
          r"(?:[ \t]*:|[ \t]+(?:is|was|=))[ \t]*)(?P<q>[\"'`]?)(?P<val>[A-Za-z0-9]{20,})(?P=q)(?![\w\-])",
          tuple(f"{word} key" for word in ("api", "access", "this", "the", "new")), fold=True,
          replace=_prose_key),
    # A rotated credential given as "the new one" in a text about credentials.
    _Rule("password", r"(?P<pre>\bnew[ \t]+(?:one|value)(?:[ \t]+for[ \t]+[\w.\-@`]+(?:[ \t]+[\w.\-@`]+){0,3}?)?"
          r"[ \t]+(?:is|was|=|:)[ \t]+)(?P<q>[\"'`])?(?P<val>(?(q)[^\s\"'`]+|[^\s\"'`]*[^\s\"'`.,;:)]))(?(q)(?P=q))",
          ("new one", "new value"), fold=True, replace=_rotated),
    # Also prefixed (``--db-password``, ``--spring.datasource.password``) and in an argv list (``"--token", "…"``).
    _Rule("secret", r"(?P<pre>(?<![\w\-.])--(?:(?!no-)[a-z0-9]+[-.]){0,4}(?:password|passwd|pass|token|api-?key|"
          r"api-token|auth-token|access-token|secret|client-secret|secret-key|access-key|private-token|bot-token|"
          r"webhook-secret|account-key|api-secret|app-secret|master-key|encryption-key|signing-key|license-key)"
          r"(?:[ \t]+|=|[\"'][ \t]*,[ \t]*))(?:(?P<q>[\"'])(?P<qval>[^\"'\n]+)(?P=q)|(?P<val>[^\s\"'`;|&)]+))", ("--",),
          replace=_valued("secret")),
    _Rule("secret", r"(?P<pre>\bname:[ \t]*(?P<nq>[\"']?)(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P=nq)"
          r"[ \t]*\n[ \t]*-?[ \t]*value:[ \t]*(?:\n[ \t]+)?)(?P<q>[\"']?)(?P<val>[^\s\"'`;|&)]+)(?P=q)", ("value:",),
          replace=_named_value("secret")),
    _Rule("password", r"(?P<pre>\bmachine[ \t]+\S+\s+login[ \t]+\S+\s+password[ \t]+)(?P<q>[\"']?)"
          r"(?P<val>[^\s\"']+)(?P=q)", ("machine",), replace=_valued("password")),
    _Rule("password", r"(?m)^(?P<pre>[A-Za-z0-9_.\-*]+:(?:\d{1,5}|\*):[A-Za-z0-9_.\-*]+:[A-Za-z0-9_.\-*@]+:)"
          r"(?P<q>)(?P<val>\S+)$", (":543", ":643", ":*:"), replace=_valued("password")),
    _Rule("secret", r"(?P<pre>\bkey=(?P<kq>[\"'])[\w.:\-]*(?i:password|passwd|secret|token|api_?key)(?P=kq)[ \t]+"
          r"value=)(?P<q>[\"'])(?P<val>[^\"'\n]+)(?P=q)", ("value=",), fold=True, replace=_valued("secret")),
    _Rule("secret", r"(?P<pre><(?P<tag>[\w:.\-]*(?i:password|passwd|secret|token|api_?key))>)(?P<q>)"
          r"(?P<val>[^<\s]+)(?=</(?P=tag)>)", ("</",), replace=_valued("secret")),
    _Rule("secret", r"(?<![\w.\-])(?P<pre>(?:[A-Z0-9]+_)*[A-Z0-9]*?(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY)"
          r"(?:_[A-Z0-9]+)+[ \t]*[=:][ \t]*)(?P<q>[\"']?)(?P<val>[A-Za-z0-9+/=_\-.~]{16,})(?P=q)(?![^\s\"',;])",
          ("PASSWORD_", "SECRET_", "TOKEN_", "KEY_"), replace=_key_like("secret")),
    _Rule("api-key", r"(?P<pre>[?&](?i:appid|app_?key|api_?key|access_?token|auth_?token|token|key|client_?secret|"
          r"secret|signature)=)(?P<q>)(?P<val>[A-Za-z0-9_\-.~%]{16,})",
          ("appid=", "key=", "token=", "secret=", "signature="), fold=True, replace=_key_like("api-key")),
    _Rule("secret", r"\bvariable\s+\"(?P<name>[\w\-]+)\"\s*\{[^{}]{0,600}?\bdefault\s*=\s*\"(?P<val>[^\"\n]+)\"",
          ("variable",), replace=_hcl_variable),
    # A password in a sentence: "the staging db password is …", "the wifi password for the lab is "…"".
    # … or "the ADO pat for the org is …", "set `REDIS_PASSWORD` in `.env` to `…`", "the password you gave (…)".
    _Rule("password", r"(?P<pre>(?:(?<![\w\-=./$])(?:(?i:password|passwd|passphrase|secret|token)|[Pp]ass|pwd|pw|pat"
          r"|PAT)\b|`[A-Za-z_]*(?:PASSWORD|SECRET|TOKEN|[Pp]assword|[Ss]ecret|[Tt]oken)`)"
          r"(?:[ \t]+(?:for|of|on|in)[ \t]+[\w.\-@`/]+(?:[ \t]+[\w.\-@`/]+){0,3}?(?:[ \t]+(?:is|was|=|to)|[ \t]*:)"
          r"|[ \t]+(?:is|was|=|to))?[ \t]+)"
          r"(?P<q>[\"'`])?(?P<val>(?(q)[^\s\"'`]*[^\s\"'`,;:)]|[^\s\"'`]*[^\s\"'`.,;:)]))(?(q)(?P=q))",
          ("pass", "pwd", "pw ", "secret", "token", "pat ", "pat:"), fold=True, replace=_prose_password),
    _Rule("password", r"(?P<pre>(?<![\w\-=./$])(?i:password|passwd|passphrase|secret|token|key|pw|pat)[ \t]+"
          r"(?:that[ \t]+)?you[ \t]+(?:gave|sent|provided|shared|pasted|supplied)(?:[ \t]+me)?"
          r"(?:[ \t]+(?:earlier|above|before))?(?:[ \t]*[(:][ \t]*|[ \t]+))"
          r"(?P<q>[\"'`])?(?P<val>(?(q)[^\s\"'`]*[^\s\"'`,;:)]|[^\s\"'`]*[^\s\"'`.,;:)]))(?(q)(?P=q))",
          ("you gave", "you sent", "you provided", "you shared", "you pasted", "you supplied"), fold=True,
          replace=_prose_password),
    _Rule("secret", _ASSIGNMENT, ("pass", "pwd", "psk", "secret", "token", "key"), fold=True, flags=re.VERBOSE,
          scan=_scan_assignments),
)


def redact(text: str) -> Redacted:
    """Replace every secret in ``text`` with its marker (see the module docstring). Never raises; text
    without a secret comes back unchanged (the same object). Cost grows with the text: cut a long one first
    (``redact_captured``)."""
    lower = text.lower()
    kinds: list[str] = []
    for rule in _RULES:
        if rule.wanted(text, lower):
            text = rule.apply(text, kinds)
    return Redacted(text, len(kinds), tuple(kinds))


def redact_captured(text: str) -> Redacted:
    """``text`` as a captured text is kept: redacted and cut to ``CAPTURE_MAX_CHARS`` with a marker, keeping its
    start and its last ``CAPTURE_TAIL_CHARS`` (``limits.cap_text``: a question typed after a pasted log is kept).
    A text over ``PRECUT_CHARS`` is first cut to its two ends, each redacted on its own, so a pasted megabyte
    costs the redactor no more than a long answer; what is kept then stays at least ``PRECUT_GUARD_CHARS`` away
    from that cut on either side (a multi-line secret the pre-cut split is never kept in part), and the marker
    counts what was left out of the whole ``text``. Redaction runs before the final cut, so no secret is cut
    into a piece the rules no longer know. Never raises."""
    if len(text) <= PRECUT_CHARS:
        secrets = redact(text)
        return Redacted(cap_text(secrets.text, tail=CAPTURE_TAIL_CHARS), secrets.count, secrets.kinds)
    tail_room = CAPTURE_TAIL_CHARS + PRECUT_GUARD_CHARS
    head, tail = cut_ends(text, PRECUT_CHARS - tail_room, tail_room)
    head_secrets, tail_secrets = redact(head), redact(tail)
    kept_head = head_secrets.text[:max(len(head_secrets.text) - PRECUT_GUARD_CHARS, 0)]
    room = CAPTURE_MAX_CHARS - len(CUT_MARKER.format(left_out=f"{len(text):,}")) - 2 - CAPTURE_TAIL_CHARS
    final_head, _ = cut_ends(kept_head, room, 0)
    _, final_tail = cut_ends(tail_secrets.text[PRECUT_GUARD_CHARS:], 0, CAPTURE_TAIL_CHARS)
    kinds = tuple(dict.fromkeys((*head_secrets.kinds, *tail_secrets.kinds)))
    return Redacted(join_ends(final_head, final_tail, len(text) - len(final_head) - len(final_tail)),
                    head_secrets.count + tail_secrets.count, kinds)


def redact_value(value: object) -> object:
    """``value`` (JSON-shaped: strings, numbers, lists, dicts) with every string in it, at any depth, redacted
    (``redact``); dict keys are kept as they are, tuples become lists. Never raises."""
    if isinstance(value, str):
        return redact(value).text
    if isinstance(value, dict):
        return {key: redact_value(v) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value
