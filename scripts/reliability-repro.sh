#!/usr/bin/env bash
# Re-runs the reproductions of issue 41's thirteen defects against an hmtt
# binary and prints a Markdown table: one row per reproduction, with its
# command, exit status, first line of stderr (or what was checked), the
# check of the property that matters (input intact, no file under the final
# name, memory bounded, ...) and PASS or FAIL.
#
# usage: scripts/reliability-repro.sh [HMTT] [SCRATCH]
#   HMTT     the hmtt binary (default target/release/hmtt)
#   SCRATCH  an empty scratch directory (default: a new one under /tmp);
#            about 1.5 GB is written there
# environment:
#   REPRO_FLAKY_RUNS  runs of receiver/tests/full_disk.rs for defect 13
#                     (default 10; 0 skips it; needs cargo and this checkout)
#   REPRO_MUTATIONS   random one-byte mutations per file for defect 12
#                     (default 200)
#
# Needs root for the full-disk and read-only tmpfs mounts (rows skipped,
# with the reason, otherwise). Exit status: 0 when every row passed.
set -u

HMTT=$(realpath "${1:-target/release/hmtt}")
SCRATCH=${2:-$(mktemp -d /tmp/hmtt-repro.XXXXXX)}
REPO=$(cd "$(dirname "$0")/.." && pwd)
FLAKY_RUNS=${REPRO_FLAKY_RUNS:-10}
MUTATIONS=${REPRO_MUTATIONS:-200}
mkdir -p "$SCRATCH"
S=$(realpath "$SCRATCH")
cd "$S" || exit 1
TABLE=$S/table.md
: >"$TABLE"
PASSES=0
FAILS=0
MOUNTS=()
BACKGROUND=()
cleanup() {
    local p m
    for p in "${BACKGROUND[@]}"; do kill "$p" 2>/dev/null; done
    for m in "${MOUNTS[@]}"; do umount -l "$m" 2>/dev/null; done
}
trap cleanup EXIT

h() { "$HMTT" "$@"; }
sum() { sha256sum "$1" 2>/dev/null | cut -c1-16; }
# The first non-empty line of a file and, for an error with causes
# (anyhow's "Caused by:"), the first cause, made safe for a table cell.
first_line() {
    local first cause
    first=$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | head -1)
    cause=$(grep -A1 '^Caused by:' "$1" 2>/dev/null | sed -n 2p | sed 's/^ *//; s/^[0-9]*: //')
    printf '%s%s' "$first" "${cause:+: $cause}" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-220 |
        sed 's/|/\\|/g; s/`/'"'"'/g'
}
# row DEFECT COMMAND STATUS MESSAGE CHECK VERDICT
row() {
    printf '| %s | `%s` | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5" "$6" >>"$TABLE"
    if [ "$6" = PASS ]; then PASSES=$((PASSES + 1)); else FAILS=$((FAILS + 1)); fi
    printf '%s %s: %s (exit %s) %s\n' "$6" "$1" "$2" "$3" "$5" >&2
}
verdict() { if "$@"; then echo PASS; else echo FAIL; fi; }
# Runs a command, stdout to $S/out, stderr to $S/err; sets ST and MSG.
run() {
    "$@" >"$S/out" 2>"$S/err"
    ST=$?
    MSG=$(first_line "$S/err")
}
# A clear error: a failure status that is neither a signal nor a panic,
# with a message.
clear_error() { [ "$ST" -ne 0 ] && [ "$ST" -lt 128 ] && [ "$ST" -ne 101 ] && [ -n "$MSG" ]; }
not_crashed() { [ "$ST" -lt 124 ] && [ "$ST" -ne 101 ]; }
yes_no() { if "$@"; then echo yes; else echo no; fi; }
# Hidden temporary files AtomicFile leaves for DEST (.NAME.partial-PID.EXT).
partials_of() {
    local dir base stem
    dir=$(dirname "$1")
    base=$(basename "$1")
    stem=${base%.*}
    ls -a "$dir" 2>/dev/null | grep -F ".$stem.partial-" | sed "s|^|$dir/|"
}
# Kills PID with SIGKILL once a temporary file of DEST holds MINBYTES; sets
# KILLED=yes when it did, no when the command ended first. Waits for PID.
kill_when_written() {
    local pid=$1 dest=$2 min=$3 p size
    KILLED=no
    for _ in $(seq 1 4000); do
        kill -0 "$pid" 2>/dev/null || break
        # the final name too: a writer without temporary files writes there
        for p in $(partials_of "$dest") "$dest"; do
            size=$(stat -c %s "$p" 2>/dev/null || echo 0)
            if [ "$size" -ge "$min" ]; then
                kill -KILL "$pid" 2>/dev/null && KILLED=yes
                break 2
            fi
        done
        sleep 0.002
    done
    wait "$pid" 2>/dev/null
    ST=$?
}
can_mount=yes
small_tmpfs() { # DIR SIZE [ro]
    mkdir -p "$1"
    if mount -t tmpfs -o "size=$2${3:+,$3}" tmpfs "$1" 2>/dev/null; then
        MOUNTS+=("$1")
        return 0
    fi
    can_mount=no
    return 1
}
put_u64() { # FILE OFFSET VALUE
    python3 -c 'import struct,sys
f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); f.write(struct.pack("<Q",int(sys.argv[3])))' "$@"
}
put_u32() {
    python3 -c 'import struct,sys
f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); f.write(struct.pack("<I",int(sys.argv[3])))' "$@"
}
get_u64() {
    python3 -c 'import struct,sys
f=open(sys.argv[1],"rb"); f.seek(int(sys.argv[2])); print(struct.unpack("<Q",f.read(8))[0])' "$@"
}
get_u32() {
    python3 -c 'import struct,sys
f=open(sys.argv[1],"rb"); f.seek(int(sys.argv[2])); print(struct.unpack("<I",f.read(4))[0])' "$@"
}
# /usr/bin/time's last line is the peak RSS in KiB (a line before it may
# say the command failed).
peak_mb() { tail -1 "$S/rss" | awk '{printf "%d", $1/1024}'; }
# Runs HMTT ARGS... with at most 4 GiB of address space and 20 s (a reader
# without bounds would otherwise take the machine's memory), measuring its
# peak RSS; sets ST, MSG and MB.
bounded() {
    (
        ulimit -v 4194304
        exec /usr/bin/time -f %M -o "$S/rss" timeout 20 "$HMTT" "$@"
    ) >"$S/out" 2>"$S/err"
    ST=$?
    MSG=$(first_line "$S/err")
    MB=$(peak_mb)
}

