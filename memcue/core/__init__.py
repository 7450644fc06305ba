"""Shared helpers of the hook, the CLI, the MCP server and the sidecar; standard library only.

Each module is imported by its own name (``from memcue.core.paths import locations``), so the hook loads only
what it uses on every prompt:

- ``paths``: where memcue keeps its files;          ``project``: project identity of a directory or a name;
- ``session_ids``: which session a recall is for;    ``address``: ``memcue://`` addresses and id lists;
- ``text``: the text cleaner and the preview;       ``blocks``: the injected blocks' wording;
- ``spool_format``: the spool's record format.
"""
