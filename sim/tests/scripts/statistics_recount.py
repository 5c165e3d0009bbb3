#!/usr/bin/env python3
"""Recounts the board's Statistic Unit from a DDR command file, from the
specification alone (docs/board.md "Statistic Unit", docs/format.md §1,
§5.3, §7), and compares it with the statistics packets of capture files.

Independent of the golden model: nothing here comes from its code.

usage: statistics_recount.py --commands FILE --geometry R,B,ROW,COL
           [--complete [--window FIRST,END]] CAPTURE...

Every record's counters (but the two the board alone knows: references
over the clock's limit and events lost at the FIFO) must equal the recount
over its ticks [start, end). With --complete (unit on from reset, every
record sent), every tick with a counted command (in the window) must lie
in a record.
Prints a JSON summary: totals of the recount and of the two board-only
counters over the records.
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
    rank_bits, bank_bits, row_bits, col_bits = geometry
    ranks, banks = 1 << rank_bits, 1 << bank_bits
    line_bits = rank_bits + bank_bits + row_bits + col_bits
    total = ranks * banks * 8 + ranks * 2 + line_bits + 2
    records = {}
    for p in packets:
        (version, flags, board, port, seq, start, end, k, row, rank_bank, col,
         tick_ps, n, unsent, first, part, parts) = struct.unpack_from(
            "<BBBBQQQBBBBHHIHBB", p, 4)
        assert version == 1
        assert (rank_bank >> 4, rank_bank & 15, row, col) == geometry, "geometry"
        assert len(p) == 48 + 4 * n, "length"
        key = (board, start, end)
        rec = records.setdefault(key, {"k": k, "unsent": unsent, "parts": parts,
                                       "seen": set(), "c": [None] * total})
        rec["seen"].add(part)
        rec["c"][first:first + n] = struct.unpack_from("<%dI" % n, p, 48)
    out = []
    for (board, start, end), rec in sorted(records.items(), key=lambda kv: kv[0][1]):
        assert len(rec["seen"]) == rec["parts"], "a record lacks a part"
        assert None not in rec["c"]
        out.append((start, end, rec["k"], rec["unsent"], rec["c"]))
    return out, (ranks, banks, line_bits)


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

    def close(r):
        start, end, k, unsent, got = r
        for i in range(total - 2):
            if got[i] != counts[i]:
                errors.append("interval [%d, %d): counter %d is %d, the recount %d"
                              % (start, end, i, got[i], counts[i]))
        for i in range(total - 2):
            totals[i] += counts[i]
            counts[i] = 0

    prev_end = 0
    for r in records:
        assert r[0] >= prev_end and r[1] > r[0], "records overlap or go back"
        prev_end = r[1]
    for cmd in cmds:
        tick = cmd[0]
        while ri < len(records) and tick >= records[ri][1]:
            close(records[ri])
            ri += 1
        inside = ri < len(records) and records[ri][0] <= tick
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
    summary["over_limit"] = sum(r[4][total - 2] for r in records)
    summary["lost_fifo"] = sum(r[4][total - 1] for r in records)
    summary["commands"] = len(cmds)
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
