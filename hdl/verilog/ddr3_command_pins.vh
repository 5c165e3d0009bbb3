// Shared by the Icarus testbenches capture_tb.v, statistics_tb.v and
// board_tb.v: reading the canonical DDR command text of format.md section 1
// (`<cycle> <CMD> <rank> <bank> <arg>`, one per line, decimal, cycles
// strictly increasing) and driving it on the DIMM command pins, `L` ticks a
// fabric clock. Included inside the testbench module, after it declares
// L, the pins (cs_n, ras_n, cas_n, we_n, cke, ba, addr), the files
// (commands_path, out_path, commands_file, out_file), the command fields
// (scanned, have_command, cycle, mnemonic, rank, bank, arg) and the loop
// state (clocks, pin_tick, j); `TESTBENCH names it in its messages.

task read_command;
   begin
      scanned = $fscanf(commands_file, "%d %s %d %d %d\n", cycle, mnemonic, rank, bank, arg);
      have_command = (scanned == 5);
   end
endtask

// Pins of one command on lane `lane` (JEDEC DDR3 truth table; columns on
// A[9:0] and A11, A10 = auto-precharge / all banks), as
// `hmtt_hdl::dcbu::CommandPins::for_command`.
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

// The pins of fabric clock `clocks`: lane j carries tick clocks*L + j,
// deselected unless a command is due on it.
task set_pins;
   begin
      for (j = 0; j < L; j = j + 1) begin
         pin_tick = clocks * L + j;
         cs_n[4*j +: 4] = 4'hF;
         {ras_n[j], cas_n[j], we_n[j], cke[j]} = 4'b1111;
         ba[4*j +: 4] = 4'd0;
         addr[18*j +: 18] = 18'd0;
         if (have_command && cycle == pin_tick) begin
            drive_command(j);
            read_command;
         end
      end
   end
endtask

// +commands=<file> and +out=<file>, opened; the first command read.
task open_files;
   begin
      if (!$value$plusargs("commands=%s", commands_path)) begin
         $display("%s: +commands=<file> missing", `TESTBENCH);
         $finish;
      end
      if (!$value$plusargs("out=%s", out_path)) begin
         $display("%s: +out=<file> missing", `TESTBENCH);
         $finish;
      end
      commands_file = $fopen(commands_path, "r");
      out_file = $fopen(out_path, "w");
      if (commands_file == 0 || out_file == 0) begin
         $display("%s: cannot open the command or output file", `TESTBENCH);
         $finish;
      end
      read_command;
   end
endtask
