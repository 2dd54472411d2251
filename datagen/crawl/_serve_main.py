"""`python -m datagen.crawl._serve_main ROOT PORT`: the subprocess form of serve_folder.

Prints `READY <base url>` once listening, or `FAILED <why>` and exits 1. Exits when its
stdin closes, so a parent that dies without cleaning up doesn't leave a server behind.
"""

import os
import sys
import threading

from datagen.crawl.server import serve_forever


def _exit_with_parent() -> None:
    sys.stdin.read()  # returns at EOF: the parent closed the pipe or died
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    try:
        serve_forever(sys.argv[1], int(sys.argv[2]),
                      on_ready=lambda url: print("READY " + url, flush=True))
    except OSError as exc:
        print(f"FAILED {exc}", flush=True)
        sys.exit(1)
    except KeyboardInterrupt:
        pass
