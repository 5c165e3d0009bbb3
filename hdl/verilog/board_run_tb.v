// Runs the whole board core's generated Verilog (`BoardTop`) on a DDR
// command stream the way the golden model does (board.md "End of a stream"),
// for Verilator `--binary --timing` or Icarus. The DUT is `board_lanes`, the
// wrapper `hmtt_hdl::testbench::board_wrapper` writes around the generated
// `top`: pins, counters and GMII ports packed into vectors.
//
// Input (+commands=<file>, `/dev/stdin` works): 12 bytes per command, the
// tick (64 bits) and one lane's 30 pins as `hmtt_hdl::testbench::pin_word`
// packs them (32 bits), both big-endian (`testbench::pin_record`); ticks
// strictly increasing (the pins carry one command per tick). Every other
// tick is deselected. Binary: $fscanf's text parsing cost a fifth of the
// simulation.
//
// Output (standard output, one line each; Verilator's own lines start with
// `- `):
//   X <tick>                  a packet closed at tick `tick` (seq in order)
//   F <port> <clock> <hex>    a frame (preamble to FCS) starting at that
//                             Ethernet clock, every byte as two hex digits
//   E <port> <clock>          tx_er high on that Ethernet clock
//   P <clock>                 progress, every 2^16 fabric clocks
//   C <index> <value>         the counters (64-bit) at the cut, in
//                             `hmtt_hdl::testbench::HardwareCounter::ALL` order
//   CUT <packets> <words>     the packets the golden model reports end here:
//                             `packets` closed, holding `words` popped words
//   SU <sent> <unsent> <overrun>   the Statistic Unit's records once its
//                             last record was decided (with +stats_parts only)
//   S <packet_error> <frame_underrun> <fabric clocks>   sticky status at the end
//   DONE | TIMEOUT            every frame of those packets (and of the
//                             statistics records sent) is out, or not within
//                             +tail=<Ethernet clocks> after the cut and SU
//
// The cut: the stream's last command is in clock K0. N = the words pushed
// up to clock K0 = the fill level after clock K0 + the words popped up to
// it. The last reported packet is the one holding the N-th popped word
// (closed in the first clock at or after that pop with a close); with N = 0
// none. The counters are those after clock max(K0, its close).
//
// The Statistic Unit (+stats_parts=<packets a record>, 0 or absent for a
// core without it): the golden model closes the interval open at the end of
// the stream at its natural end, so the run goes on until the unit's
// counting stage is a few clocks past the last command's clock, takes the
// open interval's end tick there (`obs_stats_end`, 0 while off), goes on
// until that stage is 8 clocks past it (the record decided), and prints
// SU; then it waits for records_sent * parts statistics frames (payload
// magic "HMTS"), port `seq % ports` of their own seq, besides the trace's.
//
// Plusargs: +commands=<file> +fabric_half=<t> +eth_half=<t> (half periods
// in simulation time units; only their ratio matters) +tail=<clocks>
// +stats_parts=<n>.
`timescale 1ps/1ps
module board_run_tb;
   localparam L = `LANES;
   localparam P = `PORTS;
   localparam NC = `COUNTERS; // hmtt_hdl::testbench::HardwareCounter::ALL.len()
   localparam FMAX = 16384;   // bytes of one frame, preamble included
   localparam RING = 16;      // push-side clocks remembered
   localparam STDOUT = 32'h8000_0001;
   // The counters show a clock's pushes one fabric clock after its fill
   // level (encoder.rs: "the counters one more").
   localparam COUNTER_LAG = 1;

   reg fabric_clock = 1'b0;
   reg eth_clock = 1'b0;
   reg [30*L-1:0] pins;
   wire [8*P-1:0] txd;
   wire [P-1:0] tx_en, tx_er;
   wire [32*NC-1:0] counters;
   wire [31:0] fifo_fill;
   wire packet_error, frame_underrun;
   wire [63:0] obs_tick, obs_fill_tick;
   wire obs_tick_valid, obs_pop, obs_close, obs_fill_valid;
   wire [95:0] stats;
   wire [63:0] obs_stats_tick, obs_stats_end;
   wire obs_stats_tick_valid;

   board_lanes dut(
      .fabric_clock(fabric_clock), .eth_clock(eth_clock), .pins(pins),
      .txd(txd), .tx_en(tx_en), .tx_er(tx_er), .fifo_fill(fifo_fill), .counters(counters),
      .stats(stats), .obs_stats_tick(obs_stats_tick), .obs_stats_end(obs_stats_end),
      .obs_stats_tick_valid(obs_stats_tick_valid),
      .packet_error(packet_error), .frame_underrun(frame_underrun),
      .obs_tick(obs_tick), .obs_tick_valid(obs_tick_valid), .obs_pop(obs_pop),
      .obs_close(obs_close), .obs_fill_tick(obs_fill_tick),
      .obs_fill_valid(obs_fill_valid));

   reg [1023:0] commands_path;
   integer commands_file, scanned, i, j, p;
   reg [63:0] fabric_half, eth_half, tail;

   // Input.
   reg have_command, input_done;
   reg [63:0] cycle, tick, last_cycle, clocks, k0;
   reg [31:0] word;
   reg [95:0] record;

   // Counters extended to 64 bits (the hardware's wrap at 2^32).
   reg [63:0] ext [0:NC-1];
   reg [31:0] prev [0:NC-1];
   // Per push-side clock (mod RING): its fill level and the counters after it.
   reg [63:0] ring_clock [0:RING-1];
   reg [31:0] ring_fill [0:RING-1];
   reg [63:0] snap_clock [0:RING-1];
   reg [63:0] snap [0:RING*NC-1];
   reg [63:0] fill_k;

   // Pop side and the cut.
   reg [63:0] k, pops, closes, close_pops, n_words, eth_after_cut;
   reg n_known, cut, ended;
   reg [63:0] want [0:P-1];

   // The Statistic Unit's last record.
   reg [63:0] stats_parts, stats_end;
   reg stats_end_known, stats_done;
   reg [63:0] stats_want [0:P-1];
   reg [63:0] stats_frames [0:P-1];

   // Frames.
   reg [7:0] fbuf [0:P*FMAX-1];
   reg [63:0] flen [0:P-1];
   reg [63:0] fstart [0:P-1];
   reg [63:0] frames [0:P-1];
   reg [P-1:0] in_frame;
   reg [63:0] eth_clocks;
   reg all_out;

   task read_command;
      begin
         scanned = $fread(record, commands_file);
         cycle = record[95:32];
         word = record[31:0];
         have_command = (scanned == 12);
         if (!have_command) begin
            input_done = 1'b1;
            k0 = last_cycle / L;
         end else last_cycle = cycle;
      end
   endtask

   // Lane j carries tick clocks*L + j; deselected unless a command is due.
   task set_pins;
      begin
         for (j = 0; j < L; j = j + 1) begin
            tick = clocks * L + j;
            pins[30*j +: 30] = 30'h3FC0_0000;
            if (have_command && cycle == tick) begin
               pins[30*j +: 30] = word[29:0];
               read_command;
            end
            if (have_command && cycle < tick) begin
               $display("board_run_tb: tick %0d after %0d: ticks must increase", cycle, tick);
               $finish;
            end
         end
      end
   endtask

   task do_cut;
      begin
         cut = 1'b1;
         if (snap_clock[k % RING] != k) begin
            $display("board_run_tb: no counters for clock %0d", k);
            $finish;
         end
         for (i = 0; i < NC; i = i + 1)
            $fwrite(STDOUT, "C %0d %0d\n", i, snap[(k % RING) * NC + i]);
         $fwrite(STDOUT, "CUT %0d %0d\n", closes, close_pops);
         for (p = 0; p < P; p = p + 1)
            want[p] = (closes + P - 1 - p) / P;
         eth_after_cut = 0;
      end
   endtask

   // After a fabric clock's rising edge (sampled on its falling edge).
   task observe_fabric;
      reg [63:0] fk;
      begin
         for (i = 0; i < NC; i = i + 1) begin
            ext[i] = ext[i] + {32'd0, counters[32*i +: 32] - prev[i]};
            prev[i] = counters[32*i +: 32];
         end
         if (obs_fill_valid) begin
            fk = obs_fill_tick / L;
            ring_clock[fk % RING] = fk;
            ring_fill[fk % RING] = fifo_fill;
            if (fk >= COUNTER_LAG) begin
               snap_clock[(fk - COUNTER_LAG) % RING] = fk - COUNTER_LAG;
               for (i = 0; i < NC; i = i + 1)
                  snap[((fk - COUNTER_LAG) % RING) * NC + i] = ext[i];
            end
         end
         if (obs_tick_valid) begin
            k = obs_tick / L;
            if (obs_pop) pops = pops + 1;
            if (obs_close) begin
               closes = closes + 1;
               close_pops = pops;
               $fwrite(STDOUT, "X %0d\n", obs_tick);
               if (n_known && !cut && pops >= n_words) do_cut;
            end
            if (stats_parts != 0 && input_done && !stats_end_known && obs_stats_tick_valid
                && obs_stats_tick >= (k0 + 4) * L) begin
               stats_end = obs_stats_end;
               stats_end_known = 1'b1;
            end
            if (stats_end_known && !stats_done && obs_stats_tick_valid
                && (stats_end == 0 || obs_stats_tick >= stats_end + 8 * L)) begin
               stats_done = 1'b1;
               $fwrite(STDOUT, "SU %0d %0d %0d\n", stats[31:0], stats[63:32], stats[95:64]);
               for (p = 0; p < P; p = p + 1)
                  stats_want[p] = ({32'd0, stats[31:0]} * stats_parts + P - 1 - p) / P;
            end
            if (input_done && !n_known && k == k0) begin
               if (ring_clock[k0 % RING] != k0) begin
                  $display("board_run_tb: no fill level for clock %0d", k0);
                  $finish;
               end
               n_words = {32'd0, ring_fill[k0 % RING]} + pops;
               n_known = 1'b1;
               if (!cut && close_pops == n_words) do_cut;
            end
         end
      end
   endtask

   task print_frame(input integer port);
      begin
         $fwrite(STDOUT, "F %0d %0d ", port, fstart[port]);
         for (i = 0; i < flen[port]; i = i + 1)
            $fwrite(STDOUT, "%02x", fbuf[port * FMAX + i]);
         $fwrite(STDOUT, "\n");
      end
   endtask

   task finish_run(input timeout);
      begin
         $fwrite(STDOUT, "S %0d %0d %0d\n", packet_error, frame_underrun, clocks);
         if (timeout) $fwrite(STDOUT, "TIMEOUT\n");
         else $fwrite(STDOUT, "DONE\n");
         $fflush(STDOUT);
         $finish;
      end
   endtask

   // Whether port `port`'s frame is a statistics packet: its UDP payload
   // (IPv4) or raw payload starts with "HMTS".
   function is_stats(input integer port);
      integer o;
      begin
         o = port * FMAX + ((fbuf[port * FMAX + 20] == 8'h08 && fbuf[port * FMAX + 21] == 8'h00)
                            ? 50 : 22);
         is_stats = flen[port] >= o - port * FMAX + 4 && fbuf[o] == 8'h48
                    && fbuf[o + 1] == 8'h4D && fbuf[o + 2] == 8'h54 && fbuf[o + 3] == 8'h53;
      end
   endfunction

   // On an Ethernet clock's falling edge (the framers change on the rising one).
   task observe_eth;
      begin
         for (p = 0; p < P; p = p + 1) begin
            if (tx_er[p]) $fwrite(STDOUT, "E %0d %0d\n", p, eth_clocks);
            if (tx_en[p]) begin
               if (!in_frame[p]) begin
                  in_frame[p] = 1'b1;
                  fstart[p] = eth_clocks;
                  flen[p] = 0;
               end
               if (flen[p] < FMAX) fbuf[p * FMAX + flen[p]] = txd[8*p +: 8];
               flen[p] = flen[p] + 1;
            end else if (in_frame[p]) begin
               in_frame[p] = 1'b0;
               if (flen[p] > FMAX) $fwrite(STDOUT, "E %0d %0d\n", p, eth_clocks);
               else print_frame(p);
               if (flen[p] <= FMAX && is_stats(p)) stats_frames[p] = stats_frames[p] + 1;
               else frames[p] = frames[p] + 1;
            end
         end
         eth_clocks = eth_clocks + 1;
         ended = cut && (stats_parts == 0 || stats_done);
         if (ended) begin
            all_out = 1'b1;
            for (p = 0; p < P; p = p + 1)
               if (frames[p] < want[p] || in_frame[p]) all_out = 1'b0;
            if (stats_parts != 0)
               for (p = 0; p < P; p = p + 1)
                  if (stats_frames[p] < stats_want[p]) all_out = 1'b0;
            if (all_out) finish_run(1'b0);
            eth_after_cut = eth_after_cut + 1;
            if (eth_after_cut > tail) finish_run(1'b1);
         end
      end
   endtask

   initial begin
      if (!$value$plusargs("commands=%s", commands_path)) begin
         $display("board_run_tb: +commands=<file> missing");
         $finish;
      end
      if (!$value$plusargs("fabric_half=%d", fabric_half)) fabric_half = 500 * L;
      if (!$value$plusargs("eth_half=%d", eth_half)) eth_half = 4000;
      if (!$value$plusargs("tail=%d", tail)) tail = 1000000;
      if (!$value$plusargs("stats_parts=%d", stats_parts)) stats_parts = 0;
      commands_file = $fopen(commands_path, "rb");
      if (commands_file == 0) begin
         $display("board_run_tb: cannot open the command file");
         $finish;
      end
      for (i = 0; i < NC; i = i + 1) begin
         ext[i] = 0;
         prev[i] = 0;
      end
      for (i = 0; i < RING; i = i + 1) begin
         ring_clock[i] = {64{1'b1}};
         snap_clock[i] = {64{1'b1}};
      end
      for (p = 0; p < P; p = p + 1) begin
         frames[p] = 0;
         flen[p] = 0;
         want[p] = 0;
         stats_want[p] = 0;
         stats_frames[p] = 0;
      end
      stats_end_known = 1'b0;
      stats_done = 1'b0;
      stats_end = 0;
      ended = 1'b0;
      in_frame = 0;
      pops = 0;
      closes = 0;
      close_pops = 0;
      n_known = 1'b0;
      cut = 1'b0;
      input_done = 1'b0;
      last_cycle = 0;
      k0 = 0;
      clocks = 0;
      eth_clocks = 0;
      read_command;
      set_pins;
      fork
         forever begin
            #(fabric_half) fabric_clock = 1'b1;
            #(fabric_half) fabric_clock = 1'b0;
            observe_fabric;
            clocks = clocks + 1;
            if (clocks[15:0] == 16'd0) $fwrite(STDOUT, "P %0d\n", clocks);
            set_pins;
         end
         forever begin
            #(eth_half) eth_clock = 1'b1;
            #(eth_half) eth_clock = 1'b0;
            observe_eth;
         end
      join
   end
endmodule