START=$(date +%s)
echo "hmtt: $HMTT ($("$HMTT" --version)); scratch: $S" >&2

# ---------------------------------------------------------------- inputs
# small: 2,000-element quicksort, cache off (events, a kernel log);
# medium: 32 MiB sequential read; big: 512 MiB (8.9 M records, 142 MB
# trace), for commands killed while they write.
h sim --workload quicksort --n 2000 --cache off --out small >/dev/null 2>&1
h merge small -o small.hmtttrace -q >/dev/null 2>&1
h pack small.hmtttrace -o small.hmttz --block-records 512 >/dev/null 2>&1
h replay small.hmtttrace --log small/pagetable.hmttlog -o small.hmttvtrace >/dev/null 2>&1
h sim --workload seq-read --n 32M --cache off --out medium >/dev/null 2>&1
h merge medium -o medium.hmtttrace -q >/dev/null 2>&1
h pack medium.hmtttrace -o medium.hmttz >/dev/null 2>&1
h sim --workload seq-read --n 512M --cache off --out big >/dev/null 2>&1
h merge big -o big.hmtttrace -q >/dev/null 2>&1
for f in small.hmtttrace small.hmttz small.hmttvtrace medium.hmtttrace medium.hmttz big.hmtttrace; do
    [ -s "$f" ] || { echo "could not make the input $f" >&2; exit 1; }
done

# ---------------------------------------------------------------- 1
same_output_as_input() { # DEFECT FILE LABEL CMD...
    local d=$1 f=$2 label=$3 before
    shift 3
    before=$(sum "$f")
    run "$@"
    local intact
    intact=$(yes_no [ "$(sum "$f")" = "$before" ])
    row "$d" "$label" "$ST" "$MSG" "input intact: $intact" \
        "$(verdict eval 'clear_error && [ $intact = yes ]')"
}
cp small.hmttz a.hmttz
same_output_as_input 1 a.hmttz "unpack a.hmttz -o a.hmttz" h unpack a.hmttz -o a.hmttz
cp small.hmtttrace f.hmtttrace
same_output_as_input 1 f.hmtttrace "pack f.hmtttrace -o f.hmtttrace" h pack f.hmtttrace -o f.hmtttrace
same_output_as_input 1 f.hmtttrace "export f.hmtttrace -f csv -o f.hmtttrace" \
    h export f.hmtttrace -f csv -o f.hmtttrace
same_output_as_input 1 f.hmtttrace "replay f.hmtttrace --log L --out f.hmtttrace" \
    h replay f.hmtttrace --log small/pagetable.hmttlog --out f.hmtttrace
same_output_as_input 1 f.hmtttrace "replay f.hmtttrace --log L --csv f.hmtttrace" \
    h replay f.hmtttrace --log small/pagetable.hmttlog --csv f.hmtttrace
same_output_as_input 1 small/pagetable.hmttlog "replay f.hmtttrace --log L --csv L" \
    h replay f.hmtttrace --log small/pagetable.hmttlog --csv small/pagetable.hmttlog
cp -r small d1
same_output_as_input 1 d1/board0-port0.hmttcap "merge d1 -o d1/board0-port0.hmttcap" \
    h merge d1 -o d1/board0-port0.hmttcap -q
same_output_as_input 1 f.hmtttrace "analyze f.hmtttrace --json f.hmtttrace" \
    h analyze f.hmtttrace --json f.hmtttrace
same_output_as_input 1 f.hmtttrace "analyze f.hmtttrace --json ./x/../f.hmtttrace" \
    bash -c "mkdir -p x && '$HMTT' analyze f.hmtttrace --json ./x/../f.hmtttrace"
