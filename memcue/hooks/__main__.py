"""``python -m memcue.hooks <harness> <event>``: the command a harness runs. Always exits 0."""

import time

_STARTED = time.monotonic()


def _entry() -> None:
    import os
    import sys

    os.umask(0o077)  # spool files and the hook log are the user's alone (DESIGN.md section 8)
    try:
        from memcue.hooks.run import main, process_started

        main(sys.argv[1:], process_started(_STARTED))
    except BaseException:  # fail open even if the hook package itself is broken
        pass
    # Skip interpreter teardown: nothing is buffered (stdout is written with os.write) and exiting
    # now saves milliseconds on every prompt; a detached sidecar child is not waited for.
    os._exit(0)


if __name__ == "__main__":
    _entry()
