//! Apache Spark in `local[2]` mode (pyspark and Java 17, installed by
//! scripts/setup.sh): `contrib/spark/hmtt_spark.py` analyses two archives
//! (quicksort on one board, the mix on two interleaved boards) as Spark
//! tasks in one job, one task failing once and retried by Spark, and each
//! JSON and picture must equal `hmtt analyze --threads 1`'s byte for byte;
//! then the SQL of docs/guide.md §12, run by
//! `contrib/spark/guide_sql.py` on the partitioned Parquet export with
//! DuckDB and with Spark SQL, must give hmtt analyze's figures.
//! Skipped, with a note, only where pyspark or java is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;
use support::cli::{ok, s, scratch, simulate_and_merge, MIX_ON_2_BOARDS};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// pyspark's `spark-submit`, or why Spark cannot run here.
fn spark_submit() -> Result<PathBuf, String> {
    let java = Command::new("java").arg("-version").output();
    if !java.is_ok_and(|o| o.status.success()) {
        return Err("no java on PATH (openjdk-17-jre-headless)".into());
    }
    let found = Command::new("python3")
        .args([
            "-c",
            "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'bin', 'spark-submit'))",
        ])
        .output()
        .map_err(|e| format!("python3 does not run: {e}"))?;
    if !found.status.success() {
        return Err("python3 has no pyspark module (pip install pyspark)".into());
    }
    let path = PathBuf::from(String::from_utf8_lossy(&found.stdout).trim());
    if !path.is_file() {
        return Err(format!("pyspark has no {}", path.display()));
    }
    Ok(path)
}