ln -f f.hmtttrace hardlink.json
same_output_as_input 1 f.hmtttrace "analyze f.hmtttrace --json hardlink.json (a hard link)" \
    h analyze f.hmtttrace --json hardlink.json

# analyze reading a trace while merge rewrites it under the same name.
cp big.hmtttrace busy.hmtttrace
h analyze busy.hmtttrace --threads 1 >"$S/a.out" 2>"$S/a.err" &
apid=$!
sleep 0.3
h merge big -o busy.hmtttrace -q >/dev/null 2>&1
mst=$?
wait $apid
ST=$?
MSG=$(first_line "$S/a.err")
[ -n "$MSG" ] || MSG="(stderr empty; merge exit $mst)"
row 1 "analyze busy.hmtttrace & merge big -o busy.hmtttrace" "$ST" "$MSG" \
    "no signal: $(yes_no [ "$ST" -lt 128 ]); merge exit $mst" \
    "$(verdict eval '[ $ST -lt 128 ] && [ $ST -ne 101 ] && [ $mst -eq 0 ]')"

# A program outside hmtt truncating a reader's input in place (the map's
# guard, docs/guide.md §10): a clear error naming the input, no output.
for cmd in "analyze cut-in-place.hmtttrace --threads 1" "pack cut-in-place.hmtttrace -o cut-in-place.hmttz" \
    "dump cut-in-place.hmtttrace --csv"; do
    cp big.hmtttrace cut-in-place.hmtttrace
    rm -f cut-in-place.hmttz
    # shellcheck disable=SC2086
    h $cmd >"$S/out" 2>"$S/err" &
    apid=$!
    # Cut once the command is under way: it has printed, or started its
    # output file, or 0.3 s have passed (analyze prints only at its end).
    for _ in $(seq 150); do
        [ -s "$S/out" ] || [ -n "$(partials_of cut-in-place.hmttz)" ] && break
        sleep 0.002
    done
    landed=$(yes_no kill -0 "$apid")
    truncate -s 1M cut-in-place.hmtttrace
    wait $apid
    ST=$?
    MSG=$(first_line "$S/err")
    # Exit 0 is right only when the command had read all it needed before
    # the cut: then its result is the uncut input's.
    whole=no
    if [ "$ST" -eq 0 ]; then
        if [ -e cut-in-place.hmttz ]; then
            h unpack cut-in-place.hmttz -o unpacked.hmtttrace >/dev/null 2>&1 &&
                cmp -s unpacked.hmtttrace big.hmtttrace && whole=yes
            rm -f unpacked.hmtttrace
        else
            cp big.hmtttrace cut-in-place.hmtttrace
            # shellcheck disable=SC2086
            h $cmd >"$S/whole" 2>/dev/null && cmp -s "$S/out" "$S/whole" && whole=yes
        fi
    fi
    row 1 "$cmd & truncate -s 1M cut-in-place.hmtttrace" "$ST" "${MSG:-(stderr empty)}" \
        "cut while running: $landed; output left: $(yes_no [ -e cut-in-place.hmttz ]); exit 0 with the uncut result: $whole" \
        "$(verdict eval '[ $landed = yes ] && { { [ $ST -eq 1 ] && grep -q "cut short" "$S/err" && [ ! -e cut-in-place.hmttz ]; } || [ $whole = yes ]; }')"
done

# ---------------------------------------------------------------- 2
reference=$(sum big.hmtttrace)
h merge big -o two.hmtttrace -q >/dev/null 2>"$S/m1.err" &
p1=$!
h merge big -o two.hmtttrace -q >/dev/null 2>"$S/m2.err" &
p2=$!
wait $p1
s1=$?
wait $p2
s2=$?
run h stats two.hmtttrace
whole=$(yes_no [ "$(sum two.hmtttrace)" = "$reference" ])
row 2 "merge big -o two.hmtttrace & (twice); stats two.hmtttrace" "$s1, $s2; stats $ST" \
    "$(first_line "$S/m1.err")$(first_line "$S/m2.err")" \
    "file = one merge's trace byte for byte: $whole" \
    "$(verdict eval '[ $whole = yes ] && [ $ST -eq 0 ] || { [ $ST -ne 0 ] && [ $ST -lt 128 ]; }')"

# ---------------------------------------------------------------- 3
h merge big -o killed.hmtttrace -q >/dev/null 2>&1 &
kill_when_written $! "$S/killed.hmtttrace" 4000000
leftover=$(partials_of "$S/killed.hmtttrace" | head -1)
final=$(yes_no [ -e killed.hmtttrace ])
row 3 "merge big -o killed.hmtttrace, SIGKILL mid-write" "$ST" "killed: $KILLED" \
    "final file present: $final; temporary left: $(yes_no [ -n "$leftover" ])" \
    "$(verdict eval '[ $KILLED = yes ] && [ $final = no ]')"
