// Testbench for the whole board core's generated Verilog (`BoardTop`:
// capture chain, packetizer, port buffers, framers), for Icarus Verilog or
// a Verilator `--binary --timing` build. Reads a DDR command stream in the
// canonical text form of format.md section 1 (`<cycle> <CMD> <rank> <bank>
// <arg>`, one per line, decimal, cycles strictly increasing: the pins carry
// one command per tick), drives the DIMM command pins `LANES` ticks per
// fabric clock, runs the Ethernet clock independently and writes every
// GMII byte the `PORTS` ports send:
//   G <port> <eth clock> <txd hex> <tx_er>   a clock with tx_en or tx_er high
//   C <name> <value>                         counters at the end
// Plusargs: +commands=<file> +out=<file> +clocks=<fabric clocks to run>
// +fabric_half=<ps> +eth_half=<ps> (half periods).
// The DUT is `board_lanes`, a wrapper (written by hdl/tests/board_testbench.rs)
// that packs the generated module's per-lane pins (`pins$j$cs_n`, ...) and
// per-port ports (`txd$p`, ...) into vectors.
`timescale 1ps/1ps
module board_tb;
   localparam L = `LANES;
   localparam P = `PORTS;

   reg fabric_clock = 1'b0;
   reg eth_clock = 1'b0;
   reg [4*L-1:0] cs_n;
   reg [L-1:0] ras_n, cas_n, we_n, cke;
   reg [4*L-1:0] ba;
   reg [18*L-1:0] addr;
   wire [8*P-1:0] txd;
   wire [P-1:0] tx_en, tx_er;
   wire [31:0] fifo_fill, events_dropped, protocol_errors, unknown_commands, out_of_range;
   wire [31:0] config_events;
   wire [31:0] lost_words, fifo_high_water, time_fillers, time_overflows;
   wire packet_error, frame_underrun;

   board_lanes dut(
      .fabric_clock(fabric_clock), .eth_clock(eth_clock),
      .cs_n(cs_n), .ras_n(ras_n), .cas_n(cas_n), .we_n(we_n), .cke(cke), .ba(ba), .addr(addr),
      .txd(txd), .tx_en(tx_en), .tx_er(tx_er),
      .fifo_fill(fifo_fill), .events_dropped(events_dropped), .protocol_errors(protocol_errors),
      .unknown_commands(unknown_commands), .out_of_range(out_of_range),
      .config_events(config_events),
      .lost_words(lost_words), .fifo_high_water(fifo_high_water),
      .time_fillers(time_fillers), .time_overflows(time_overflows),
      .packet_error(packet_error), .frame_underrun(frame_underrun));

   reg [1023:0] commands_path, out_path;
   integer commands_file, out_file, scanned, j, p;
   reg have_command;
   reg [63:0] cycle, pin_tick, clocks, max_clocks, eth_clocks;
   reg [63:0] fabric_half, eth_half;
   reg [8*8-1:0] mnemonic;
   reg [31:0] rank, bank, arg;

   `define TESTBENCH "board_tb"
   `include "ddr3_command_pins.vh"

   initial begin
      if (!$value$plusargs("clocks=%d", max_clocks)) max_clocks = 10000;
      if (!$value$plusargs("fabric_half=%d", fabric_half)) fabric_half = 500 * L;
      if (!$value$plusargs("eth_half=%d", eth_half)) eth_half = 350;
      open_files;
      clocks = 0;
      set_pins;
      eth_clocks = 0;
      fork
         // Fabric clock: rises at fabric_half; the next cycle's pins are
         // set on the falling edge.
         forever begin
            #(fabric_half) fabric_clock = 1'b1;
            #(fabric_half) fabric_clock = 1'b0;
            clocks = clocks + 1;
            if (clocks >= max_clocks) begin
               $fdisplay(out_file, "C fifo_fill %0d", fifo_fill);
               $fdisplay(out_file, "C events_dropped %0d", events_dropped);
               $fdisplay(out_file, "C protocol_errors %0d", protocol_errors);
               $fdisplay(out_file, "C unknown_commands %0d", unknown_commands);
               $fdisplay(out_file, "C out_of_range %0d", out_of_range);
               $fdisplay(out_file, "C config_events %0d", config_events);
               $fdisplay(out_file, "C lost_words %0d", lost_words);
               $fdisplay(out_file, "C fifo_high_water %0d", fifo_high_water);
               $fdisplay(out_file, "C time_fillers %0d", time_fillers);
               $fdisplay(out_file, "C time_overflows %0d", time_overflows);
               $fdisplay(out_file, "C packet_error %0d", packet_error);
               $fdisplay(out_file, "C frame_underrun %0d", frame_underrun);
               $fclose(out_file);
               $finish;
            end
            set_pins;
         end
         // Ethernet clock; the GMII outputs are sampled on its falling edge
         // (the framer's registers change on the rising edge).
         forever begin
            #(eth_half) eth_clock = 1'b1;
            #(eth_half) eth_clock = 1'b0;
            for (p = 0; p < P; p = p + 1)
               if (tx_en[p] || tx_er[p])
                  $fdisplay(out_file, "G %0d %0d %02x %0d", p, eth_clocks, txd[8*p +: 8], tx_er[p]);
            eth_clocks = eth_clocks + 1;
         end
      join
   end
endmodule
