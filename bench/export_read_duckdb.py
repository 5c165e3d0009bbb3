"""DuckDB's read side of Parquet exports (`HMTT_EXPORT_READ=1 bash bench/export.sh`):
the CPU seconds DuckDB takes to read and decode columns of each file given,
so that the export's settings are weighed by what they cost its readers too.

usage: python3 bench/export_read_duckdb.py ROUNDS FILE.parquet...

Each query runs ROUNDS times per file, the files alternating within a
round (a change of the host's load falls on all of them); the median CPU
seconds (user + system of this process, DuckDB at one thread) are printed
per query and file, with the file's size. The queries sum a column so that
every value is decoded (DuckDB answers a bare count(*) from the footer).
"""

import os
import resource
import sys

import duckdb

QUERIES = {
    "every column": "sum(tick), sum(time_ns), sum(board), sum(length(kind)), sum(pa), "
    "sum(is_write::int), sum(value), sum(length(event))",
    "tick": "sum(tick)",
    "time_ns": "sum(time_ns)",
    "pa": "sum(pa)",
    "kind": "sum(length(kind))",
}


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main():
    rounds, files = int(sys.argv[1]), sys.argv[2:]
    con = duckdb.connect()
    con.execute("SET threads = 1")
    print(f"duckdb {duckdb.__version__}, 1 thread, median of {rounds} rounds")
    print(f"{'query':<14} {'file':<40} {'MB':>7} {'cpu_s':>7}")
    for name, select in QUERIES.items():
        runs = {f: [] for f in files}
        for _ in range(rounds):
            for f in files:
                c = cpu_seconds()
                con.execute(f"SELECT {select} FROM read_parquet('{f}')").fetchall()
                runs[f].append(cpu_seconds() - c)
        for f in files:
            size = os.path.getsize(f) / 1e6
            print(f"{name:<14} {os.path.basename(f):<40} {size:7.1f} {median(runs[f]):7.3f}")


if __name__ == "__main__":
    main()