if [ -n "$leftover" ]; then
    cp "$leftover" cut.hmtttrace
    for c in "analyze cut.hmtttrace" "export cut.hmtttrace -f csv -o cut.csv" \
        "stats cut.hmtttrace" "dump cut.hmtttrace --limit 3" "replay cut.hmtttrace --log big/pagetable.hmttlog" \
        "pack cut.hmtttrace -o cut.hmttz"; do
        # shellcheck disable=SC2086
        run h $c
        row 3 "$c (the killed merge's file)" "$ST" "$MSG" "refused with status 4: $(yes_no [ $ST -eq 4 ])" \
            "$(verdict eval '[ $ST -eq 4 ] && [ -n "$MSG" ]')"
    done
    # What is read must be a prefix of the whole trace: its records, as
    # many as were written, and no bytes after them taken for records.
    h dump big.hmtttrace --csv >"$S/whole.csv"
    run h dump cut.hmtttrace --csv --allow-incomplete
    lines=$(($(wc -l <"$S/out") - 1))
    # (the event column left out: an unfinished file has no names)
    prefix=$(yes_no cmp -s <(cut -d, -f1-6 "$S/out") <(head -n $((lines + 1)) "$S/whole.csv" | cut -d, -f1-6))
    row 3 "dump cut.hmtttrace --csv --allow-incomplete" "$ST" "$MSG" \
        "warns: $(yes_no [ -n "$MSG" ]); $lines records, a prefix of the whole trace's (but event names): $prefix" \
        "$(verdict eval '[ $ST -eq 0 ] && [ -n "$MSG" ] && [ $prefix = yes ]')"
    whole_span=$(h analyze big.hmtttrace --threads 1 | grep -m1 -o 'over [0-9.]* ms' | tr -dc '0-9.')
    run h analyze cut.hmtttrace --allow-incomplete
    span=$(grep -m1 -o 'over [0-9.]* ms' "$S/out" | tr -dc '0-9.')
    row 3 "analyze cut.hmtttrace --allow-incomplete" "$ST" "$MSG" \
        "time span ${span:-?} ms, at most the whole trace's $whole_span ms: $(yes_no awk "BEGIN{exit !(${span:-1e99} <= $whole_span)}")" \
        "$(verdict eval '[ $ST -eq 0 ] && [ -n "$MSG" ] && awk "BEGIN{exit !(${span:-1e99} <= $whole_span)}"')"
fi
h replay big.hmtttrace --log big/pagetable.hmttlog --out killed.hmttvtrace >/dev/null 2>&1 &
kill_when_written $! "$S/killed.hmttvtrace" 8000000
leftover=$(partials_of "$S/killed.hmttvtrace" | head -1)
final=$(yes_no [ -e killed.hmttvtrace ])
row 3 "replay big --log L --out killed.hmttvtrace, SIGKILL" "$ST" "killed: $KILLED" \
    "final file present: $final" "$(verdict eval '[ $KILLED = yes ] && [ $final = no ]')"
if [ -n "$leftover" ]; then
    cp "$leftover" cut.hmttvtrace
    for c in "dump cut.hmttvtrace --limit 3" "analyze cut.hmttvtrace" "export cut.hmttvtrace -f csv -o cutv.csv"; do
        # shellcheck disable=SC2086
        run h $c
        row 3 "$c (the killed replay's file)" "$ST" "$MSG" "refused with status 4: $(yes_no [ $ST -eq 4 ])" \
            "$(verdict eval '[ $ST -eq 4 ] && [ -n "$MSG" ]')"
    done
fi

# ---------------------------------------------------------------- 4
# small.hmttz: blocks of 512 records. Lower block 4's last tick in the
# index (format.md §13: the index is the file's last 32 * blocks bytes,
# last tick at +16 in an entry) to its first tick, and ask for a window
# that starts inside block 4.
cp small.hmttz lying.hmttz
blocks=$(get_u64 lying.hmttz 24)
index=$(($(stat -c %s lying.hmttz) - 32 * blocks))
first4=$(get_u64 lying.hmttz $((index + 4 * 32 + 8)))
put_u64 lying.hmttz $((index + 4 * 32 + 16)) "$first4"
# the window: from the time of record 4*512+256 to that of record 6*512
h dump small.hmttz --csv >"$S/all.csv"
from=$(sed -n "$((4 * 512 + 256 + 2))p" "$S/all.csv" | cut -d, -f1)
to=$(sed -n "$((6 * 512 + 2))p" "$S/all.csv" | cut -d, -f1)
want=$(h dump small.hmttz --csv --from-ns "$from" --to-ns "$to" | wc -l)
run h dump lying.hmttz --csv --from-ns "$from" --to-ns "$to"
got=$(wc -l <"$S/out")
row 4 "dump lying.hmttz --csv --from-ns $from --to-ns $to" "$ST" "$MSG" \
    "$got of $want lines" "$(verdict eval 'clear_error || { [ $ST -eq 0 ] && [ $got -eq $want ]; }')"

