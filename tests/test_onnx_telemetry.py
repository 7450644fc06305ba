"""ONNX Runtime's telemetry is off in every process memcue loads it in (issue 16, finding 5): the variable that
stops it is set before onnxruntime loads, whatever the user's environment says, and onnxruntime is pinned."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import os, sys
from pathlib import Path
assert "onnxruntime" not in sys.modules
from memcue.sidecar.runtime.embedding import Embedder
emb = Embedder(Path(sys.argv[1]))
emb.load()
assert "onnxruntime" in sys.modules, "the model loaded through onnxruntime"
print(os.environ.get("ORT_DISABLE_TELEMETRY"), len(emb.embed(["a test sentence"])[0]))
"""


def _probe(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "0", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "models")], capture_output=True,
                          text=True, env=env, timeout=300)


def test_onnx_telemetry_is_off_when_the_embedding_model_loads(tmp_path: Path) -> None:
    out = _probe(tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "384"], out.stdout

