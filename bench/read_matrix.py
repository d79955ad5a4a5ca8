#!/usr/bin/env python3
"""The read/load matrix of issue 14 (docs/bench.md, "The matrix").

For each value size, each engine in turn (cairn separated, cairn inline,
RocksDB, RocksDB BlobDB) loads the same key space of incompressible values in
random order, timed including the flush and compactions it leaves behind,
then runs point reads on 1 and 8 threads and seek + 100 next scans, with the
page cache dropped before every phase, O_DIRECT reads and the same cache on
every engine. Device bytes are what the process read from storage
(/proc/self/io read_bytes), the same measure for every engine. Prints one
markdown table per size and, with --json_out, every raw record.

  bench/read_matrix.py [--build build/release] [--sizes 1024,4096,65536]
                       [--live_mb 1024] [--cache_mb 256] [--read_secs 15]
                       [--engines cairn,inline,rocksdb,blobdb]

An engine "cairn@N" is cairn separated with --value_separation_threshold=N
(values of at least N bytes separated; "cairn" keeps the default); any
engine followed by ":flag=value" pairs gets those cairn_bench flags too
(e.g. "cairn:separate_at_flush_below=0").

Run it on a quiet machine (no compile, no other benchmark): it compares
engines measured one after the other.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ENGINE_FLAGS = {
    "cairn": ["--engine=cairn", "--value_mode=separated"],
    "inline": ["--engine=cairn", "--value_mode=inline"],
    "rocksdb": ["--engine=rocksdb"],
    "blobdb": ["--engine=blobdb"],
}


def engine_flags(engine):
    if ":" in engine:
        # "cairn:flag=value:flag2=value2": an engine with flags of its own.
        base, *extra = engine.split(":")
        return engine_flags(base) + [f"--{kv}" for kv in extra]
    if engine.startswith("cairn@"):
        return ENGINE_FLAGS["cairn"] + [f"--value_separation_threshold={int(engine[6:])}"]
    if engine not in ENGINE_FLAGS:
        sys.exit(f"read_matrix: unknown engine {engine}")
    return ENGINE_FLAGS[engine]


def drop_cache():
    subprocess.run(["sync"], check=False)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        print("read_matrix: cannot drop the page cache (not root?); reads may hit it",
              file=sys.stderr)


def run(bench, common, extra):
    cmd = [bench] + common + extra + ["--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if not records:
        sys.exit("read_matrix: no result from " + " ".join(cmd))
    return records[-1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build/release")
    p.add_argument("--sizes", default="1024,4096,65536")
    p.add_argument("--live_mb", type=int, default=1024)
    p.add_argument("--cache_mb", type=int, default=256)
    p.add_argument("--read_secs", type=int, default=15)
    p.add_argument("--engines", default="cairn,inline,rocksdb,blobdb")
    p.add_argument("--db", default="/tmp/cairn_read_matrix")
    p.add_argument("--json_out", default="")
    a = p.parse_args()
    bench = os.path.join(a.build, "bench", "cairn_bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"read_matrix: {bench} not built (cmake --build --preset release)")
    raw = []
    for size in [int(s) for s in a.sizes.split(",")]:
        num = a.live_mb * 1024 * 1024 // size
        common = [f"--value_size={size}", f"--num={num}", "--compression_ratio=1.0",
                  "--compression=none", "--direct_reads", f"--cache_mb={a.cache_mb}",
                  f"--db={a.db}"]
        rows = []
        for engine in a.engines.split(","):
            flags = engine_flags(engine)
            drop_cache()
            load = run(bench, common, flags + ["--benchmarks=fillrandom"])
            phases = {"load": load}
            for name, extra in [("get1", ["--benchmarks=readrandom", "--threads=1"]),
                                ("get8", ["--benchmarks=readrandom", "--threads=8"]),
                                ("seek100", ["--benchmarks=seekrandom", "--seek_nexts=100",
                                             "--threads=1"])]:
                drop_cache()
                phases[name] = run(bench, common, flags + extra + [
                    "--use_existing_db", f"--duration={a.read_secs}"])
            shutil.rmtree(a.db, ignore_errors=True)
            label = load["engine"] + (f" (threshold {engine[6:].split(':')[0]})" if "@" in engine else "")
            if ":" in engine:
                label += " (" + ", ".join(engine.split(":")[1:]) + ")"
            rows.append((label, phases))
            raw.append({"value_size": size, "engine": load["engine"], "phases": phases})
        print(f"\n### {size} B values, {a.live_mb} MiB loaded, {a.cache_mb} MiB cache\n")
        print("| engine | load MiB/s incl. settle | settle s | load w-amp | get 1 thr/s "
              "| get 8 thr/s | seek+100/s | device B/get | device B/scan |")
        print("|---|---|---|---|---|---|---|---|---|")
        for engine, ph in rows:
            print(f"| {engine} | {ph['load']['settled_mb_per_sec']:.1f} | "
                  f"{ph['load']['settle_seconds']:.1f} | "
                  f"{ph['load']['write_amp']['total']:.2f} | "
                  f"{ph['get1']['ops_per_sec']:,.0f} | {ph['get8']['ops_per_sec']:,.0f} | "
                  f"{ph['seek100']['ops_per_sec']:,.0f} | "
                  f"{ph['get1']['os_read_bytes_per_op']:,.0f} | "
                  f"{ph['seek100']['os_read_bytes_per_op']:,.0f} |")
        sys.stdout.flush()
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(raw, f, indent=1)


if __name__ == "__main__":
    main()