# ---------------------------------------------------------------- 5
# One block whose counts agree: header record count and records per
# block, the index entry's records, the block header's n, and the DT
# column's decompressed length (which must be n).
h pack small.hmtttrace -o one.hmttz --block-records 16777216 >/dev/null 2>&1
for claim in 134217728 4294967295 16777216; do
    cp one.hmttz claim.hmttz
    index=$(($(stat -c %s claim.hmttz) - 32))
    block=$(get_u64 claim.hmttz "$index")
    put_u64 claim.hmttz 16 "$claim"
    put_u32 claim.hmttz 32 "$claim"
    put_u32 claim.hmttz $((index + 28)) "$claim"
    put_u32 claim.hmttz "$block" "$claim"
    put_u32 claim.hmttz $((block + 24)) "$claim"
    bounded dump claim.hmttz --limit 2
    row 5 "dump claim.hmttz --limit 2 ($(stat -c %s claim.hmttz) B claiming $claim records)" "$ST" "$MSG" \
        "peak RSS $MB MB" "$(verdict eval 'clear_error && [ $MB -lt 256 ]')"
done

# ---------------------------------------------------------------- 6
for v in 18446744073709551615 4294967296 10000000; do
    bounded analyze small.hmtttrace --stream-window $v
    row 6 "analyze small.hmtttrace --stream-window $v" "$ST" "$MSG" "peak RSS $MB MB, within 20 s: $(yes_no [ $ST -ne 124 ])" \
        "$(verdict eval '{ clear_error || [ $ST -eq 0 ]; } && [ $MB -lt 1024 ]')"
done
for c in "stats small.hmtttrace --interval-ms 0" "stats small.hmtttrace --interval-ms nan" \
    "analyze small.hmtttrace --interval-ms 0" "analyze small.hmtttrace --interval-ms nan" \
    "pack small.hmtttrace -o l0.hmttz --level 0" "pack small.hmtttrace -o l23.hmttz --level 23" \
    "merge small -o l0.hmttz --level 0 -q" "merge small -o l23.hmttz --level 23 -q"; do
    # shellcheck disable=SC2086
    run h $c
    row 6 "$c" "$ST" "$MSG" "refused by the parser (2): $(yes_no [ $ST -eq 2 ])" "$(verdict [ $ST -eq 2 ])"
done
for c in "replay small.hmtttrace --log /dev/zero" "dump small.hmtttrace --events /dev/zero" \
    "analyze small.hmtttrace --mapping /dev/zero" "merge small -o z.hmtttrace --mapping /dev/zero -q" \
    "merge small -o z.hmtttrace --events /dev/zero -q"; do
    # shellcheck disable=SC2086
    bounded $c
    row 6 "$c" "$ST" "$MSG" "peak RSS $MB MB" "$(verdict eval 'clear_error && [ $MB -lt 256 ]')"
done

# ---------------------------------------------------------------- 7
# An archive whose block 2 is damaged (bytes in its zstd frames zeroed).
cp small.hmttz damaged.hmttz
blocks=$(get_u64 damaged.hmttz 24)
index=$(($(stat -c %s damaged.hmttz) - 32 * blocks))
b2=$(get_u64 damaged.hmttz $((index + 2 * 32)))
len2=$(get_u32 damaged.hmttz $((index + 2 * 32 + 24)))
dd if=/dev/zero of=damaged.hmttz bs=1 seek=$((b2 + 40 + len2 / 3)) count=16 conv=notrunc 2>/dev/null
for fmt in csv dramsim3 ramulator2 gem5 parquet perfetto; do
    out=damaged-out.$fmt
    run h export damaged.hmttz -f $fmt -o $out
    row 7 "export damaged.hmttz -f $fmt -o $out" "$ST" "$MSG" \
        "final file present: $(yes_no [ -e $out ]); temporary left: $(yes_no [ -n "$(partials_of "$S/$out")" ])" \
        "$(verdict eval 'clear_error && [ ! -e $out ] && [ -z "$(partials_of "$S/$out")" ]')"
done
for fmt in csv gem5 parquet dramsim3; do
    out=killed.$fmt
    h export big.hmtttrace -f $fmt -o $out >/dev/null 2>&1 &
    kill_when_written $! "$S/$out" 2000000
    row 7 "export big.hmtttrace -f $fmt -o $out, SIGKILL mid-write" "$ST" "killed: $KILLED" \
        "final file present: $(yes_no [ -e $out ])" "$(verdict eval '[ $KILLED = yes ] && [ ! -e $out ]')"
