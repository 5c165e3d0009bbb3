"""`hmtt analyze` of trace archives on Apache Spark.

Started with spark-submit; every task runs `hmtt analyze ARCHIVE --partial
FILE --blocks A..B` on one range of one archive's blocks, and the driver
merges each archive's partial analyses with `hmtt analyze --combine` into
the JSON of a one-machine `hmtt analyze --json` (the same bytes,
docs/format.md §15). Spark schedules, shows and retries the tasks.

    spark-submit --master local[2] --files target/release/hmtt \\
        contrib/spark/hmtt_spark.py --hmtt hmtt --out results/ \\
        /shared/run1.hmttz /shared/run2.hmttz -- --interleave-shift 12

- The archives (.hmttz, or trace files) are on a path every executor reads.
- `--hmtt` is the binary: a file shipped with `--files` (give its name) or
  a path installed on every executor.
- Each archive is one analysis: RESULTS/NAME.json. A trace of several
  boards is one archive (`hmtt merge` interleaves the boards' captures into
  one trace); its interleave is an `hmtt analyze` option, given after `--`
  with any other (`--geometry`, `--mapping`, `--interval-ms`, `--top`, ...),
  and every task of the job gets the same.
- A task whose hmtt exits non-zero raises with hmtt's stderr, so Spark
  retries it (spark.task.maxFailures; local[N] mode tries once unless
  started as local[N,F]).
- Partials come back to the driver through Spark (collect), or, with
  `--partials-dir` on shared storage, as files there.
"""

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

from pyspark import SparkFiles
from pyspark.sql import SparkSession


def hmtt_path(name):
    """The hmtt binary on this executor: shipped with --files, else a path."""
    if os.sep not in name:
        try:
            shipped = SparkFiles.get(name)
        except Exception:  # no SparkContext files on this node
            shipped = None
        if shipped and os.path.exists(shipped):
            mode = os.stat(shipped).st_mode
            if not mode & stat.S_IXUSR:
                os.chmod(shipped, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            return shipped
        found = shutil.which(name)
        if found:
            return found
    return name


def run_hmtt(binary, args):
    """Runs hmtt; raises with its stderr on a non-zero exit."""
    done = subprocess.run([hmtt_path(binary)] + args, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"hmtt {' '.join(args)} exited with {done.returncode}:\n"
            + done.stderr.decode(errors="replace")
        )
    return done


def block_count(binary, archive, analyze_args, work):
    """The archive's block count: the `trace_blocks` of a partial analysis
    of its first block (format.md §15; the analysis of one block is cheap)."""
    probe = os.path.join(work, "probe.partial.json")
    run_hmtt(binary, ["analyze", archive, "--partial", probe, "--blocks", "0..1"] + analyze_args)
    with open(probe) as f:
        blocks = json.load(f)["trace_blocks"]
    os.remove(probe)
    return blocks


def ranges(blocks, tasks):
    """`tasks` (at most `blocks`) consecutive ranges tiling 0..blocks."""
    tasks = max(1, min(tasks, blocks))
    return [(blocks * i // tasks, blocks * (i + 1) // tasks) for i in range(tasks)]


def analyze_range(binary, analyze_args, partials_dir):
    """The task: partial analyses of the (archive index, archive, A, B) it holds."""

    def run(rows):
        for index, archive, a, b in rows:
            name = f"{index}.{a}-{b}.partial.json"
            if partials_dir:
                out = os.path.join(partials_dir, name)
                run_hmtt(binary, ["analyze", archive, "--partial", out, "--blocks", f"{a}..{b}"] + analyze_args)
                yield index, a, out, None
            else:
                with tempfile.TemporaryDirectory(prefix="hmtt-spark-") as tmp:
                    out = os.path.join(tmp, name)
                    run_hmtt(binary, ["analyze", archive, "--partial", out, "--blocks", f"{a}..{b}"] + analyze_args)
                    with open(out, "rb") as f:
                        yield index, a, None, f.read()

    return run


def main(argv):
    p = argparse.ArgumentParser(
        description="hmtt analyze of trace archives as Spark tasks (one per block range)",
        epilog="Arguments after -- go to every `hmtt analyze --partial` (e.g. --interleave-shift 12).",
    )
    p.add_argument("archives", nargs="+", help="archives (.hmttz) or traces on a path every executor reads")
    p.add_argument("--hmtt", default="hmtt", help="hmtt binary: a name shipped with --files, or a path on every executor")
    p.add_argument("--out", required=True, help="directory of the results: NAME.json per archive")
    p.add_argument("--tasks", type=int, default=0, help="tasks per archive (default: Spark's default parallelism)")
    p.add_argument("--blocks-per-task", type=int, default=0, help="blocks per task (instead of --tasks)")
    p.add_argument("--partials-dir", help="shared directory for the partials (default: returned through Spark)")
    own, analyze_args = argv, []
    if "--" in argv:
        cut = argv.index("--")
        own, analyze_args = argv[:cut], argv[cut + 1:]
    args = p.parse_args(own)
    names = [os.path.splitext(os.path.basename(a))[0] for a in args.archives]
    if len(set(names)) != len(names):
        p.error("two archives have the same name: their results would share a file")

    spark = SparkSession.builder.appName("hmtt analyze").getOrCreate()
    sc = spark.sparkContext
    start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hmtt-spark-driver-") as work:
        # The driver asks the binary it was given (a shipped file is in the
        # driver's SparkFiles too).
        tasks = []
        for index, archive in enumerate(args.archives):
            blocks = block_count(args.hmtt, archive, analyze_args, work)
            if args.blocks_per_task > 0:
                n = -(-blocks // args.blocks_per_task)
            else:
                n = args.tasks or sc.defaultParallelism
            tasks += [(index, archive, a, b) for a, b in ranges(max(blocks, 1), n)]
        sc.setJobDescription(f"hmtt analyze --partial: {len(tasks)} block ranges of {len(args.archives)} archives")
        parts = (
            sc.parallelize(tasks, len(tasks))
            .mapPartitions(analyze_range(args.hmtt, analyze_args, args.partials_dir))
            .collect()
        )
        for index, archive in enumerate(args.archives):
            files = []
            for i, a, path, data in sorted(p for p in parts if p[0] == index):
                if path is None:
                    path = os.path.join(work, f"{index}.{a}.partial.json")
                    with open(path, "wb") as f:
                        f.write(data)
                files.append(path)
            json_out = os.path.join(args.out, names[index] + ".json")
            run_hmtt(args.hmtt, ["analyze", "--combine"] + files + ["--json", json_out])
            print(f"hmtt_spark: {archive}: {len(files)} partial analyses combined into {json_out}", file=sys.stderr)
            if args.partials_dir:
                for f in files:
                    os.remove(f)
    print(
        f"hmtt_spark: {len(args.archives)} archives, {len(tasks)} tasks, {time.perf_counter() - start:.2f} s",
        file=sys.stderr,
    )
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
