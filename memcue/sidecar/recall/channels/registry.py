"""The channel registry: channel name -> the channel (``base.Channel``). Adding a channel is one module
implementing ``Channel`` and one row here (and its name in ``base.ALL_CHANNELS``)."""

from __future__ import annotations

from memcue.sidecar.recall.channels.base import ALL_CHANNELS, Channel
from memcue.sidecar.recall.channels.bm25 import Bm25Channel
from memcue.sidecar.recall.channels.graph import GraphChannel
from memcue.sidecar.recall.channels.hopfield import HopfieldChannel
from memcue.sidecar.recall.channels.semantic import SemanticChannel
from memcue.sidecar.recall.channels.temporal import TemporalChannel

#: Every channel by name, in ``ALL_CHANNELS`` order.
CHANNELS: dict[str, Channel] = {
    channel.name: channel
    for channel in (SemanticChannel(), Bm25Channel(), TemporalChannel(), GraphChannel(), HopfieldChannel())
}
assert tuple(CHANNELS) == ALL_CHANNELS, "the registry and ALL_CHANNELS must name the same channels, in order"