done
if small_tmpfs "$S/full" 1m; then
    for c in "export medium.hmtttrace -f csv -o full/x.csv" "export medium.hmtttrace -f parquet -o full/x.parquet" \
        "merge medium -o full/x.hmtttrace -q" "pack medium.hmtttrace -o full/x.hmttz --level 1" \
        "replay medium.hmtttrace --log medium/pagetable.hmttlog --out full/x.hmttvtrace" \
        "analyze medium.hmtttrace --json full/x.json" \
        "unpack medium.hmttz -o full/x.hmtttrace"; do
        # shellcheck disable=SC2086
        run h $c
        out=$(echo "$c" | grep -o 'full/x\.[a-z]*')
        left=$(ls -A full)
        row 7 "$c (1 MiB tmpfs)" "$ST" "$MSG" "final file present: $(yes_no [ -e "$out" ]); files left: ${left:-none}" \
            "$(verdict eval 'if [ $ST -eq 0 ]; then [ -s "$out" ]; else clear_error && [ ! -e "$out" ]; fi')"
        rm -f full/* full/.[!.]* 2>/dev/null
    done
else
    row 7 "export/merge/unpack onto a full disk" - "skipped: cannot mount a tmpfs (not root?)" - FAIL
fi

# ---------------------------------------------------------------- 8
mkdir -p d8
h capture --udp-ports 47801-47801 -o d8 --name run --duration 3 -q >"$S/c1.out" 2>"$S/c1.err" &
c1=$!
h capture --udp-ports 47802-47802 -o d8 --name run --duration 3 -q >"$S/c2.out" 2>"$S/c2.err" &
c2=$!
BACKGROUND+=("$c1" "$c2")
sleep 0.5
# some packets for each port, so that each capture has something to lose
h sim --workload seq-read --n 1M --cache off --ports 2 --send 127.0.0.1:47801,127.0.0.1:47802 --rate 0.2 >/dev/null 2>&1
wait $c1
s1=$?
wait $c2
s2=$?
summary_port=$(grep -o '4780[12]' d8/run-summary.json 2>/dev/null | sort -u | tr '\n' ' ')
if [ $s1 -eq 0 ]; then winner=47801 loser_err=$S/c2.err; else winner=47802 loser_err=$S/c1.err; fi
row 8 "capture -o d8 --name run (ports 47801 and 47802 at once)" "$s1, $s2" "$(first_line "$loser_err")" \
    "one refused: $(yes_no [ $((s1 == 0)) -ne $((s2 == 0)) ]); d8/run-summary.json is the other's ($winner): $(yes_no [ "$summary_port" = "$winner " ])" \
    "$(verdict eval '[ $((s1 == 0)) -ne $((s2 == 0)) ] && [ "$summary_port" = "$winner " ] && grep -qi "lock\|already\|in use\|another" "$loser_err"')"

# ---------------------------------------------------------------- 9
bad=$(printf 'd9-\xff')
mkdir -p "$bad"
run h capture --udp-ports 47803-47803 -o "$bad" --name run --duration 1 -q
summary=$(yes_no [ -s "$bad/run-summary.json" ])
row 9 'capture --udp-ports 47803-47803 -o $'"'"'d9-\xff'"'"' --name run --duration 1' "$ST" "${MSG:-(stderr empty)}" \
    "summary written and not empty: $summary; no panic: $(yes_no [ $ST -ne 101 ])" \
    "$(verdict eval '[ $ST -eq 0 ] && [ $summary = yes ]')"
keep=$(printf 'k9-\xff')
run h demo --keep "$keep" --workload seq-read --n 256K --boards 1 --ports 2
row 9 'demo --keep $'"'"'k9-\xff'"'"' --workload seq-read --n 256K' "$ST" "${MSG:-(stderr empty)}" \
    "no panic: $(yes_no [ $ST -ne 101 ]); files kept: $(ls "$keep" 2>/dev/null | wc -l)" \
    "$(verdict eval '[ $ST -eq 0 ]')"

# ---------------------------------------------------------------- 10
# hmtt qemu reads the plugin's stream from a FIFO it makes and hands to
# qemu-system-x86_64 (-plugin ...,out=FIFO); no option reads a recorded
# stream. A stand-in qemu-system-x86_64 first in PATH writes a recorded
# stream into the FIFO without booting anything: 20,000 records (24 bytes:
# vaddr, paddr, info) each claiming a 32 KiB access (size shift 15).
mkdir -p fakeqemu/bin fakeqemu/kit
for f in vmlinux hmtt.ko hmtt_qemu_pid.ko hmtt_qemu_guest libqemu_plugin_hmtt.so; do
    echo stand-in >fakeqemu/kit/$f
done
python3 -c 'import struct
with open("fakeqemu/stream.bin","wb") as f:
    for i in range(20000):
        f.write(struct.pack("<QQQ", 0x400000 + i * 0x8000, 0x1000000 + i * 0x8000, 15))' 
cat >fakeqemu/bin/qemu-system-x86_64 <<EOF
#!/bin/bash
# a stand-in for QEMU: the recorded plugin stream into the FIFO of -plugin
for a in "\$@"; do
    case "\$a" in
    *libqemu_plugin_hmtt.so,out=*) fifo=\${a#*,out=}; fifo=\${fifo%%,*} ;;
    file,id=hmttlog,path=*) : >"\${a#*path=}" ;;
    esac
done
cat "$S/fakeqemu/stream.bin" >"\$fifo" 2>/dev/null
echo "HMTT-QEMU-TIME 0.0 1.0"
echo "HMTT-QEMU-END 0"
EOF
chmod +x fakeqemu/bin/qemu-system-x86_64
PATH=$S/fakeqemu/bin:$PATH /usr/bin/time -f %M -o "$S/rss" timeout 120 "$HMTT" qemu --kit fakeqemu/kit --out q10 -- true >"$S/out" 2>"$S/err"
ST=$?
MSG=$(first_line "$S/err")
mb=$(peak_mb)
row 10 "qemu --kit K --out q10 -- true (stand-in QEMU streams 20,000 records of 32 KiB)" "$ST" "$MSG" \
    "stream read and refused: $(yes_no grep -q '32768 bytes' "$S/err"); peak RSS $mb MB" \
    "$(verdict eval 'clear_error && grep -q "32768 bytes" "$S/err" && [ $mb -lt 512 ]')"
h sim --workload seq-read --n 64 --processes 4000 --out p4k >/dev/null 2>&1
h merge p4k -o p4k.hmtttrace -q >/dev/null 2>&1
h replay p4k.hmtttrace --log p4k/pagetable.hmttlog -o p4k.hmttvtrace >/dev/null 2>&1
run h export p4k.hmttvtrace -f perfetto -o p4k.perfetto-trace
vsize=$(stat -c %s p4k.hmttvtrace)
psize=$(stat -c %s p4k.perfetto-trace 2>/dev/null || echo 0)
row 10 "export p4k.hmttvtrace (4000 processes) -f perfetto" "$ST" "${MSG:-(stderr empty)}" \
    "virtual trace $((vsize / 1024)) KiB, Perfetto file $((psize / 1024)) KiB" \
    "$(verdict eval '[ $ST -eq 0 ] && [ $psize -gt 0 ] && [ $psize -le $((10 * vsize)) ]')"

# ---------------------------------------------------------------- 11
for c in "merge small -o e.hmtttrace --events no_such.toml -q" "dump small.hmtttrace --events no_such.toml" \
    "analyze small.hmtttrace --events no_such.toml" "export small.hmtttrace -f csv -o e.csv --events no_such.toml" \
    "replay small.hmtttrace --log small/pagetable.hmttlog --events no_such.toml"; do
    # shellcheck disable=SC2086
    run h $c
    row 11 "$c" "$ST" "$MSG" "names no_such.toml: $(yes_no grep -q no_such.toml "$S/err")" \
        "$(verdict eval 'clear_error && grep -q no_such.toml "$S/err"')"
done
if [ $can_mount = yes ] && small_tmpfs "$S/full11" 1m; then
    run h unpack medium.hmttz -o full11/x.hmtttrace
    row 11 "unpack medium.hmttz -o full11/x.hmtttrace (1 MiB tmpfs)" "$ST" "$MSG" \
        "names the trace, not \"writing the archive\": $(yes_no eval '! grep -q "writing the archive" "$S/err" && grep -q "x.hmtttrace" "$S/err"')" \
        "$(verdict eval 'clear_error && ! grep -q "writing the archive" "$S/err" && grep -q "x.hmtttrace" "$S/err"')"
else
    row 11 "unpack onto a full disk" - "skipped: cannot mount a tmpfs" - FAIL
fi
echo not a directory >plotfile
run h analyze small.hmtttrace --plot plotfile
row 11 "analyze small.hmtttrace --plot plotfile (a file)" "$ST" "$MSG" \
    "not \"File exists\": $(yes_no eval '! grep -q "File exists" "$S/err"')" \
    "$(verdict eval 'clear_error && ! grep -q "File exists" "$S/err" && grep -q plotfile "$S/err"')"
if [ $can_mount = yes ] && small_tmpfs "$S/ro" 1m ro; then
    run h analyze small.hmtttrace --plot ro/plots
    row 11 "analyze small.hmtttrace --plot ro/plots (read-only tmpfs)" "$ST" "$MSG" \
        "no Rust debug text: $(yes_no eval '! grep -q "Error(\|Os {" "$S/err"')" \
        "$(verdict eval 'clear_error && ! grep -q "Error(\|Os {" "$S/err"')"
    mkdir -p rw-plots
    mount --bind rw-plots rw-plots && MOUNTS+=("$S/rw-plots")
    h analyze small.hmtttrace --plot rw-plots >/dev/null 2>&1 # the directory and a first picture
    mount -o remount,bind,ro rw-plots
    run h analyze small.hmtttrace --plot rw-plots
    row 11 "analyze small.hmtttrace --plot rw-plots (existing dir, remounted read-only)" "$ST" "$MSG" \
        "no Rust debug text: $(yes_no eval '! grep -q "Error(\|Os {" "$S/err"')" \
        "$(verdict eval 'clear_error && ! grep -q "Error(\|Os {" "$S/err"')"
else
    row 11 "a failed plot write (read-only mount)" - "skipped: cannot mount" - FAIL
fi
run h dump small
row 11 "dump small (a directory)" "$ST" "$MSG" "not \"No such device\": $(yes_no eval '! grep -q "No such device" "$S/err"')" \
    "$(verdict eval 'clear_error && ! grep -q "No such device" "$S/err"')"
python3 - <<'EOF'
# a mapping of ddr3-4g's widths (rank 1, bank 3, row 15, col_line 7) whose
# two first column bits are the same address bit: not invertible
bits = list(range(6, 32))
col = [[6], [6]] + [[b] for b in bits[2:7]]
bank = [[b] for b in bits[7:10]]
row = [[b] for b in bits[10:25]]
rank = [[bits[25]]]
with open("singular.toml", "w") as f:
    f.write('version = 1\nkind = "xor"\n')
    for name, v in (("col_line", col), ("bank", bank), ("row", row), ("rank", rank)):
        f.write(f"{name} = {v}\n")
EOF
for c in "analyze small.hmtttrace --mapping singular.toml" "merge small -o mp.hmtttrace --mapping singular.toml -q"; do
    # shellcheck disable=SC2086
    run h $c
    row 11 "$c" "$ST" "$MSG" "blames singular.toml, not the trace: $(yes_no eval 'grep -q singular.toml "$S/err" && ! grep -q "reading small" "$S/err"')" \
        "$(verdict eval 'clear_error && grep -q singular.toml "$S/err" && ! grep -q "reading small" "$S/err"')"
done

# ---------------------------------------------------------------- 12
# Random one-byte changes (XOR with a random non-zero byte at a random
# offset) of a trace and a virtual trace; a change is silent when a reader
# exits 0 with an output other than the original's.
RANDOM=41
mutate() { # FILE READER...
    local f=$1 n silent=0 refused=0 same=0 size off old new mut
    shift
    mkdir -p mut
    mut=mut/$f
    mkdir -p orig
    cp "$f" orig/
    (cd orig && "$HMTT" "$@" "$f") >"$S/orig.out" 2>/dev/null
    cp "$f" "$mut"
    size=$(stat -c %s "$f")
    for n in $(seq 1 "$MUTATIONS"); do
        cp "$f" "$mut"
        off=$(((RANDOM * 32768 + RANDOM) % size))
        old=$(od -An -tu1 -j $off -N1 "$mut" | tr -d ' ')
        new=$((old ^ (RANDOM % 255 + 1)))
        printf "\\x$(printf %02x $new)" | dd of="$mut" bs=1 seek=$off conv=notrunc 2>/dev/null
        (cd mut && "$HMTT" "$@" "$f") >"$S/mut.out" 2>"$S/mut.err"
        local st=$?
        if [ $st -ne 0 ]; then
            refused=$((refused + 1))
            if [ $st -ge 128 ] || [ $st -eq 101 ]; then silent=$((silent + 1000000)); fi
        elif cmp -s "$S/orig.out" "$S/mut.out"; then
            same=$((same + 1))
        else
            silent=$((silent + 1))
            echo "silent change: $* at byte $off ($old -> $new)" >&2
        fi
    done
    row 12 "${*//$S\//} on $MUTATIONS mutations of $f ($size B)" "-" "$refused refused, $same unchanged output" \
        "changed output with exit 0: $((silent % 1000000)); crashes: $((silent / 1000000))" "$(verdict [ $silent -eq 0 ])"
}
mutate small.hmtttrace dump --csv
mutate small.hmtttrace stats
mutate small.hmttvtrace dump --csv
mutate small.hmtttrace analyze --threads 1
mutate small.hmtttrace replay --log "$S/small/pagetable.hmttlog" --csv -

