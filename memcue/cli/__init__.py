"""The ``memcue`` command: one module per command group, one output and usage-error path (``output``)."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memcue`` console script (``cli.main.main``); returns the exit code. A Ctrl-C while the
    command's modules load (half a second, longer on a busy machine) ends it like one while it runs: exit 130, no
    traceback. SIGINT is held (blocked) during the imports and delivered once they are done: one that came in the
    middle of the import machinery would otherwise surface there as an "Exception ignored" traceback."""
    import _signal  # the interpreter's own module, already loaded: no import before the block

    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
    try:
        try:
            from memcue.cli.main import main as run
        finally:
            _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})  # a held Ctrl-C raises here
        return run(argv)
    except KeyboardInterrupt:
        return 130


__all__ = ["main"]
