#!/usr/bin/env python3
"""Recounts the board's Statistic Unit and its Reuse Distance & Hot Pages
Unit from a DDR command file, from the specification alone (docs/board.md
"Statistic Unit" and "Reuse Distance & Hot Pages Unit", docs/format.md §1,
§5.3, §7), and compares them with the statistics packets of capture files.

Independent of the golden model: nothing here comes from its code.

usage: statistics_recount.py --commands FILE --geometry R,B,ROW,COL
           [--complete [--window FIRST,END]]
           [--config-window FIRST_LINE,LINES --lanes L --reuse-per-clock P
            [--reuse-on FIRST,END]] CAPTURE...

Every record's counters (but the two the board alone knows: references
over the clock's limit and events lost at the FIFO) must equal the recount
over its ticks [start, end). With --complete (unit on from reset, every
record sent), every tick with a counted command (in the window) must lie
in a record. A record's RDHPU section (histogram of page stack distances,
skipped references, hot pages) must equal the recount of a 128-page LRU
stack fed by the references outside the config window at ticks in
--reuse-on (empty at its first tick), at most P per clock of L ticks.
Prints a JSON summary: totals of the recount and of the two board-only
counters over the records, and the RDHPU's histogram summed over them.
"""

import argparse
import json
import struct
import sys

BANK = ["rd", "wr", "act", "pre", "hit", "miss", "conflict", "unused_act"]
RANK = ["ref", "busy_ticks"]


def parse_int(s):
    return int(s, 16) if s.lower().startswith("0x") else int(s)


def read_commands(path):
    cmds = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            fields = [line[0], line[1]] + [parse_int(x) for x in line[2:]]
            while len(fields) < 5:
                fields.append(0)
            cmds.append((parse_int(fields[0]), fields[1], fields[2], fields[3], fields[4]))
    return cmds


def read_stats_packets(paths):
    """Statistics packets (magic HMTS) of capture files, format.md §7."""
    packets = []
    for path in paths:
        data = open(path, "rb").read()
        assert data[:8] == b"HMTTCAP\0", path
        (header_len,) = struct.unpack_from("<H", data, 10)
        off = header_len
        while off + 16 <= len(data):
            _, n, _ = struct.unpack_from("<QII", data, off)
            pkt = data[off + 16 : off + 16 + n]
            off += 16 + n
            if pkt[:4] == b"HMTS":
                packets.append(pkt)
    return packets


def assemble(packets, geometry):
    """Records as (start, end, k, unsent, counters or None, reuse or None),
    reuse being (histogram, skipped, [(page, count)...] of its nonzero hot
    entries, H)."""
    rank_bits, bank_bits, row_bits, col_bits = geometry
    ranks, banks = 1 << rank_bits, 1 << bank_bits
    line_bits = rank_bits + bank_bits + row_bits + col_bits
    total = ranks * banks * 8 + ranks * 2 + line_bits + 2
    records = {}
    for p in packets:
        (version, flags, board, port, seq, start, end, k, row, rank_bank, col,
         tick_ps, n, unsent, first, part, parts) = struct.unpack_from(
            "<BBBBQQQBBBBHHIHBB", p, 4)
        assert version in (1, 2), version
        if version == 1:
            header, sections, hot, depth, shift = 48, 1, 0, 0, 0
        else:
            header = 56
            sections, hot, depth, shift = struct.unpack_from("<BBHB", p, 48)
            assert sections & 2 and depth == 128 and shift == 6, (sections, depth, shift)
        assert (rank_bank >> 4, rank_bank & 15, row, col) == geometry, "geometry"
        assert len(p) == header + 4 * n, "length"
        words = (total if sections & 1 else 0) + (depth + 2 + 3 * hot if sections & 2 else 0)
        key = (board, start, end)
        rec = records.setdefault(key, {"k": k, "unsent": unsent, "parts": parts,
                                       "sections": sections, "hot": hot, "depth": depth,
                                       "seen": set(), "c": [None] * words})
        assert rec["sections"] == sections
        rec["seen"].add(part)
        rec["c"][first:first + n] = struct.unpack_from("<%dI" % n, p, header)
    out = []
    for (board, start, end), rec in sorted(records.items(), key=lambda kv: kv[0][1]):
        assert len(rec["seen"]) == rec["parts"], "a record lacks a part"
        w = rec["c"]
        assert None not in w
        counters = w[:total] if rec["sections"] & 1 else None
        reuse = None
        if rec["sections"] & 2:
            r = w[total:] if counters is not None else w
            d = rec["depth"]
            hot = [(r[i] | r[i + 1] << 32, r[i + 2]) for i in range(d + 2, len(r), 3)]
            reuse = (list(r[:d + 1]), r[d + 1], [h for h in hot if h[1] > 0], rec["hot"])
        out.append((start, end, rec["k"], rec["unsent"], counters, reuse))
    return out, (ranks, banks, line_bits)


