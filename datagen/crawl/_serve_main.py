"""`python -m datagen.crawl._serve_main ROOT PORT`: the subprocess form of serve_folder.

Prints `READY <base url>` once listening, or `FAILED <why>` and exits 1.
"""

import sys

from datagen.crawl.server import serve_forever

if __name__ == "__main__":
    try:
        serve_forever(sys.argv[1], int(sys.argv[2]),
                      on_ready=lambda url: print("READY " + url, flush=True))
    except OSError as exc:
        print(f"FAILED {exc}", flush=True)
        sys.exit(1)
    except KeyboardInterrupt:
        pass
