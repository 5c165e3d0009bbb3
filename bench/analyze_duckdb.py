"""DuckDB on a trace's Parquet export (bench/analyze.sh): the figures of
`hmtt analyze` that SQL can express, their CPU and wall time with the
Parquet read counted, and a check that they equal hmtt analyze's.

usage: python3 bench/analyze_duckdb.py TRACE.parquet ANALYSIS.json
"""

import json
import resource
import sys
import time

import duckdb


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    parquet, analysis_json = sys.argv[1], sys.argv[2]
    a = json.load(open(analysis_json))
    rank_bits, bank_bits, row_bits, col_bits = map(int, a["banks"]["geometry"].split(","))
    tick_ns = a["tick_ps"] / 1000.0
    interval_ticks = round(a["timeline"]["interval_ns"] / tick_ns)
    first_tick = a["mix"]["first_tick"]
    con = duckdb.connect()
    src = f"read_parquet('{parquet}')"
    bank_shift = 6 + col_bits
    rank_shift = 6 + col_bits + bank_bits + row_bits
    capacity = 1 << (6 + col_bits + bank_bits + row_bits + rank_bits)
    queries = {
        "mix": f"""SELECT board, count(*) FILTER (WHERE kind = 'READ') AS reads,
                          count(*) FILTER (WHERE kind = 'WRITE') AS writes
                   FROM {src} WHERE kind IN ('READ', 'WRITE') GROUP BY board ORDER BY board""",
        "bandwidth": f"""SELECT (tick - {first_tick}) // {interval_ticks} AS interval,
                          count(*) FILTER (WHERE kind = 'READ') AS reads,
                          count(*) FILTER (WHERE kind = 'WRITE') AS writes
                   FROM {src} WHERE kind IN ('READ', 'WRITE') GROUP BY interval ORDER BY interval""",
        "banks": f"""SELECT board, (pa >> {rank_shift}) & {(1 << rank_bits) - 1} AS rank,
                          (pa >> {bank_shift}) & {(1 << bank_bits) - 1} AS bank,
                          count(*) FILTER (WHERE kind = 'READ') AS reads,
                          count(*) FILTER (WHERE kind = 'WRITE') AS writes
                   FROM {src} WHERE kind IN ('READ', 'WRITE') AND pa < {capacity}
                   GROUP BY ALL ORDER BY board, rank, bank""",
        "top pages": f"""SELECT pa >> 12 AS page, count(*) AS refs
                   FROM {src} WHERE kind IN ('READ', 'WRITE')
                   GROUP BY page ORDER BY refs DESC, page LIMIT 32""",
    }
    results = {}
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    for name, q in queries.items():
        c, w = cpu_seconds(), time.perf_counter()
        results[name] = con.execute(q).fetchall()
        print(f"  {name:<10} cpu {cpu_seconds() - c:7.2f} s  wall {time.perf_counter() - w:7.2f} s")
    cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    print(f"duckdb queries: {cpu:.2f} cpu_s {wall:.2f} wall_s ({duckdb.__version__}, {threads} threads)")

    # The same figures as hmtt analyze's (the check that both computed the same).
    mix = {int(b): tuple(v) for b, v in a["mix"]["by_board"].items()}
    ok = {b: (r, w) for b, r, w in results["mix"]} == mix
    intervals = a["timeline"]["intervals"]
    ok &= [tuple(x) for x in results["bandwidth"]] == [
        (k, i["reads"], i["writes"]) for k, i in enumerate(intervals) if i["reads"] + i["writes"] > 0
    ]
    ok &= [tuple(x) for x in results["banks"]] == [
        (b["board"], b["rank"], b["bank"], b["reads"], b["writes"]) for b in a["banks"]["banks"]
    ]
    top = [(p["page"] >> 12, p["reads"] + p["writes"]) for p in a["pages"]["top"]]
    ok &= [tuple(x) for x in results["top pages"][: len(top)]] == top
    print(f"duckdb figures equal hmtt analyze's: {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    main()