class Lru:
    """The RDHPU by board.md: a stack of 128 pages, most recent first."""

    DEPTH = 128

    def __init__(self, lanes, per_clock):
        self.lanes, self.per_clock = lanes, per_clock
        self.stack = []  # [page, count in the interval since it came in]
        self.clock, self.taken = None, 0
        self.reset_interval()

    def reset_interval(self):
        self.hist = [0] * (self.DEPTH + 1)
        self.skipped = 0
        for e in self.stack:
            e[1] = 0

    def reference(self, tick, line):
        clock = tick // self.lanes
        if clock != self.clock:
            self.clock, self.taken = clock, 0
        if self.taken == self.per_clock:
            self.skipped += 1
            return
        self.taken += 1
        page = line >> 6
        for d, e in enumerate(self.stack):
            if e[0] == page:
                self.hist[d] += 1
                e[1] += 1
                self.stack.insert(0, self.stack.pop(d))
                return
        self.hist[self.DEPTH] += 1
        self.stack.insert(0, [page, 1])
        del self.stack[self.DEPTH:]

    def section(self, hot_n):
        """The hot pages: the most references first, then the most recent."""
        ranked = sorted((-e[1], pos, e[0]) for pos, e in enumerate(self.stack) if e[1] > 0)
        hot = [(page, -neg) for neg, _, page in ranked[:hot_n]]
        return (self.hist[:], self.skipped, hot)


class Recount:
    """The unit's counters for every tick, by the rules of board.md."""

    def __init__(self, geometry):
        self.rank_bits, self.bank_bits, self.row_bits, self.col_bits = geometry
        self.ranks, self.banks = 1 << self.rank_bits, 1 << self.bank_bits
        self.line_bits = sum(geometry)
        # Bus view of each bank.
        self.open = {}
        self.row = {}
        self.used = {}
        self.closed_row = {}
        self.conflict = {}
        # The DSMU: the row of the last ACT in range (kept past PRE).
        self.dsmu_row = {}
        self.last_line = 0
        self.last_busy = {}
        # Called with (tick, line) for every reference.
        self.on_reference = None

    def line(self, rank, bank, column):
        return ((((rank << self.row_bits) | self.dsmu_row[(rank, bank)]) << self.bank_bits | bank)
                << self.col_bits) | (column >> 3)

    def command(self, cmd, add):
        """Counts one command; add(name, rank, bank_or_bit) counts one."""
        tick, m, rank, bank, arg = cmd
        in_rank = rank < self.ranks
        in_bank = in_rank and bank < self.banks
        # References, for the line-bit toggles (board.md step 2, DSMU).
        if m == "ACT" and in_bank and arg < (1 << self.row_bits):
            self.dsmu_row[(rank, bank)] = arg
        if (m in ("RD", "WR", "RDA", "WRA") and in_bank and (arg >> 3) < (1 << self.col_bits)
                and (rank, bank) in self.dsmu_row):
            line = self.line(rank, bank, arg)
            if self.on_reference:
                self.on_reference(tick, line)
            x = line ^ self.last_line
            self.last_line = line
            for bit in range(self.line_bits):
                if x >> bit & 1:
                    add("toggle", None, bit)
        if not in_rank or m == "NOP":
            return
        if m in ("ACT", "RD", "WR", "RDA", "WRA", "PRE") and not in_bank:
            return
        if self.last_busy.get(rank) != tick:
            self.last_busy[rank] = tick
            add("busy_ticks", rank, None)
        b = (rank, bank)
        if m == "ACT":
            add("act", rank, bank)
            prev = self.closed_row.get(b)
            self.conflict[b] = prev is not None and prev != arg
            self.closed_row[b] = None
            self.open[b] = True
            self.row[b] = arg
            self.used[b] = False
        elif m in ("RD", "WR", "RDA", "WRA"):
            add("wr" if m in ("WR", "WRA") else "rd", rank, bank)
            if not self.open.get(b):
                outcome = "miss"
            elif self.used[b]:
                outcome = "hit"
            elif self.conflict[b]:
                outcome = "conflict"
            else:
                outcome = "miss"
            add(outcome, rank, bank)
            self.used[b] = True
            if m in ("RDA", "WRA"):
                add("pre", rank, bank)
                self.open[b] = False
                self.closed_row[b] = None
        elif m in ("PRE", "PREA"):
            for bk in ([bank] if m == "PRE" else range(self.banks)):
                bb = (rank, bk)
                add("pre", rank, bk)
                if self.open.get(bb):
                    if not self.used[bb]:
                        add("unused_act", rank, bk)
                    self.open[bb] = False
                    self.closed_row[bb] = self.row[bb]
        elif m == "REF":
            add("ref", rank, None)
            for bk in range(self.banks):
                self.closed_row[(rank, bk)] = None


