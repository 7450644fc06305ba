"""Fuzz the sidecar's HTTP API with schemathesis over its unix socket: no input may give a server error.

Starts a real sidecar (``python -m memcue.sidecar``, ``MEMCUE_NO_MODEL=1``, a fresh temporary ``MEMCUE_HOME``),
reads its OpenAPI spec from ``GET /openapi.json`` over the unix socket and loads it with
``schemathesis.openapi.from_dict``. For every operation and both generation modes (positive: bodies the spec
allows; negative: bodies it refuses) it draws ``--examples`` cases from ``APIOperation.as_strategy`` under
Hypothesis (no shrinking, no example database), sends each with httpx over the socket and runs schemathesis's
``not_a_server_error`` check on the answer. The hook route is also driven with every known harness and event
as its path parameters, so the real hook handler is reached, not only its 404. Counted: requests sent, status
codes, server errors (with the first few requests that caused them). ``--source DIR`` runs the sidecar from
another checkout (``PYTHONPATH``), e.g. main before a fix. Results: ``benchmarks/results/api_fuzz.json`` and
``.md``; the test suite runs ``fuzz`` with a few examples per operation (``tests/test_api_fuzz.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import schemathesis
from _common import REPO, RESULTS_DIR, write_results
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode

from memcue.core.paths import Locations

#: Base URL of requests over the unix socket (the host is not used).
BASE_URL = "http://memcue"
#: Server errors whose request is kept in the report, per operation.
KEEP_SAMPLES = 3


@dataclass
class FuzzReport:
    """A fuzz run: ``requests`` sent, ``server_errors`` (HTTP 5xx and failed ``not_a_server_error`` checks),
    ``statuses`` (status code -> count) and ``per_operation`` ("POST /recall" -> {requests, server_errors}),
    ``samples`` (operation -> up to ``KEEP_SAMPLES`` of {status, body sent, answer})."""

    requests: int = 0
    server_errors: int = 0
    no_answer: int = 0
    statuses: Counter = field(default_factory=Counter)
    per_operation: dict[str, dict[str, int]] = field(default_factory=dict)
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {"requests": self.requests, "server_errors": self.server_errors, "no_answer": self.no_answer,
                "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
                "per_operation": self.per_operation, "samples": self.samples}


def load_schema(client: httpx.Client) -> Any:
    """The sidecar's OpenAPI spec (``GET /openapi.json`` through ``client``) as a schemathesis schema."""
    spec = client.get("/openapi.json").raise_for_status().json()
    return schemathesis.openapi.from_dict(spec)


def _send(client: httpx.Client, case: Any) -> httpx.Response:
    """Send ``case`` through ``client`` (its body as the JSON bytes schemathesis would send)."""
    kw = case.as_transport_kwargs(base_url=BASE_URL)
    content = kw.get("data")
    if "json" in kw:
        content = json.dumps(kw["json"]).encode()
    if isinstance(content, str):
        content = content.encode()
    return client.request(kw["method"], kw["url"], params=kw.get("params") or None, headers=kw.get("headers"),
                          content=content)


def _record(report: FuzzReport, label: str, case: Any, response: httpx.Response) -> None:
    """Count ``response`` to ``case`` and run the ``not_a_server_error`` check on it."""
    report.requests += 1
    report.statuses[response.status_code] += 1
    counts = report.per_operation.setdefault(label, {"requests": 0, "server_errors": 0})
    counts["requests"] += 1
    try:
        case.validate_response(response, checks=[not_a_server_error])
    except FailureGroup:
        report.server_errors += 1
        counts["server_errors"] += 1
        kept = report.samples.setdefault(label, [])
        if len(kept) < KEEP_SAMPLES:
            kept.append({"status": response.status_code, "path": str(response.request.url.path),
                         "body": response.request.content.decode("utf-8", "replace")[:500],
                         "answer": response.text[:300]})


def _no_answer(report: FuzzReport, label: str, case: Any, exc: Exception) -> None:
    """Count a request the sidecar did not answer (connection reset or closed)."""
    report.requests += 1
    report.no_answer += 1
    counts = report.per_operation.setdefault(label, {"requests": 0, "server_errors": 0})
    counts["requests"] += 1
    counts["no_answer"] = counts.get("no_answer", 0) + 1
    kept = report.samples.setdefault(label, [])
    if len(kept) < KEEP_SAMPLES:
        kept.append({"status": f"no answer ({type(exc).__name__}: {exc})",
                     "body": repr(case.as_transport_kwargs(base_url=BASE_URL))[:500], "answer": ""})


