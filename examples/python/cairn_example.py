#!/usr/bin/env python3
"""cairn from Python through ctypes and the C API (cairn/c.h): put, get, a
bounded scan with the batch call (many entries per call into one buffer),
and a range of a large value. Standard library only.

Usage: cairn_example.py <path of a shared libcairn> [directory]
(directory default: a fresh temporary one, removed at the end).
Exit status 0 on success, 1 on a failure, 77 when the library is missing.
"""
import ctypes
import os
import shutil
import struct
import sys
import tempfile

# An errptr: a char* cairn may set to a malloc'd message, kept as an address
# so that it can be handed back to cairn_free.
c_char_pp = ctypes.POINTER(ctypes.c_void_p)

CAIRN_NOT_FOUND = 5  # cairn_code in cairn/c.h


class CairnError(Exception):
    pass


class Cairn:
    """A thin wrapper: one DB handle, errors raised as CairnError."""

    def __init__(self, lib_path):
        lib = ctypes.CDLL(lib_path)
        # Every char* cairn returns must reach cairn_free, so results are
        # declared c_void_p (ctypes would copy and lose a c_char_p).
        sigs = {
            "cairn_options_create": (ctypes.c_void_p, []),
            "cairn_options_destroy": (None, [ctypes.c_void_p]),
            "cairn_options_set_create_if_missing": (None, [ctypes.c_void_p, ctypes.c_ubyte]),
            "cairn_readoptions_create": (ctypes.c_void_p, []),
            "cairn_readoptions_destroy": (None, [ctypes.c_void_p]),
            "cairn_readoptions_set_iterate_lower_bound":
                (None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
            "cairn_readoptions_set_iterate_upper_bound":
                (None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
            "cairn_open": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p, c_char_pp]),
            "cairn_close": (None, [ctypes.c_void_p, c_char_pp]),
            "cairn_release": (None, [ctypes.c_void_p]),
            "cairn_put": (None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, c_char_pp]),
            "cairn_get": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                            ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                                            c_char_pp]),
            "cairn_get_range": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p,
                                                  ctypes.c_char_p, ctypes.c_size_t,
                                                  ctypes.c_uint64, ctypes.c_uint64,
                                                  ctypes.POINTER(ctypes.c_size_t), c_char_pp]),
            "cairn_create_iterator": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p,
                                                        c_char_pp]),
            "cairn_iter_destroy": (None, [ctypes.c_void_p]),
            "cairn_iter_seek_to_first": (None, [ctypes.c_void_p]),
            "cairn_iter_next_batch": (ctypes.c_size_t, [ctypes.c_void_p, ctypes.c_char_p,
                                                        ctypes.c_size_t, ctypes.c_size_t,
                                                        ctypes.POINTER(ctypes.c_size_t),
                                                        c_char_pp]),
            "cairn_error_code": (ctypes.c_int, [ctypes.c_void_p]),
            "cairn_free": (None, [ctypes.c_void_p]),
            "cairn_version": (ctypes.c_char_p, []),
        }
        for name, (res, args) in sigs.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        self.lib = lib
        self.db = None

    def _check(self, err):
        """Raises the error an errptr received, freeing the message."""
        if not err.value:
            return
        text = ctypes.string_at(err.value).decode(errors="replace")
        self.lib.cairn_free(err.value)
        err.value = None
        raise CairnError(text)

    def _take(self, ptr, length):
        """Copies a malloc'd buffer out and frees it."""
        data = ctypes.string_at(ptr, length)
        self.lib.cairn_free(ptr)
        return data

    def open(self, path):
        opts = self.lib.cairn_options_create()
        self.lib.cairn_options_set_create_if_missing(opts, 1)
        err = ctypes.c_void_p()
        self.db = self.lib.cairn_open(opts, path.encode(), ctypes.byref(err))
        self.lib.cairn_options_destroy(opts)
        self._check(err)

    def close(self):
        err = ctypes.c_void_p()
        self.lib.cairn_close(self.db, ctypes.byref(err))
        self.lib.cairn_release(self.db)
        self.db = None
        self._check(err)

    def put(self, key, value):
        err = ctypes.c_void_p()
        self.lib.cairn_put(self.db, None, key, len(key), value, len(value), ctypes.byref(err))
        self._check(err)

    def get(self, key):
        """The value, or None for a missing key."""
        err = ctypes.c_void_p()
        n = ctypes.c_size_t()
        ptr = self.lib.cairn_get(self.db, None, key, len(key), ctypes.byref(n),
                                 ctypes.byref(err))
        if err.value and self.lib.cairn_error_code(err.value) == CAIRN_NOT_FOUND:
            self.lib.cairn_free(err.value)
            return None
        self._check(err)
        return self._take(ptr, n.value)

    def get_range(self, key, offset, length):
        err = ctypes.c_void_p()
        n = ctypes.c_size_t()
        ptr = self.lib.cairn_get_range(self.db, None, key, len(key), offset, length,
                                       ctypes.byref(n), ctypes.byref(err))
        self._check(err)
        return self._take(ptr, n.value)

    def scan(self, lower=None, upper=None, buf_size=64 << 10):
        """Yields (key, value) in [lower, upper), many per C call."""
        ro = self.lib.cairn_readoptions_create()
        if lower is not None:
            self.lib.cairn_readoptions_set_iterate_lower_bound(ro, lower, len(lower))
        if upper is not None:
            self.lib.cairn_readoptions_set_iterate_upper_bound(ro, upper, len(upper))
        err = ctypes.c_void_p()
        it = self.lib.cairn_create_iterator(self.db, ro, ctypes.byref(err))
        self.lib.cairn_readoptions_destroy(ro)
        self._check(err)
        try:
            self.lib.cairn_iter_seek_to_first(it)
            buf = ctypes.create_string_buffer(buf_size)
            used = ctypes.c_size_t()
            while True:
                n = self.lib.cairn_iter_next_batch(it, buf, len(buf), 1024, ctypes.byref(used),
                                                   ctypes.byref(err))
                self._check(err)
                if n == 0:
                    if used.value > len(buf):  # one entry larger than the buffer
                        buf = ctypes.create_string_buffer(used.value)
                        continue
                    return
                raw = buf.raw[:used.value]
                off = 0
                for _ in range(n):
                    klen, vlen = struct.unpack_from("=II", raw, off)
                    off += 8
                    yield raw[off:off + klen], raw[off + klen:off + klen + vlen]
                    off += klen + vlen
        finally:
            self.lib.cairn_iter_destroy(it)


