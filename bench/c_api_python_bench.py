#!/usr/bin/env python3
"""The C API from Python (issue 58): 100-entry scans of 4 KiB values through
ctypes, one crossing per call (seek, then valid, key, value and next for each
entry) against the batch call (cairn_iter_next_batch: 100 entries in one
crossing). Prints the time per entry of each and their ratio.

Usage: c_api_python_bench.py <path of a shared libcairn> [scans]
(docs/c_api.md, "Overhead").
"""
import ctypes
import os
import random
import shutil
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "python"))
import cairn_example  # noqa: E402  (the example's ctypes wrapper)

KEYS = 5000
VALUE_SIZE = 4096
ENTRIES = 100


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    scans = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    c = cairn_example.Cairn(sys.argv[1])
    lib = c.lib
    for name, res, args in [
            ("cairn_iter_seek", None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
            ("cairn_iter_valid", ctypes.c_ubyte, [ctypes.c_void_p]),
            ("cairn_iter_next", None, [ctypes.c_void_p]),
            ("cairn_iter_key", ctypes.c_void_p, [ctypes.c_void_p,
                                                 ctypes.POINTER(ctypes.c_size_t)]),
            ("cairn_iter_value", ctypes.c_void_p, [ctypes.c_void_p,
                                                   ctypes.POINTER(ctypes.c_size_t)])]:
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    directory = tempfile.mkdtemp(prefix="cairn_c_api_python_bench_")
    try:
        c.open(directory)
        rng = random.Random(1)
        for i in range(KEYS):
            c.put(b"key%08d" % i, rng.randbytes(VALUE_SIZE))
        starts = [b"key%08d" % rng.randrange(KEYS - ENTRIES) for _ in range(scans)]
        err = ctypes.c_void_p()

        def per_entry():
            klen, vlen = ctypes.c_size_t(), ctypes.c_size_t()
            n = 0
            for start in starts:
                it = lib.cairn_create_iterator(c.db, None, ctypes.byref(err))
                lib.cairn_iter_seek(it, start, len(start))
                got = 0
                while got < ENTRIES and lib.cairn_iter_valid(it):
                    k = ctypes.string_at(lib.cairn_iter_key(it, ctypes.byref(klen)), klen.value)
                    v = ctypes.string_at(lib.cairn_iter_value(it, ctypes.byref(vlen)),
                                         vlen.value)
                    lib.cairn_iter_next(it)
                    got += 1
                lib.cairn_iter_destroy(it)
                n += got
            return n

        buf = ctypes.create_string_buffer(ENTRIES * (VALUE_SIZE + 64))
        used = ctypes.c_size_t()

        def batch():
            n = 0
            for start in starts:
                it = lib.cairn_create_iterator(c.db, None, ctypes.byref(err))
                lib.cairn_iter_seek(it, start, len(start))
                got = lib.cairn_iter_next_batch(it, buf, len(buf), ENTRIES, ctypes.byref(used),
                                                ctypes.byref(err))
                # The entries as Python bytes, as per_entry makes them.
                raw = ctypes.string_at(buf, used.value)
                pos = 0
                for _ in range(got):
                    klen, vlen = struct.unpack_from("=II", raw, pos)
                    pos += 8
                    k = raw[pos:pos + klen]
                    v = raw[pos + klen:pos + klen + vlen]
                    pos += klen + vlen
                lib.cairn_iter_destroy(it)
                n += got
            return n

        per_entry()  # warms the cache for both
        results = {}
        for name, fn in (("one crossing per call", per_entry), ("batch call", batch),
                         ("one crossing per call (again)", per_entry)):
            start = time.perf_counter()
            n = fn()
            results[name] = (time.perf_counter() - start) / n
            print("%-30s %8.2f us per entry (%d entries)" % (name, results[name] * 1e6, n))
        slow = min(results["one crossing per call"], results["one crossing per call (again)"])
        print("batch call: %.2fx faster per entry" % (slow / results["batch call"]))
        c.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