# ---------------------------------------------------------------- 13
if [ "$FLAKY_RUNS" -gt 0 ] && command -v cargo >/dev/null && [ -f "$REPO/receiver/tests/full_disk.rs" ]; then
    testbin=$(cd "$REPO" && cargo test -p hmtt-receiver --test full_disk --no-run 2>&1 |
        grep -o 'target/[^ )]*full_disk-[0-9a-f]*' | tail -1)
    if [ -n "$testbin" ]; then
        busy=()
        for _ in 1 2; do
            (while :; do :; done) &
            busy+=($!)
        done
        BACKGROUND+=("${busy[@]}")
        failed=0
        skipped=0
        firstfail=""
        for n in $(seq 1 "$FLAKY_RUNS"); do
            if ! (cd "$REPO" && "$testbin" --test-threads 1 >"$S/t13.out" 2>&1); then
                failed=$((failed + 1))
                [ -n "$firstfail" ] || firstfail=$(grep -m1 'panicked\|assert' "$S/t13.out" | cut -c1-150)
            fi
            grep -q SKIPPED "$S/t13.out" && skipped=$((skipped + 1))
        done
        kill "${busy[@]}" 2>/dev/null
        row 13 "receiver/tests/full_disk.rs, $FLAKY_RUNS runs beside 2 busy loops" "$failed failed" \
            "${firstfail:-(no failure)}" "runs failed: $failed of $FLAKY_RUNS; skipped (no mount): $skipped" \
            "$(verdict eval '[ $failed -eq 0 ] && [ $skipped -eq 0 ]')"
    else
        row 13 "cargo test -p hmtt-receiver --test full_disk" - "could not build the test" - FAIL
    fi
else
    row 13 "receiver/tests/full_disk.rs" - "not run (REPRO_FLAKY_RUNS=0, or no cargo or checkout)" - FAIL
fi

# ---------------------------------------------------------------- table
echo
echo "| defect | command | exit | message | check | verdict |"
echo "|---|---|---|---|---|---|"
cat "$TABLE"
echo
echo "$PASSES passed, $FAILS failed, in $(($(date +%s) - START)) s ($HMTT)"
[ "$FAILS" -eq 0 ]
