"""A writer process for the durability tests: commits attempts and reviews in a loop and
prints what it committed, one line each, only AFTER the commit returned.

    python tests/progress_writer.py DB TAG [COUNT]

Lines: ``a <attempt id>`` or ``r <card item>``. Without COUNT it runs until killed.
Imports only tutor.progress, so it starts fast.
"""

import os
import random
import sys
import time

from tutor.progress import ProgressStore


def main() -> None:
    path, tag = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else None
    store = ProgressStore(path)
    rng = random.Random(os.getpid())
    n = 0
    while count is None or n < count:
        n += 1
        if n % 2:
            # Code of varying size so a kill can land in the middle of writing pages.
            code = f"# {tag}-{n}\n" + "x = 1\n" * rng.randrange(1, 700)
            aid = store.record_attempt("dur", f"l/e{n % 7}", passed=bool(n % 3), code=code, content_hash=tag)
            print(f"a {aid}", flush=True)
        else:
            item = f"l/{tag}-{n}"
            store.review("dur", item, n % 3 != 0, content_hash=tag)
            print(f"r {item}", flush=True)
        if n % 5 == 0:
            store.save_draft("dur", f"l/e{n % 7}", f"draft {tag}-{n}")
        # A short random pause, as between a learner's actions, so concurrent writers
        # interleave instead of one starving the others of the write lock.
        time.sleep(rng.uniform(0, 0.002))
    store.close()


if __name__ == "__main__":
    main()
