// Testbench for the Statistic Unit's counters on the capture chain's taps
// (generated Verilog of hdl/tests/statistics_support's `CaptureStats`;
// Icarus Verilog). Reads a DDR command stream in the canonical text form
// of format.md section 1 (`<cycle> <CMD> <rank> <bank> <arg>`, one per
// line, decimal, cycles strictly increasing), drives the DIMM command pins
// `LANES` ticks per fabric clock, and writes:
//   R <start> <end> <k> <c0> <c1> ...   each record, counters in format.md
//                                       section 5.3 order
//   A <tick>                            a tap's delay line misaligned
//   C <name> <value>                    the capture chain's drop counters
//   X <index> <expected> <read>         a readout that is not the counter's
//   C readout_nonzero <n>               the readouts of a count other than 0
// until the counting stage's tick reaches +stop. The readout walks the
// `COUNTERS` counters and one past them, one a clock, and must give each
// counter as it was in the clock of its index two clocks later (0 past
// the last). Plusargs:
// +commands=<file> +out=<file> +num=<n> +den=<d> +stop=<tick>.
// The DUT is `stats_lanes`, a wrapper (written by
// hdl/tests/statistics_verilog.rs) that packs the generated module's
// per-lane pins; `record_counters.vh` (written by the same test) prints
// the counters by their hierarchical names under `dut.core`, and
// `read_expect.vh` sets `read_expect` to counter `read_index` by the same
// names.
`timescale 1ns/1ps
module statistics_tb;
   localparam L = `LANES;

   reg clock = 1'b0;
   reg [4*L-1:0] cs_n;
   reg [L-1:0] ras_n, cas_n, we_n, cke;
   reg [4*L-1:0] ba;
   reg [18*L-1:0] addr;
   reg [31:0] drain_num, drain_den;
   wire record_valid, dropped_tick_valid, aligned;
   wire [63:0] record_start, record_end, dropped_tick;
   wire [4:0] record_k;
   wire [31:0] references_over_limit, events_dropped;
   reg [9:0] read_index;
   reg [31:0] read_expect, pending_expect;
   reg [9:0] pending_index;
   wire [31:0] read_value;
   reg [63:0] readout_nonzero;

   stats_lanes dut(
      .clock(clock), .cs_n(cs_n), .ras_n(ras_n), .cas_n(cas_n), .we_n(we_n), .cke(cke),
      .ba(ba), .addr(addr), .drain_num(drain_num), .drain_den(drain_den),
      .record_valid(record_valid), .record_start(record_start), .record_end(record_end),
      .record_k(record_k), .dropped_tick_valid(dropped_tick_valid),
      .dropped_tick(dropped_tick), .aligned(aligned),
      .references_over_limit(references_over_limit), .events_dropped(events_dropped),
      .read_index(read_index), .read_value(read_value));

   reg [1023:0] commands_path, out_path;
   integer commands_file, out_file, scanned, j;
   reg have_command, done;
   reg [63:0] cycle, pin_tick, clocks, stop, drain_per_tick;
   reg [8*8-1:0] mnemonic;
   reg [31:0] rank, bank, arg;

   `define TESTBENCH "statistics_tb"
   `include "ddr3_command_pins.vh"

   initial begin
      if (!$value$plusargs("num=%d", drain_per_tick)) drain_per_tick = 1;
      drain_num = drain_per_tick * L;
      if (!$value$plusargs("den=%d", drain_den)) drain_den = 9;
      if (!$value$plusargs("stop=%d", stop)) stop = 100000;
      open_files;
      done = 1'b0;
      readout_nonzero = 0;
      for (clocks = 0; !done; clocks = clocks + 1) begin
         set_pins;
         read_index = clocks % (`COUNTERS + 1);
         `include "read_expect.vh"
         #5 clock = 1'b1;
         #5 clock = 1'b0;
         // The index of the clock before is read now. The first clock's
         // expectation is taken at time 0, before the generated
         // always @(*) blocks have run (x): its check is skipped.
         if (clocks > 1) begin
            if (read_value !== pending_expect)
               $fdisplay(out_file, "X %0d %0d %0d", pending_index, pending_expect, read_value);
            if (pending_expect != 0) readout_nonzero = readout_nonzero + 1;
         end
         pending_index = read_index;
         pending_expect = read_expect;
         if (dropped_tick_valid && !aligned)
            $fdisplay(out_file, "A %0d", dropped_tick);
         if (record_valid) begin
            $fwrite(out_file, "R %0d %0d %0d", record_start, record_end, record_k);
            `include "record_counters.vh"
            $fwrite(out_file, "\n");
         end
         if (dropped_tick_valid && dropped_tick >= stop) done = 1'b1;
      end
      $fdisplay(out_file, "C references_over_limit %0d", references_over_limit);
      $fdisplay(out_file, "C events_dropped %0d", events_dropped);
      $fdisplay(out_file, "C readout_nonzero %0d", readout_nonzero);
      $fclose(out_file);
      $finish;
   end
endmodule
