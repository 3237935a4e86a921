"""Store throughput: writing and looking up 1,000,000 cache keys in the run store's SQLite cache.

python benchmarks/perf/store_cache.py [--keys 1000000]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import tempfile
import time
from pathlib import Path

from dualjudge.inference.types import GenerationResult
from dualjudge.storage.store import Store


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    n = ap.parse_args().keys
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)]
    result = GenerationResult(
        '{"reasoning":"r","equivalent":true}',
        finish_reason="stop",
        prompt_tokens=900,
        completion_tokens=20,
        latency_s=0.1,
        constraint_kind="json",
    )
    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "results.sqlite")
        t0 = time.perf_counter()
        batch = 10_000
        for i in range(0, n, batch):
            store.cache_put_many((k, "judge", result) for k in keys[i : i + batch])
        write = time.perf_counter() - t0
        order = list(range(n))
        random.Random(0).shuffle(order)
        t0 = time.perf_counter()
        hits = sum(store.cache_get(keys[i]) is not None for i in order)
        read = time.perf_counter() - t0
        size = (Path(d) / "results.sqlite").stat().st_size
        store.close()
    print(
        f"{n:,} keys: write {write:.1f} s ({n / write:,.0f} keys/s, batches of {batch:,}); "
        f"random lookups {read:.1f} s ({n / read:,.0f} keys/s, {hits:,} hits); database {size / 2**20:.0f} MiB"
    )


if __name__ == "__main__":
    main()
