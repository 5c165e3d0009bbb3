// Testbench for the capture chain's generated Verilog (Icarus Verilog or
// the Verilator binary build). Reads a DDR command stream in the canonical text form
// of format.md section 1 (`<cycle> <CMD> <rank> <bank> <arg>`, one per line,
// decimal, cycles strictly increasing: the pins carry one command per tick),
// drives the DIMM command pins `LANES` ticks per fabric clock and writes what
// the TX FIFO did:
//   P <tick> <word>    a word pushed at <tick> (hex)
//   F <tick> <level>   fill level after <tick>
//   O <tick> <word>    a word popped at <tick> (hex)
//   C <name> <value>   counters at the end
// Plusargs: +commands=<file> +out=<file> +num=<n> +den=<d> +clocks=<n>.
// The DUT is `capture_lanes`, a wrapper (written by hdl/tests/
// capture_verilog.rs) that packs the generated module's per-lane ports.
`timescale 1ns/1ps
module capture_tb;
   localparam L = `LANES;

   reg clock = 1'b0;
   reg [4*L-1:0] cs_n;
   reg [L-1:0] ras_n, cas_n, we_n, cke;
   reg [4*L-1:0] ba;
   reg [18*L-1:0] addr;
   reg [31:0] drain_num, drain_den;
   wire push_tick_valid;
   wire [63:0] push_tick;
   wire [32*L-1:0] push_count, push_word0, push_word1, push_word2, push_word3, push_word4, fill;
   wire pop_valid;
   wire [31:0] pop_word;
   wire [63:0] pop_tick;
   wire [31:0] protocol_errors, unknown_commands, events_dropped, lost_words, high_water;

   capture_lanes dut(
      .clock(clock), .cs_n(cs_n), .ras_n(ras_n), .cas_n(cas_n), .we_n(we_n), .cke(cke),
      .ba(ba), .addr(addr), .drain_num(drain_num), .drain_den(drain_den),
      .push_tick_valid(push_tick_valid), .push_tick(push_tick), .push_count(push_count),
      .push_word0(push_word0), .push_word1(push_word1), .push_word2(push_word2),
      .push_word3(push_word3), .push_word4(push_word4), .fill(fill),
      .pop_valid(pop_valid), .pop_word(pop_word), .pop_tick(pop_tick),
      .protocol_errors(protocol_errors), .unknown_commands(unknown_commands),
      .events_dropped(events_dropped), .lost_words(lost_words), .high_water(high_water));

   reg [1023:0] commands_path, out_path;
   integer commands_file, out_file, scanned, j, s;
   reg have_command;
   reg [63:0] cycle, tick, clocks, max_clocks;
   reg [8*8-1:0] mnemonic;
   reg [31:0] rank, bank, arg, count;
   reg [31:0] lane_words [0:4];

   task read_command;
      begin
         scanned = $fscanf(commands_file, "%d %s %d %d %d\n", cycle, mnemonic, rank, bank, arg);
         have_command = (scanned == 5);
      end
   endtask

   // Pins of one command on lane `lane` (JEDEC DDR3 truth table; columns on
   // A[9:0] and A11, A10 = auto-precharge / all banks).
   task drive_command(input integer lane);
      reg [2:0] rcw;
      reg [17:0] a;
      begin
         a = 18'd0;
         cs_n[4*lane +: 4] = ~(4'b0001 << rank[1:0]);
         cke[lane] = 1'b1;
         ba[4*lane +: 4] = bank[3:0];
         rcw = 3'b111;
         if (mnemonic == "ACT") begin rcw = 3'b011; a = arg[17:0]; end
         else if (mnemonic == "RD" || mnemonic == "RDA" || mnemonic == "WR" || mnemonic == "WRA") begin
            rcw = (mnemonic == "RD" || mnemonic == "RDA") ? 3'b101 : 3'b100;
            a = {6'd0, arg[10], (mnemonic == "RDA" || mnemonic == "WRA"), arg[9:0]};
         end
         else if (mnemonic == "PRE") rcw = 3'b010;
         else if (mnemonic == "PREA") begin rcw = 3'b010; a[10] = 1'b1; end
         else if (mnemonic == "REF") rcw = 3'b001;
         else if (mnemonic == "MRS") rcw = 3'b000;
         else if (mnemonic == "ZQ") rcw = 3'b110;
         else if (mnemonic == "NOP") rcw = 3'b111;
         else cke[lane] = 1'b0;  // unknown: chip selected with CKE low
         {ras_n[lane], cas_n[lane], we_n[lane]} = rcw;
         addr[18*lane +: 18] = a;
      end
   endtask

   initial begin
      if (!$value$plusargs("commands=%s", commands_path)) begin
         $display("capture_tb: +commands=<file> missing");
         $finish;
      end
      if (!$value$plusargs("out=%s", out_path)) begin
         $display("capture_tb: +out=<file> missing");
         $finish;
      end
      if (!$value$plusargs("num=%d", drain_num)) drain_num = 1;
      if (!$value$plusargs("den=%d", drain_den)) drain_den = 9;
      if (!$value$plusargs("clocks=%d", max_clocks)) max_clocks = 10000;
      commands_file = $fopen(commands_path, "r");
      out_file = $fopen(out_path, "w");
      if (commands_file == 0 || out_file == 0) begin
         $display("capture_tb: cannot open the command or output file");
         $finish;
      end
      read_command;
      for (clocks = 0; clocks < max_clocks; clocks = clocks + 1) begin
         for (j = 0; j < L; j = j + 1) begin
            tick = clocks * L + j;
            cs_n[4*j +: 4] = 4'hF;
            {ras_n[j], cas_n[j], we_n[j], cke[j]} = 4'b1111;
            ba[4*j +: 4] = 4'd0;
            addr[18*j +: 18] = 18'd0;
            if (have_command && cycle == tick) begin
               drive_command(j);
               read_command;
            end
         end
         #5 clock = 1'b1;
         #5 clock = 1'b0;
         if (push_tick_valid) begin
            for (j = 0; j < L; j = j + 1) begin
               count = push_count[32*j +: 32];
               lane_words[0] = push_word0[32*j +: 32];
               lane_words[1] = push_word1[32*j +: 32];
               lane_words[2] = push_word2[32*j +: 32];
               lane_words[3] = push_word3[32*j +: 32];
               lane_words[4] = push_word4[32*j +: 32];
               for (s = 0; s < count; s = s + 1)
                  $fdisplay(out_file, "P %0d %08x", push_tick + j, lane_words[s]);
               $fdisplay(out_file, "F %0d %0d", push_tick + j, fill[32*j +: 32]);
            end
         end
         if (pop_valid)
            $fdisplay(out_file, "O %0d %08x", pop_tick, pop_word);
      end
      $fdisplay(out_file, "C protocol_errors %0d", protocol_errors);
      $fdisplay(out_file, "C unknown_commands %0d", unknown_commands);
      $fdisplay(out_file, "C events_dropped %0d", events_dropped);
      $fdisplay(out_file, "C lost_words %0d", lost_words);
      $fdisplay(out_file, "C high_water %0d", high_water);
      $fclose(out_file);
      $finish;
   end
endmodule