/// `spark-submit` in local[2] mode, settings for a small job (no web UI, a
/// JVM that starts fast, few shuffle partitions).
fn submit(spark: &Path, master: &str, args: &[&str]) -> Output {
    let out = Command::new(spark)
        // Spark binds its driver to the host name's address; loopback is
        // the one address every test machine has.
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .args([
            "--master",
            master,
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.shuffle.partitions=2",
            "--driver-java-options",
            "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        ])
        .args(args)
        .output()
        .expect("spark-submit runs");
    assert!(
        out.status.success(),
        "spark-submit {args:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `hmtt pack` of `trace` into `archive` in blocks of `records`.
fn pack(trace: &Path, archive: &Path, records: &str) {
    ok(&[
        "pack",
        s(trace),
        "-o",
        s(archive),
        "--block-records",
        records,
    ]);
}

#[test]
fn spark_tasks_give_hmtt_analyze_s_json_and_the_guide_s_sql_its_figures() {
    let spark = match spark_submit() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("tests/spark.rs SKIPPED: {why}; scripts/setup.sh installs both");
            return;
        }
    };
    let dir = scratch("spark");
    let qs_dir = dir.join("quicksort");
    std::fs::create_dir_all(&qs_dir).unwrap();
    let (_, qs_trace) = simulate_and_merge(
        &qs_dir,
        &["--workload", "quicksort", "--n", "3000", "--cache", "off"],
        &[],
    );
    let mix_dir = dir.join("mix");
    std::fs::create_dir_all(&mix_dir).unwrap();
    let (_, mix_trace) =
        simulate_and_merge(&mix_dir, &MIX_ON_2_BOARDS, &["--interleave-shift", "12"]);
    let archives = [dir.join("quicksort.hmttz"), dir.join("mix.hmttz")];
    pack(&qs_trace, &archives[0], "8192");
    pack(&mix_trace, &archives[1], "4096");
    let analyze_args = ["--interleave-shift", "12", "--top", "32"];
    let mut one_pass = Vec::new();
    for a in &archives {
        let (json, plot) = (a.with_extension("json"), a.with_extension("plots"));
        ok(&[
            &[
                "analyze",
                s(a),
                "--threads",
                "1",
                "--json",
                s(&json),
                "--plot",
                s(&plot),
            ][..],
            &analyze_args,
        ]
        .concat());
        one_pass.push(json);
    }

    // Both archives in one Spark job, three block ranges each. The binary
    // shipped with the job is a wrapper of hmtt whose first run of a later
    // range fails: Spark retries that task (local[2,2]: two tries).
    let wrapper = dir.join("flaky-hmtt");
    let failed_once = dir.join("failed-once");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" --partial \"*) case \" $* \" in *\" 0..1 \"*) ;; *)\n\
             if [ ! -e '{flag}' ]; then touch '{flag}'; echo 'injected failure' >&2; exit 3; fi ;; esac ;; esac\n\
             exec '{hmtt}' \"$@\"\n",
            flag = s(&failed_once),
            hmtt = env!("CARGO_BIN_EXE_hmtt"),
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let results = dir.join("results");
    let driver = repo().join("contrib/spark/hmtt_spark.py");
    let out = submit(
        &spark,
        "local[2,2]",
        &[
            &[
                "--files",
                s(&wrapper),
                s(&driver),
                "--hmtt",
                "flaky-hmtt",
                "--out",
                s(&results),
                "--tasks",
                "3",
                "--plot",
                s(&archives[0]),
                s(&archives[1]),
                "--",
            ][..],
            &analyze_args,
        ]
        .concat(),
    );
    // spark-submit passes the Python driver's stderr on to its stdout.
    let said = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(failed_once.exists(), "no task failed");
    assert!(
        log.contains("Lost task") && log.contains("injected failure"),
        "the failed task is not in Spark's log:\n{log}"
    );
    for (archive, json) in archives.iter().zip(&one_pass) {
        let name = archive.file_stem().unwrap().to_str().unwrap();
        assert!(
            said.contains(&format!("{}: 3 partial analyses combined", s(archive))),
            "{said}"
        );
        let spark_json = std::fs::read(results.join(format!("{name}.json"))).unwrap();
        assert!(
            spark_json == std::fs::read(json).unwrap(),
            "{name}: the Spark job's JSON differs from hmtt analyze --threads 1's"
        );
        // Its pictures, drawn from the tasks' pictures partials.
        assert!(
            said.contains(&format!("{}: pictures drawn", s(archive))),
            "{said}"
        );
        let pictures: Vec<_> = std::fs::read_dir(archive.with_extension("plots"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(pictures.len() >= 8, "{pictures:?}");
        for picture in pictures {
            let one = std::fs::read(archive.with_extension("plots").join(&picture)).unwrap();
            let spark = std::fs::read(results.join(name).join(&picture));
            assert!(
                spark.is_ok_and(|p| p == one),
                "{name}: the Spark job's {picture:?} differs from hmtt analyze --plot's"
            );
        }
    }
    // The mix is two boards' interleaved references.
    let mix: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&one_pass[1]).unwrap()).unwrap();
    assert_eq!(mix["mix"]["by_board"].as_object().unwrap().len(), 2);

    // The guide's SQL over the partitioned export, DuckDB then Spark SQL.
    let dataset = dir.join("quicksort-dataset");
    ok(&[
        "export",
        s(&archives[0]),
        "--format",
        "parquet",
        "--partition-ms",
        "0.2",
        "-o",
        s(&dataset),
    ]);
    let guide_sql = repo().join("contrib/spark/guide_sql.py");
    let args = [s(&dataset), s(&one_pass[0])];
    let duckdb = Command::new("python3")
        .args([s(&guide_sql), "--engine", "duckdb"])
        .args(args)
        .output()
        .expect("python3 runs");
    let spark_sql = submit(
        &spark,
        "local[2]",
        &[&[s(&guide_sql), "--engine", "spark"][..], &args].concat(),
    );
    for (engine, out) in [("duckdb", duckdb), ("spark", spark_sql)] {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{engine}:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for figure in ["mix", "bandwidth", "banks", "top pages"] {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{engine} {figure}:")))
                .unwrap_or_else(|| panic!("{engine} printed no {figure}:\n{text}"));
            assert!(line.ends_with("equal to hmtt analyze's"), "{line}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
