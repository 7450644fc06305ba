"""Running recall channels side by side, each bounded in time (one thread pool for the sidecar).

A channel that misses the time limit is reported ``timeout`` and listed as incomplete; its thread is
left to finish in the background (Python threads cannot be killed), so the recall answers on time.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable

from memcue.sidecar.recall.channels import (
    ALL_CHANNELS,
    BM25,
    GRAPH,
    HOPFIELD,
    SEMANTIC,
    TEMPORAL,
    ChannelContext,
    ChannelResult,
    bm25_channel,
    semantic_channel,
)
from memcue.sidecar.recall.graph import graph_channel
from memcue.sidecar.recall.hopfield import hopfield_channel
from memcue.sidecar.recall.temporal import temporal_channel
from memcue.sidecar.recall.vector_index import VectorIndex

_EXECUTOR = cf.ThreadPoolExecutor(max_workers=len(ALL_CHANNELS), thread_name_prefix="memcue-channel")


def run_channels(ctx: ChannelContext, names: tuple[str, ...],
                 timeout_s: float) -> tuple[dict[str, ChannelResult], list[str]]:
    """Run the named channels concurrently; those not done within ``timeout_s`` (s) come back ``timeout``
    and are listed as incomplete. Returns every channel's result (``disabled`` when not run) in
    ``ALL_CHANNELS`` order, and the incomplete ones. Never raises: a channel's exception is its ``error``."""
    vectors = ctx.vectors if ctx.vectors is not None else VectorIndex()  # the sidecar always passes its own
    funcs: dict[str, Callable[[ChannelContext], ChannelResult]] = {
        SEMANTIC: lambda c: semantic_channel(c.store, c.embedder, c.query, project=c.project, k=c.k,
                                             exclude_kinds=c.exclude_kinds, vector=c.vector,
                                             include_superseded=c.include_superseded, index=vectors),
        BM25: lambda c: bm25_channel(c.store, c.keywords, project=c.project, k=c.k, exclude_kinds=c.exclude_kinds,
                                     include_superseded=c.include_superseded),
        TEMPORAL: temporal_channel,
        GRAPH: graph_channel,
        HOPFIELD: lambda c: hopfield_channel(c, vectors),
    }

    def timed(name: str) -> ChannelResult:
        t0 = time.perf_counter()
        result = funcs[name](ctx)
        result.elapsed_ms = (time.perf_counter() - t0) * 1000
        return result

    results: dict[str, ChannelResult] = {}
    futures = {_EXECUTOR.submit(timed, name): name for name in names}
    done, pending = cf.wait(futures, timeout=timeout_s)
    for fut in done:
        name = futures[fut]
        try:
            results[name] = fut.result()
        except Exception as exc:  # noqa: BLE001 - a channel's failure is its status
            results[name] = ChannelResult(name, "error", note=f"{type(exc).__name__}: {exc}")
    incomplete = []
    for fut in pending:
        name = futures[fut]
        fut.cancel()
        incomplete.append(name)
        results[name] = ChannelResult(name, "timeout", note=f"did not finish within {timeout_s:g} s")
    for name in ALL_CHANNELS:
        if name not in results:
            results[name] = ChannelResult(name, "disabled", note="not run in keyword mode")
    return {name: results[name] for name in ALL_CHANNELS}, sorted(incomplete, key=ALL_CHANNELS.index)