def main(argv):
    if len(argv) < 2 or not os.path.exists(argv[1]):
        print("skipped: no shared library given (libcairn_c.so, the C API; any preset "
              "builds it: cmake --build --preset ci --target cairn_c)")
        return 77
    cairn = Cairn(argv[1])
    tmp = None
    if len(argv) > 2:
        path = argv[2]
    else:
        tmp = tempfile.mkdtemp(prefix="cairn_py_")
        path = os.path.join(tmp, "db")
    try:
        cairn.open(path)
        for i in range(100):
            cairn.put(b"key%03d" % i, b"value %d" % i)
        assert cairn.get(b"key042") == b"value 42"
        assert cairn.get(b"missing") is None

        rows = list(cairn.scan(b"key010", b"key020"))
        assert [k for k, _ in rows] == [b"key%03d" % i for i in range(10, 20)], rows
        assert rows[0][1] == b"value 10"
        # A buffer smaller than one entry grows and the scan goes on.
        assert len(list(cairn.scan(b"key000", b"key005", buf_size=8))) == 5

        large = bytes(range(256)) * 4096  # 1 MiB: kept in the value log
        cairn.put(b"large", large)
        assert cairn.get_range(b"large", 300000, 1000) == large[300000:301000]
        assert cairn.get_range(b"large", len(large) - 10, 100) == large[-10:]
        cairn.close()

        cairn.open(path)  # still there after a reopen
        assert cairn.get(b"large") == large
        cairn.close()
        print("cairn_example.py: put, get, scan and get-range ran against cairn %s"
              % cairn.lib.cairn_version().decode())
        return 0
    except (AssertionError, CairnError) as e:
        print("cairn_example.py failed: %r" % (e,))
        return 1
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
