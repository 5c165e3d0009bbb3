# Sourced by the bench scripts (run from the repository root): sets `dir`
# to HMTT_BENCH_DIR, made if missing and kept, or else to a temporary
# directory removed when the script exits.
if [ -n "${HMTT_BENCH_DIR:-}" ]; then
	dir=$HMTT_BENCH_DIR
	mkdir -p "$dir"
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
