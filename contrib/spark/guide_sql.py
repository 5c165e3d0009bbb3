"""Runs the SQL of docs/guide.md §12 on a partitioned Parquet dataset
(`hmtt export --format parquet --partition-ms N -o DATASET`) with DuckDB or
Spark SQL, and checks each figure against `hmtt analyze --json`'s.

    python3 contrib/spark/guide_sql.py --engine duckdb DATASET ANALYSIS.json
    spark-submit contrib/spark/guide_sql.py --engine spark DATASET ANALYSIS.json

The queries are the guide's ```sql blocks, as written; only the
constants of the `params` block are replaced by the analysed trace's, and
the dataset's path in the statement that names it. Prints one line per
figure and exits 1 when one differs.
"""

import argparse
import json
import os
import re
import sys
import time

GUIDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "guide.md")


def guide_blocks(path):
    """The guide's ```sql blocks by their first line's `-- NAME`."""
    text = open(path).read()
    blocks = {}
    for body in re.findall(r"```sql\n(.*?)```", text, re.S):
        first, _, rest = body.partition("\n")
        if first.startswith("-- "):
            blocks[first[3:].strip().removeprefix("figure: ")] = body
    return blocks


def params_of(analysis):
    """The `params` constants of the analysed trace."""
    rank_bits, bank_bits, row_bits, col_bits = map(int, analysis["banks"]["geometry"].split(","))
    interval_ps = analysis["timeline"]["interval_ns"] * 1000
    interval_ticks = round(interval_ps / analysis["tick_ps"])
    if interval_ticks * analysis["tick_ps"] != interval_ps:
        sys.exit(f"guide_sql: the interval ({interval_ps} ps) is not a whole number of ticks")
    return {
        "first_tick": analysis["mix"]["first_tick"],
        "interval_ticks": interval_ticks,
        "bank_unit": 1 << (6 + col_bits),
        "banks": 1 << bank_bits,
        "rank_unit": 1 << (6 + col_bits + bank_bits + row_bits),
        "ranks": 1 << rank_bits,
        "capacity": 1 << (6 + col_bits + bank_bits + row_bits + rank_bits),
    }


def with_params(block, params):
    """The guide's `params` statement with this trace's values."""
    seen = set()

    def value(m):
        seen.add(m.group(2))
        return f"CAST({params[m.group(2)]} AS BIGINT) AS {m.group(2)}"

    sql = re.sub(r"CAST\((\d+) AS BIGINT\) AS (\w+)", value, block)
    if seen != set(params):
        sys.exit(f"guide_sql: the guide's params are {sorted(seen)}, expected {sorted(params)}")
    return sql


def expected(analysis):
    """Each figure as hmtt analyze has it, as rows of the queries."""
    return {
        "mix": [(int(b), r, w) for b, (r, w) in sorted(analysis["mix"]["by_board"].items(), key=lambda x: int(x[0]))],
        "bandwidth": [
            (k, i["reads"], i["writes"])
            for k, i in enumerate(analysis["timeline"]["intervals"])
            if i["reads"] + i["writes"] > 0
        ],
        "banks": [(b["board"], b["rank"], b["bank"], b["reads"], b["writes"]) for b in analysis["banks"]["banks"]],
        "top pages": [(p["page"] >> 12, p["reads"] + p["writes"]) for p in analysis["pages"]["top"]],
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--engine", choices=["duckdb", "spark"], required=True)
    p.add_argument("--guide", default=GUIDE)
    p.add_argument("dataset")
    p.add_argument("analysis")
    args = p.parse_args()
    analysis = json.load(open(args.analysis))
    blocks = guide_blocks(args.guide)
    figures = ["mix", "bandwidth", "banks", "top pages"]
    missing = [n for n in ["DuckDB", "Spark SQL", "params"] + figures if n not in blocks]
    if missing:
        sys.exit(f"guide_sql: {args.guide} has no sql block {missing}")
    dataset = os.path.abspath(args.dataset).replace("'", "''")
    view_block = blocks["DuckDB" if args.engine == "duckdb" else "Spark SQL"]
    view = view_block.replace("run-dataset", dataset)
    if view == view_block:
        sys.exit("guide_sql: the guide's view names no run-dataset")
    statements = [view, with_params(blocks["params"], params_of(analysis))]

    start = time.perf_counter()
    if args.engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        run = lambda q: [tuple(r) for r in con.execute(q).fetchall()]  # noqa: E731
        version = duckdb.__version__
    else:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName("hmtt guide SQL").getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
        run = lambda q: [tuple(r) for r in spark.sql(q).collect()]  # noqa: E731
        version = spark.version
    for s in statements:
        run(s.strip().rstrip(";"))
    want = expected(analysis)
    same = True
    for name in figures:
        got = [tuple(int(x) for x in row) for row in run(blocks[name])]
        if name == "top pages":
            # hmtt lists --top pages (20 by default): the first of the 32.
            got = got[: len(want[name])]
        ok = got == want[name] and len(got) > 0
        same &= ok
        print(f"{args.engine} {name}: {len(got)} rows, {'equal' if ok else 'DIFFERENT'} to hmtt analyze's")
        if not ok:
            print(f"  sql:  {got[:8]}\n  hmtt: {want[name][:8]}")
    print(f"{args.engine} ({version}): {time.perf_counter() - start:.2f} s")
    if args.engine == "spark":
        spark.stop()
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
