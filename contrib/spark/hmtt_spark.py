"""`hmtt analyze` of trace archives on Apache Spark.

Started with spark-submit; every task runs `hmtt analyze ARCHIVE --partial
FILE --blocks A..B` on one range of one archive's blocks, and the driver
merges each archive's partial analyses with `hmtt analyze --combine` into
the JSON of a one-machine `hmtt analyze --json` (the same bytes,
docs/format.md §15). Spark schedules, shows and retries the tasks.

With `--plot`, a second stage draws the pictures: the combination also
writes the whole trace's plot axes (`--write-plot-axes`), every task runs
`hmtt analyze ARCHIVE --blocks A..B --plot-axes AXES --partial FILE` on its
range, and `hmtt analyze --combine --plot` sums the grids into the pictures
of a one-machine `hmtt analyze --plot` (the same bytes).

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
  `--partials-dir` on shared storage, as files there. The plot axes go to
  the tasks inside the job (no shared path needed).
- With `--plot`, RESULTS/NAME/ holds the archive's pictures.
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


def partial_task(binary, analyze_args, partials_dir, axes=None):
    """The task: partial analyses (or, with `axes`, a broadcast of
    {archive index: plot axes bytes}, pictures partials) of the (archive
    index, archive, A, B) it holds."""

    def partial(tmp, index, archive, a, b, out):
        extra = []
        if axes is not None:
            axes_file = os.path.join(tmp, f"{index}.axes.json")
            if not os.path.exists(axes_file):
                with open(axes_file, "wb") as f:
                    f.write(axes.value[index])
            extra = ["--plot-axes", axes_file]
        run_hmtt(binary, ["analyze", archive, "--partial", out, "--blocks", f"{a}..{b}"] + extra + analyze_args)

    def run(rows):
        kind = "partial" if axes is None else "pictures"
        with tempfile.TemporaryDirectory(prefix="hmtt-spark-") as tmp:
            for index, archive, a, b in rows:
                name = f"{index}.{a}-{b}.{kind}.json"
                if partials_dir:
                    out = os.path.join(partials_dir, name)
                    partial(tmp, index, archive, a, b, out)
                    yield index, a, out, None
                else:
                    out = os.path.join(tmp, name)
                    partial(tmp, index, archive, a, b, out)
                    with open(out, "rb") as f:
                        yield index, a, None, f.read()
                    os.remove(out)

    return run


def gather(parts, index, work, kind):
    """The files of archive `index`'s partials, in block order (written
    into `work` where they came back through Spark)."""
    files = []
    for i, a, path, data in sorted(p for p in parts if p[0] == index):
        if path is None:
            path = os.path.join(work, f"{index}.{a}.{kind}.json")
            with open(path, "wb") as f:
                f.write(data)
        files.append(path)
    return files


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
    p.add_argument("--plot", action="store_true", help="also draw each archive's pictures into RESULTS/NAME/")
    p.add_argument("--plot-format", default="png,svg", help="the pictures' formats (as hmtt analyze --plot-format)")
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
            .mapPartitions(partial_task(args.hmtt, analyze_args, args.partials_dir))
            .collect()
        )
        analyses = {index: gather(parts, index, work, "partial") for index in range(len(args.archives))}
        axes = {}
        for index, archive in enumerate(args.archives):
            json_out = os.path.join(args.out, names[index] + ".json")
            combine = ["analyze", "--combine"] + analyses[index] + ["--json", json_out]
            if args.plot:
                axes_file = os.path.join(work, f"{index}.axes.json")
                combine += ["--write-plot-axes", axes_file]
            run_hmtt(args.hmtt, combine)
            if args.plot:
                with open(axes_file, "rb") as f:
                    axes[index] = f.read()
            print(
                f"hmtt_spark: {archive}: {len(analyses[index])} partial analyses combined into {json_out}",
                file=sys.stderr,
            )
        if args.plot:
            sc.setJobDescription(f"hmtt analyze --plot-axes: the pictures of {len(tasks)} block ranges")
            drawn = (
                sc.parallelize(tasks, len(tasks))
                .mapPartitions(partial_task(args.hmtt, analyze_args, args.partials_dir, sc.broadcast(axes)))
                .collect()
            )
            for index, archive in enumerate(args.archives):
                grids = gather(drawn, index, work, "pictures")
                plot_dir = os.path.join(args.out, names[index])
                run_hmtt(
                    args.hmtt,
                    ["analyze", "--combine"] + analyses[index] + grids
                    + ["--plot", plot_dir, "--plot-format", args.plot_format],
                )
                print(f"hmtt_spark: {archive}: pictures drawn into {plot_dir}", file=sys.stderr)
                if args.partials_dir:
                    for f in grids:
                        os.remove(f)
        if args.partials_dir:
            for files in analyses.values():
                for f in files:
                    os.remove(f)
    print(
        f"hmtt_spark: {len(args.archives)} archives, {len(tasks)} tasks, {time.perf_counter() - start:.2f} s",
        file=sys.stderr,
    )
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
