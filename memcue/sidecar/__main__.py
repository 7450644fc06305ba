"""``python -m memcue.sidecar``: run the sidecar (hooks and clients start it detached this way)."""

# A stop signal during the imports below waits (blocked) until ``serve`` has its handlers in place, which
# then unblocks it: a sidecar stopped at any point of start-up exits cleanly (issue 13). ``_signal`` is the
# interpreter's own module, already loaded when any code runs: blocking is the first thing done, with no
# import (``signal``'s takes milliseconds on a busy machine) before it.
import _signal

_signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGTERM, _signal.SIGINT})

import os  # noqa: E402
import sys  # noqa: E402

# One thread for numpy's BLAS: with onnxruntime in the same process, more made embedding 3-4x slower
# (DESIGN.md section 2). Must be set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# ONNX Runtime's telemetry off before anything can load it (memcue.sidecar.runtime.assets.ORT_TELEMETRY_ENV).
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

from memcue.sidecar.lifecycle import serve  # noqa: E402

if __name__ == "__main__":
    sys.exit(serve(foreground="--foreground" in sys.argv))
