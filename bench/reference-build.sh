# Sourced by the bench scripts that time this build against another (run
# from the repository root, after scratch-dir.sh): sets `ref` to
# HMTT_REF_BIN, an already built binary, or else to the release build of
# commit `ref_commit`, made from its tree in its own target directory
# under `dir`.
if [ -n "${HMTT_REF_BIN:-}" ]; then
	ref=$HMTT_REF_BIN
else
	mkdir -p "$dir/ref-src"
	git archive "$ref_commit" | tar -x -C "$dir/ref-src"
	(cd "$dir/ref-src" && CARGO_TARGET_DIR="$dir/ref-target" cargo build --release -q -p hmtt)
	ref=$dir/ref-target/release/hmtt
fi
