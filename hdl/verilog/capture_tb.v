// Testbench for the capture chain's generated Verilog (Icarus Verilog or
// the Verilator binary build). Reads a DDR command stream in the canonical text form
// of format.md section 1 (`<cycle> <CMD> <rank> <bank> <arg>`, one per line,
// decimal, cycles strictly increasing: the pins carry one command per tick),
// drives the DIMM command pins `LANES` ticks per fabric clock and writes what
// the TX FIFO did, per fabric clock `k` (board.md 2.0):
//   P <k> <word>       a word pushed in clock k (hex)
//   F <k> <level>      fill level after clock k
//   O <k> <word>       a word popped in clock k (hex)
//   M <k> <flags>      header flags of the board mode after clock k
//   C <name> <value>   counters at the end
// Plusargs: +commands=<file> +out=<file> +num=<n> +den=<d> +clocks=<n>; the
// drain is num/den words per tick, so the chain gets L num per clock.
// The DUT is `capture_lanes`, a wrapper (written by hdl/tests/
// capture_verilog.rs) that packs the generated module's per-lane pins
// (`pins$j$cs_n`, ...) and per-group push outputs (`push_count$g`, ...).
`timescale 1ns/1ps
module capture_tb;
   localparam L = `LANES;
   localparam G = 5;  // word groups per clock (hmtt_hdl::encoder::GROUPS)

   reg clock = 1'b0;
   reg [4*L-1:0] cs_n;
   reg [L-1:0] ras_n, cas_n, we_n, cke;
   reg [4*L-1:0] ba;
   reg [18*L-1:0] addr;
   reg [31:0] drain_num, drain_den;
   wire push_tick_valid;
   wire [63:0] push_tick;
   wire [2*G-1:0] push_count;
   wire [32*G-1:0] push_word0, push_word1, push_word2;
   wire [31:0] fill;
   wire pop_valid, tick_valid, tracing, tags_only;
   wire [31:0] pop_word;
   wire [63:0] tick;
   wire [31:0] protocol_errors, unknown_commands, out_of_range, references_over_limit;
   wire [31:0] clocks_over_limit, config_events, events_dropped, lost_words;
   wire [31:0] time_fillers, time_overflows, high_water;

   capture_lanes dut(
      .clock(clock), .cs_n(cs_n), .ras_n(ras_n), .cas_n(cas_n), .we_n(we_n), .cke(cke),
      .ba(ba), .addr(addr), .drain_num(drain_num), .drain_den(drain_den),
      .push_tick_valid(push_tick_valid), .push_tick(push_tick), .push_count(push_count),
      .push_word0(push_word0), .push_word1(push_word1), .push_word2(push_word2), .fill(fill),
      .pop_valid(pop_valid), .pop_word(pop_word), .tick(tick), .tick_valid(tick_valid),
      .tracing(tracing), .tags_only(tags_only),
      .protocol_errors(protocol_errors), .unknown_commands(unknown_commands),
      .out_of_range(out_of_range), .references_over_limit(references_over_limit),
      .clocks_over_limit(clocks_over_limit), .config_events(config_events),
      .events_dropped(events_dropped), .lost_words(lost_words),
      .time_fillers(time_fillers), .time_overflows(time_overflows), .high_water(high_water));

   reg [1023:0] commands_path, out_path;
   integer commands_file, out_file, scanned, j, s;
   reg have_command;
   reg [63:0] cycle, pin_tick, clocks, max_clocks, drain_per_tick;
   reg [8*8-1:0] mnemonic;
   reg [31:0] rank, bank, arg, count;
   reg [31:0] group_words [0:2];

   `define TESTBENCH "capture_tb"
   `include "ddr3_command_pins.vh"

   initial begin
      if (!$value$plusargs("num=%d", drain_per_tick)) drain_per_tick = 1;
      drain_num = drain_per_tick * L;
      if (!$value$plusargs("den=%d", drain_den)) drain_den = 9;
      if (!$value$plusargs("clocks=%d", max_clocks)) max_clocks = 10000;
      open_files;
      for (clocks = 0; clocks < max_clocks; clocks = clocks + 1) begin
         set_pins;
         #5 clock = 1'b1;
         #5 clock = 1'b0;
         if (push_tick_valid) begin
            for (j = 0; j < G; j = j + 1) begin
               count = push_count[2*j +: 2];
               group_words[0] = push_word0[32*j +: 32];
               group_words[1] = push_word1[32*j +: 32];
               group_words[2] = push_word2[32*j +: 32];
               for (s = 0; s < count; s = s + 1)
                  $fdisplay(out_file, "P %0d %08x", push_tick / L, group_words[s]);
            end
            $fdisplay(out_file, "F %0d %0d", push_tick / L, fill);
         end
         if (tick_valid) begin
            $fdisplay(out_file, "M %0d %0d", tick / L, {tags_only, tracing});
            if (pop_valid)
               $fdisplay(out_file, "O %0d %08x", tick / L, pop_word);
         end
      end
      $fdisplay(out_file, "C protocol_errors %0d", protocol_errors);
      $fdisplay(out_file, "C unknown_commands %0d", unknown_commands);
      $fdisplay(out_file, "C out_of_range %0d", out_of_range);
      $fdisplay(out_file, "C references_over_limit %0d", references_over_limit);
      $fdisplay(out_file, "C clocks_over_limit %0d", clocks_over_limit);
      $fdisplay(out_file, "C config_events %0d", config_events);
      $fdisplay(out_file, "C events_dropped %0d", events_dropped);
      $fdisplay(out_file, "C lost_words %0d", lost_words);
      $fdisplay(out_file, "C time_fillers %0d", time_fillers);
      $fdisplay(out_file, "C time_overflows %0d", time_overflows);
      $fdisplay(out_file, "C high_water %0d", high_water);
      $fclose(out_file);
      $finish;
   end
endmodule