def _drive(client: httpx.Client, report: FuzzReport, label: str, strategy: Any, examples: int, seed: int) -> None:
    """Draw up to ``examples`` cases from ``strategy`` and send each (no shrinking, no database)."""

    @settings(max_examples=examples, phases=[Phase.explicit, Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(case=strategy)
    def run(case: Any) -> None:
        try:
            response = _send(client, case)
        except httpx.TransportError as exc:  # the connection dropped: counted, with what was sent
            _no_answer(report, label, case, exc)
            return
        _record(report, label, case, response)

    run._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]  # reproducible draws
    try:
        run()
    except Unsatisfiable:  # no invalid input exists (an operation without parameters, negative mode)
        pass


def _hook_paths() -> list[dict[str, str]]:
    """Path parameters of every known hook (harness registry) for the hook route."""
    from memcue import harnesses

    return [{"harness": h, "event": e} for h in sorted(harnesses.HARNESSES) for e in sorted(harnesses.EVENTS)]


def fuzz(socket_path: Path, examples: int, seed: int = 0) -> FuzzReport:
    """Fuzz every operation of the sidecar listening on ``socket_path``: ``examples`` cases per operation and
    generation mode (and per known hook for the hook route). Returns the counts; raises ``httpx.HTTPError``
    when the sidecar does not answer at all."""
    report = FuzzReport()
    transport = httpx.HTTPTransport(uds=str(socket_path))
    with httpx.Client(transport=transport, base_url=BASE_URL, timeout=60, trust_env=False) as client:
        schema = load_schema(client)
        for result in schema.get_all_operations():
            op = result.ok()
            label = f"{op.method.upper()} {op.path}"
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                _drive(client, report, label, op.as_strategy(mode), examples, seed)
                if "{harness}" in op.path:
                    for params in _hook_paths():
                        strategy = op.as_strategy(mode, path_parameters=params)
                        _drive(client, report, label, strategy, max(1, examples // 4), seed)
    return report


def start_sidecar(home: Path, source: Path | None) -> subprocess.Popen:
    """A sidecar without the embedding model in ``home``, from ``source`` (a checkout) when given; waits until
    it answers ``/health`` (at most 60 s, else ``RuntimeError``)."""
    env = {**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_NO_MODEL": "1", "OPENBLAS_NUM_THREADS": "1"}
    if source is not None:
        env["PYTHONPATH"] = str(source)
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave the other checkout as it is
    # ``-m`` puts the working folder first on sys.path: in ``source``, its memcue wins over the installed one.
    proc = subprocess.Popen([sys.executable, "-m", "memcue.sidecar"], env=env, cwd=source, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    sock = Locations(home).socket
    while time.monotonic() < deadline:
        try:
            with httpx.Client(transport=httpx.HTTPTransport(uds=str(sock)), trust_env=False) as c:
                if c.get(f"{BASE_URL}/health", timeout=5).status_code == 200:
                    return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the sidecar did not start")


def _shown(body: str) -> str:
    """A request body cut to 200 characters for a Markdown code span."""
    return body[:200].replace("`", "'").replace("\n", " ")


def _summary_row(label: str, run: dict[str, Any]) -> str:
    return (f"| {label} | `{run['command']}` | {run['requests']} | {run['server_errors']} | {run['no_answer']} "
            f"| {run['seconds']:.0f} |")


def markdown(run: dict[str, Any], before: dict[str, Any] | None) -> str:
    """A run (``run_record``) as Markdown, next to the ``before`` run (same shape) when given."""
    lines = ["# Sidecar API fuzz (schemathesis over the unix socket)", "",
             f"{run['examples']} cases per operation and generation mode (positive and negative), the hook route "
             "also with every known harness/event; check: `not_a_server_error`.", "",
             "| run | command | requests | server errors | no answer | s |", "|---|---|---:|---:|---:|---:|"]
    if before is not None:
        lines.append(_summary_row(f"before (`{before.get('commit') or '?'}`)", before))
    label = "after" if before is not None else "run"
    lines += [_summary_row(f"{label} (`{run.get('commit') or '?'}`)", run), "",
              "| operation | requests | server errors" + (" | server errors before |" if before else " |"),
              "|---|---:|---:|" + ("---:|" if before else "")]
    for op, counts in sorted(run["per_operation"].items()):
        row = f"| `{op}` | {counts['requests']} | {counts['server_errors']} |"
        if before is not None:
            row += f" {before['per_operation'].get(op, {}).get('server_errors', 0)} |"
        lines.append(row)
    lines += ["", "Status codes: " + ", ".join(f"{k}: {v}" for k, v in run["statuses"].items())]
    for title, data in (("Server errors", run), ("Server errors before", before)):
        if data and data["samples"]:
            lines += ["", f"{title} (first request of each operation, cut):", ""]
            lines += [f"- `{op}` {kept[0]['status']}: `{_shown(kept[0]['body'])}`"
                      for op, kept in sorted(data["samples"].items())]
    return "\n".join(lines) + "\n"


def run_record(report: FuzzReport, command: str, examples: int, seconds: float, source: Path | None) -> dict:
    """A run as JSON-ready data: the command, settings, commit and the report's counts."""
    commit = subprocess.run(["git", "-C", str(source or REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    return {"command": command, "examples": examples, "seconds": round(seconds, 1), "commit": commit or None,
            **report.to_dict()}


def main() -> int:
    """Run the fuzz against a fresh sidecar; print and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=100, help="cases per operation and mode (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--source", type=Path, help="run the sidecar from this checkout (PYTHONPATH)")
    ap.add_argument("--name", default="api_fuzz", help="results file name (default api_fuzz)")
    ap.add_argument("--before", type=Path, help="a previous run's JSON to show next to this one")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="mc-fz-", dir="/tmp"))
    proc = start_sidecar(home, args.source)
    started = time.monotonic()
    try:
        report = fuzz(Locations(home).socket, args.examples, args.seed)
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(home, ignore_errors=True)
    command = " ".join([".venv/bin/python", "benchmarks/api_fuzz.py", *sys.argv[1:]])
    run = run_record(report, command, args.examples, time.monotonic() - started, args.source)
    before = json.loads(args.before.read_text()) if args.before else None
    write_results(RESULTS_DIR, args.name, run, markdown(run, before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
