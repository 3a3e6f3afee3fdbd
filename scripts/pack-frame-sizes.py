#!/usr/bin/env python3
"""Frame bytes of two published stores of the same ledgers, ledger by ledger.

    scripts/pack-frame-sizes.py BASE_STORE DICT_STORE [SAMPLES] [PERIOD]

BASE_STORE and DICT_STORE are directory stores (`ledgerstore publish
--cold.store DIR`) of the same ledgers, say in pack versions 3 and 4. Reads
each pack's header and ledger table (crates/pack/src/format.rs) and prints
both stores' bytes a ledger, then their frames' ratio on the ledgers whose
source is none of the first SAMPLES (default 2) dictionary samples of their
pack. The lake-fixture repeats PERIOD (default 20) real ledgers, so a
version-4 pack holds near-copies of the ledgers its dictionary was sampled
from, which compress to almost nothing and flatter its totals
(docs/benchmarks.md, "Packs with their own dictionary").
"""

import os
import struct
import sys

LEDGER_PAGE, LEDGER_ENTRY, PAGE_CRC = 128, 24, 4


def pack_frames(path):
    """(first, last, {seq: frame bytes}, file size) of one pack."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"LSPACK01":
        sys.exit(f"{path}: not a pack")
    first, last = struct.unpack(">II", b[12:20])
    ledger_table, _, size = struct.unpack(">QQQ", b[32:56])
    out = {}
    for i in range(last - first + 1):
        page, idx = divmod(i, LEDGER_PAGE)
        at = ledger_table + page * (LEDGER_PAGE * LEDGER_ENTRY + PAGE_CRC) + idx * LEDGER_ENTRY
        _, length = struct.unpack(">QI", b[at : at + 12])
        out[first + i] = length
    return first, last, out, size


def dict_samples(first, last):
    """crates/pack/src/dict.rs `dict_samples`: the middle first, then the
    quarters, eighths, and so on."""
    n, out = last - first + 1, []
    for step in (16, 8, 4, 2, 1):
        for j in range(step, 32, step):
            if (j // step) % 2 == 1:
                seq = min(first + n * j // 32, last)
                if seq not in out:
                    out.append(seq)
    return out


def load(store):
    frames, packs, total = {}, [], 0
    for name in sorted(os.listdir(os.path.join(store, "packs"))):
        first, last, f, size = pack_frames(os.path.join(store, "packs", name))
        frames.update(f)
        packs.append((first, last))
        total += size
    return frames, packs, total


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    base, with_dict = sys.argv[1], sys.argv[2]
    samples = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    period = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    a, _, ta = load(base)
    b, packs, tb = load(with_dict)
    if set(a) != set(b):
        sys.exit("the two stores do not hold the same ledgers")
    origin = min(a)
    left_out = set()
    for first, last in packs:
        sources = {(s - origin) % period for s in dict_samples(first, last)[:samples]}
        left_out.update(s for s in range(first, last + 1) if (s - origin) % period in sources)
    kept = [s for s in a if s not in left_out]
    n = len(a)
    print(f"{n} ledgers; {len(left_out)} left out (sources of their pack's first {samples} samples)")
    for name, frames, total in ((base, a, ta), (with_dict, b, tb)):
        print(
            f"{name}: {total} bytes, {total / n / 1000:.1f} KB a ledger; "
            f"frames of the others {sum(frames[s] for s in kept) / len(kept) / 1000:.1f} KB"
        )
    ratio = sum(b[s] for s in kept) / sum(a[s] for s in kept)
    print(f"frames of the others, {with_dict} / {base}: {ratio:.3f}")


if __name__ == "__main__":
    main()
