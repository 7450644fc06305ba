"""Running recall channels side by side, each bounded in time (one thread pool for the sidecar).

The runner alone times channels and sets the ``error`` and ``timeout`` statuses. A channel that misses
the time limit is reported ``timeout`` and listed as incomplete; its thread is left to finish in the
background (Python threads cannot be killed), so the recall answers on time.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import time

from memcue.sidecar.recall.channels.base import ALL_CHANNELS, Channel, ChannelContext, ChannelResult
from memcue.sidecar.recall.channels.registry import CHANNELS

log = logging.getLogger("memcue.recall")

_EXECUTOR = cf.ThreadPoolExecutor(max_workers=len(ALL_CHANNELS), thread_name_prefix="memcue-channel")


def run_channel(channel: Channel, ctx: ChannelContext) -> ChannelResult:
    """Run one channel in this thread and time it (``elapsed_ms``, ms). Never raises: an exception becomes
    the channel's ``error`` status with the exception as its note (and is logged)."""
    t0 = time.perf_counter()
    try:
        result = channel.run(ctx)
    except Exception as exc:  # noqa: BLE001 - a channel's failure is its status
        log.exception("%s channel failed", channel.name)
        result = ChannelResult(channel.name, "error", note=f"{type(exc).__name__}: {exc}")
    result.elapsed_ms = (time.perf_counter() - t0) * 1000
    return result


def run_channels(ctx: ChannelContext, names: tuple[str, ...],
                 timeout_s: float) -> tuple[dict[str, ChannelResult], list[str]]:
    """Run the named channels (``registry.CHANNELS``) concurrently; those not done within ``timeout_s`` (s)
    come back ``timeout`` and are listed as incomplete. Returns every channel's result (``disabled`` when not
    run) in ``ALL_CHANNELS`` order, and the incomplete ones in that order. Never raises."""
    results: dict[str, ChannelResult] = {}
    futures = {_EXECUTOR.submit(run_channel, CHANNELS[name], ctx): name for name in names}
    done, pending = cf.wait(futures, timeout=timeout_s)
    for fut in done:
        results[futures[fut]] = fut.result()
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
