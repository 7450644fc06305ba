"""The fast hook command: ``python -I -S <this file> <harness> <event>`` (what the installer writes).

Same behaviour as ``python -m memcue.hooks``, without ``site``: the hook imports the standard library
only, so it needs neither site-packages nor the ``.pth`` files (an editable install's import finder,
setuptools' distutils shim) that ``site`` runs on every start, and ``-I`` keeps ``PYTHON*`` variables and
the user's site folder out. This file puts the folder that holds the ``memcue`` package first on
``sys.path`` (and its own folder, whose module names must not shadow anything, off it) and runs the hook.
Always exits 0.
"""

import time

_STARTED = time.monotonic()


def _entry() -> None:
    import os
    import sys

    os.umask(0o077)  # spool files and the hook log are the user's alone (DESIGN.md section 8)
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # absent under -I / -P
        sys.path.insert(0, os.path.dirname(os.path.dirname(here)))
        from memcue.hooks.run import main, process_started

        main(sys.argv[1:], process_started(_STARTED))
    except BaseException:  # fail open even if the hook package itself is broken
        pass
    os._exit(0)  # nothing is buffered (stdout is written with os.write): skip interpreter teardown


if __name__ == "__main__":
    _entry()
