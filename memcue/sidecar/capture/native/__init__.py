"""Native memory sources: the memory files the harnesses keep and load themselves (Claude Code's ``CLAUDE.md``
files, rules and auto memory; ``AGENTS.md``; Codex's memories; Hermes' ``MEMORY.md``/``USER.md``), each read by
one module behind ``NativeSource`` and kept in step with the store by ``NativeSync``. ``SOURCES`` is the
registry, in the order ``memcue sources`` lists them."""

from memcue.sidecar.capture.native.agents_md import AgentsMdSource
from memcue.sidecar.capture.native.base import NativeSource, SourceFile
from memcue.sidecar.capture.native.claude_code import ClaudeCodeSource
from memcue.sidecar.capture.native.codex_memories import CodexMemoriesSource
from memcue.sidecar.capture.native.hermes import HermesSource
from memcue.sidecar.capture.native.markdown import Entry, kind_for, parse
from memcue.sidecar.capture.native.sync import SOURCE_PREFIX, STATE_KEY, NativeSync, source_id

#: Every native source, by name.
SOURCES: dict[str, NativeSource] = {s.name: s for s in (ClaudeCodeSource(), AgentsMdSource(), CodexMemoriesSource(),
                                                         HermesSource())}

__all__ = ["SOURCES", "SOURCE_PREFIX", "STATE_KEY", "AgentsMdSource", "ClaudeCodeSource", "CodexMemoriesSource",
           "Entry", "HermesSource", "NativeSource", "NativeSync", "SourceFile", "kind_for", "parse", "source_id"]