def index(name, rank, x, ranks, banks):
    if name in BANK:
        return (rank * banks + x) * 8 + BANK.index(name)
    if name in RANK:
        return ranks * banks * 8 + rank * 2 + RANK.index(name)
    return ranks * banks * 8 + ranks * 2 + x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--commands", required=True)
    ap.add_argument("--geometry", required=True)
    ap.add_argument("--complete", action="store_true")
    ap.add_argument("--window", default="0,%d" % (1 << 64),
                    help="FIRST,END: --complete checks the ticks in [FIRST, END) only")
    ap.add_argument("--config-window", default="0,0",
                    help="FIRST_LINE,LINES: lines whose references the RDHPU does not take")
    ap.add_argument("--lanes", type=int, default=8)
    ap.add_argument("--reuse-per-clock", type=int, default=3)
    ap.add_argument("--reuse-on", default="0,%d" % (1 << 64),
                    help="FIRST,END: ticks in which the RDHPU took references")
    ap.add_argument("captures", nargs="+")
    a = ap.parse_args()
    geometry = tuple(int(x) for x in a.geometry.split(","))
    records, (ranks, banks, line_bits) = assemble(read_stats_packets(a.captures), geometry)
    total = ranks * banks * 8 + ranks * 2 + line_bits + 2
    cmds = read_commands(a.commands)
    first_tick, end_tick = (int(x) for x in a.window.split(","))

    rc = Recount(geometry)
    counts = [0] * total
    totals = [0] * total
    outside = []
    ri = 0
    errors = []

    window_first, window_lines = (int(x) for x in a.config_window.split(","))
    reuse_first, reuse_end = (int(x) for x in a.reuse_on.split(","))
    lru = None
    reuse_totals = [0] * (Lru.DEPTH + 1)
    reuse = {"records": 0, "skipped": 0, "hot_pages": 0}

    def on_reference(tick, line):
        nonlocal lru
        if not reuse_first <= tick < reuse_end or 0 <= line - window_first < window_lines:
            return
        if lru is None:
            lru = Lru(a.lanes, a.reuse_per_clock)
        lru.reference(tick, line)

    def close(r):
        start, end, k, unsent, got, got_reuse = r
        if got is not None:
            for i in range(total - 2):
                if got[i] != counts[i]:
                    errors.append("interval [%d, %d): counter %d is %d, the recount %d"
                                  % (start, end, i, got[i], counts[i]))
            for i in range(total - 2):
                totals[i] += counts[i]
        for i in range(total - 2):
            counts[i] = 0
        if got_reuse is not None:
            hist, skipped, hot, hot_n = got_reuse
            want = lru.section(hot_n) if lru else ([0] * (Lru.DEPTH + 1), 0, [])
            if (hist, skipped, hot) != want:
                errors.append("interval [%d, %d): the RDHPU's section %s, the recount %s"
                              % (start, end, (hist, skipped, hot[:4]), (want[0], want[1], want[2][:4])))
            for i, h in enumerate(hist):
                reuse_totals[i] += h
            reuse["records"] += 1
            reuse["skipped"] += skipped
            reuse["hot_pages"] += len(hot)
        if lru:
            lru.reset_interval()

    prev_end = 0
    for r in records:
        assert r[0] >= prev_end and r[1] > r[0], "records overlap or go back"
        prev_end = r[1]
    rc.on_reference = on_reference
    opened = -1
    for cmd in cmds:
        tick = cmd[0]
        while ri < len(records) and tick >= records[ri][1]:
            close(records[ri])
            ri += 1
        inside = ri < len(records) and records[ri][0] <= tick
        if inside and opened != ri:
            # An interval starts at the record's start: what came before
            # belongs to intervals not sent.
            opened = ri
            if lru:
                lru.reset_interval()
        hits = []
        rc.command(cmd, lambda name, rank, x: hits.append(index(name, rank, x, ranks, banks)))
        if inside:
            for i in hits:
                counts[i] += 1
        elif hits and first_tick <= tick < end_tick:
            outside.append(tick)
    while ri < len(records):
        close(records[ri])
        ri += 1
    if a.complete and outside:
        errors.append("%d commands counted outside every record, first at tick %d"
                      % (len(outside), outside[0]))
    if errors:
        print("\n".join(errors[:20]), file=sys.stderr)
        sys.exit(1)
    summary = {name: sum(totals[index(name, r, b, ranks, banks)]
                         for r in range(ranks) for b in range(banks)) for name in BANK}
    for name in RANK:
        summary[name] = sum(totals[index(name, r, None, ranks, banks)] for r in range(ranks))
    summary["toggles"] = sum(totals[ranks * banks * 8 + ranks * 2:total - 2])
    summary["records"] = len(records)
    summary["unsent_reported"] = sum(r[3] for r in records)
    summary["over_limit"] = sum(r[4][total - 2] for r in records if r[4])
    summary["lost_fifo"] = sum(r[4][total - 1] for r in records if r[4])
    summary["commands"] = len(cmds)
    summary["reuse_records"] = reuse["records"]
    summary["reuse_skipped"] = reuse["skipped"]
    summary["reuse_hot_pages"] = reuse["hot_pages"]
    summary["reuse_histogram"] = reuse_totals
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
