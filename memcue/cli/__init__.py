"""The ``memcue`` command: one module per command group, one output and usage-error path (``output``)."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memcue`` console script (``cli.main.main``); returns the exit code. A Ctrl-C while the
    command's modules load (half a second, longer on a busy machine) ends it like one while it runs: exit 130, no
    traceback."""
    try:
        from memcue.cli.main import main as run

        return run(argv)
    except KeyboardInterrupt:
        return 130


__all__ = ["main"]
