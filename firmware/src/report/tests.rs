use super::*;

const ECP5_LOG: &str = "Info: Device utilisation:
Info: \t          TRELLIS_IO:      17/    365     4%
Info: \t              DP16KD:       3/    208     1%
Info: \t             EHXPLLL:       1/      4    25%
Info: \t          TRELLIS_FF:      14/  83640     0%
Info: \t        TRELLIS_COMB:      28/  83640     0%

Info: Placed 33 cells based on constraints.
Info: Max frequency for clock '$glbnet$ref_clk_125$TRELLIS_IO_IN': 672.49 MHz (PASS at 125.00 MHz)
Info: Max frequency for clock                      '$glbnet$fabric_clk': 213.56 MHz (PASS at 100.00 MHz)
Info: Max delay posedge $glbnet$sample_clk -> posedge $glbnet$fabric_clk: 2.10 ns
Info: Device utilisation:
Info: \t          TRELLIS_IO:      99/    365     4%
Info: Max frequency for clock '$glbnet$ref_clk_125$TRELLIS_IO_IN': 131.00 MHz (PASS at 125.00 MHz)
Info: Max frequency for clock                      '$glbnet$fabric_clk': 104.00 MHz (PASS at 100.00 MHz)
Info: Max frequency for clock                      '$glbnet$sample_clk': 221.50 MHz (PASS at 200.00 MHz)
Info: Max delay <async>                    -> posedge $glbnet$fabric_clk: 3.66 ns
Info: Max delay posedge $glbnet$fabric_clk -> posedge $glbnet$sample_clk: 1.32 ns
Info: Max delay posedge $glbnet$sample_clk -> posedge $glbnet$fabric_clk: 7.55 ns
";

#[test]
fn parses_first_utilisation_table_last_fmax_and_last_crossing_delays() {
    let f = parse_nextpnr_log(ECP5_LOG);
    assert_eq!(f.resources.len(), 5);
    assert_eq!(
        f.resources[0],
        Resource {
            name: "TRELLIS_IO".into(),
            used: 17,
            available: 365
        }
    );
    assert_eq!(f.resources[1].used, 3);
    assert_eq!(f.clocks.len(), 3);
    let fabric = f
        .clocks
        .iter()
        .find(|c| c.nextpnr_name.contains("fabric"))
        .unwrap();
    assert_eq!(fabric.fmax_mhz, 104.0);
    assert_eq!(fabric.constraint_mhz, 100.0);
    assert_eq!(f.crossings.len(), 3);
    let widen = f
        .crossings
        .iter()
        .find(|c| c.from.contains("sample_clk") && c.to.contains("fabric_clk"))
        .unwrap();
    assert_eq!(widen.delay_ns, 7.55);
    assert!(f.crossings.iter().any(|c| c.from == "<async>"));
    // nextpnr-ice40 pads the name before the colon.
    let ice = parse_crossing_line(
        "Info: Max delay posedge ddr_ck$SB_IO_IN_$glb_clk      -> posedge ref_clk_125$SB_IO_IN_$glb_clk: 1.60 ns",
    )
    .unwrap();
    assert_eq!(ice.to, "posedge ref_clk_125$SB_IO_IN_$glb_clk");
    assert_eq!(ice.delay_ns, 1.6);
}

#[test]
fn clocks_pass_only_with_five_percent_margin() {
    let f = parse_nextpnr_log(ECP5_LOG);
    let req = Board::Ecp5_85f.required_clocks();
    let (results, others) = match_clocks(req, &f.clocks);
    assert!(others.is_empty());
    let by = |d: &str| results.iter().find(|c| c.domain == d).unwrap();
    // 104 MHz against 100: met, but 4 % is below the margin.
    let fabric = by("fabric");
    assert_eq!(fabric.fmax_mhz, Some(104.0));
    assert!(fabric.meets && !fabric.pass);
    assert!((fabric.slack_ns.unwrap() - (10.0 - 1000.0 / 104.0)).abs() < 1e-9);
    assert!((fabric.margin.unwrap() - 0.04).abs() < 1e-9);
    // 221.5 against 200: 10.75 %.
    assert!(by("sampler").pass);
    // 131.00 against 125: 4.8 %, short of 131.25.
    let eth = by("ethernet");
    assert!(eth.meets && !eth.pass);
    let mut at_margin = f.clocks.clone();
    for c in &mut at_margin {
        c.fmax_mhz = if c.nextpnr_name.contains("ref_clk") {
            131.25
        } else if c.nextpnr_name.contains("fabric") {
            105.0
        } else {
            199.0
        };
    }
    let (results, _) = match_clocks(req, &at_margin);
    let by = |d: &str| results.iter().find(|c| c.domain == d).unwrap();
    assert!(by("ethernet").pass && by("fabric").pass);
    assert!(!by("sampler").meets && !by("sampler").pass);
    let (missing, _) = match_clocks(req, &f.clocks[..1]);
    assert_eq!(missing.iter().filter(|c| c.fmax_mhz.is_none()).count(), 2);
    assert!(missing
        .iter()
        .filter(|c| c.fmax_mhz.is_none())
        .all(|c| !c.pass));
}

#[test]
fn crossings_pass_within_their_budget_less_the_margin() {
    let f = parse_nextpnr_log(ECP5_LOG);
    let board = Board::Ecp5_85f;
    let t = match_transfers(board.required_clocks(), board.transfers(), &f.crossings);
    assert_eq!(t.len(), 1);
    assert_eq!(
        (t[0].from.as_str(), t[0].to.as_str()),
        ("sampler", "fabric")
    );
    // 7.55 ns against 8 ns less 5 % (7.6 ns).
    assert_eq!(t[0].delay_ns, Some(7.55));
    assert!(t[0].pass);
    let mut slower = f.crossings.clone();
    slower.iter_mut().for_each(|c| c.delay_ns = 7.65);
    let t = match_transfers(board.required_clocks(), board.transfers(), &slower);
    assert!(!t[0].pass);
    let t = match_transfers(board.required_clocks(), board.transfers(), &[]);
    assert_eq!(t[0].delay_ns, None);
    assert!(!t[0].pass);
}

fn ecp5_report(log: &str) -> BuildReport {
    let f = parse_nextpnr_log(log);
    let board = Board::Ecp5_85f;
    let (clocks, other_clocks) = match_clocks(board.required_clocks(), &f.clocks);
    let transfers = match_transfers(board.required_clocks(), board.transfers(), &f.crossings);
    BuildReport {
        board,
        device: "LFE5U-85F".into(),
        memory: "DDR3-1600".into(),
        lanes: 8,
        top: "ecp5-board".into(),
        placeholder: false,
        top_note: String::new(),
        seed: 1,
        summary: ResourceSummary::default(),
        resources: Vec::new(),
        pass: clocks.iter().all(|c| c.pass) && transfers.iter().all(|t| t.pass),
        clocks,
        other_clocks,
        transfers,
        dimm: board.dimm().name.into(),
        dimm_ck_mhz: board.dimm().ck_mhz,
        stage_seconds: Vec::new(),
        bitstream: PathBuf::from("x.bit"),
        bitstream_bytes: 1,
    }
}

#[test]
fn text_states_slack_crossings_and_the_dimm_speed_followed() {
    let mut report = ecp5_report(ECP5_LOG);
    // The least of 8 x 104.00 (fabric) and 4 x 221.50 (sampler).
    assert_eq!(report.command_clock_allowed_mhz(), Some(8.0 * 104.0));
    let text = report.to_text();
    for want in [
        "command clock up to 832.0 MHz (DDR-1664, tCK 1.20 ns) with L = 8",
        "DDR3-1600 (CK 800 MHz): within the timing, but not every clock and crossing has its margin",
        "slack  +0.38 ns (  +4.0 %)  FAIL (margin)",
        "sampler -> fabric    7.55 ns  budget  8.00 ns  slack  +0.45 ns  PASS",
        "FAIL: a required clock or crossing is not met with its margin",
    ] {
        assert!(text.contains(want), "`{want}` not in\n{text}");
    }
    let fast = ECP5_LOG
        .replace("131.00 MHz (PASS", "140.00 MHz (PASS")
        .replace("104.00 MHz (PASS", "110.00 MHz (PASS");
    report = ecp5_report(&fast);
    assert!(report.pass);
    let text = report.to_text();
    assert!(text.contains("DDR3-1600 (CK 800 MHz): followed"), "{text}");
    let slow = ECP5_LOG.replace("221.50 MHz", "190.00 MHz");
    report = ecp5_report(&slow);
    // The sampler now limits: 4 x 190.
    assert_eq!(report.command_clock_allowed_mhz(), Some(760.0));
    assert!(report
        .to_text()
        .contains("DDR3-1600 (CK 800 MHz): NOT followed"));
    report.clocks.retain(|c| c.domain != "fabric");
    report.clocks[0].fmax_mhz = None;
    assert_eq!(report.command_clock_allowed_mhz(), None);
    assert!(!report.to_text().contains("timing allows"));
}

#[test]
fn reports_from_before_margins_and_crossings_still_load() {
    let mut json: serde_json::Value =
        serde_json::from_str(&ecp5_report(ECP5_LOG).to_json()).unwrap();
    let obj = json.as_object_mut().unwrap();
    for key in ["transfers", "dimm", "dimm_ck_mhz"] {
        obj.remove(key);
    }
    for c in obj["clocks"].as_array_mut().unwrap() {
        let c = c.as_object_mut().unwrap();
        for key in ["ticks_per_clock", "slack_ns", "margin", "meets"] {
            c.remove(key);
        }
    }
    let old: BuildReport = serde_json::from_value(json).unwrap();
    assert!(old.transfers.is_empty());
    // Without ticks per clock, the fabric clock counts with L.
    assert_eq!(old.command_clock_allowed_mhz(), Some(8.0 * 104.0));
    assert!(old.to_text().contains("slack"));
}

#[test]
fn yosys_stat_counts_by_prefix() {
    let stat = "   Number of cells:   40\n     SB_DFF   3\n     SB_DFFER  4\n     SB_LUT4  30\n     SB_DFF 2 extra\n";
    assert_eq!(count_yosys_cells(stat, &["SB_DFF"]), 7);
}

#[test]
fn comparison_shows_previous_figures_of_same_board() {
    let mut fmax = BTreeMap::new();
    fmax.insert("fabric".to_string(), Some(150.0));
    let old = FmaxRecord {
        when: 1,
        commit: "abc".into(),
        board: Board::Ice40Hx8k,
        top: "t".into(),
        placeholder: false,
        seed: 1,
        fmax_mhz: fmax.clone(),
        transfer_ns: BTreeMap::new(),
        logic_cells: Some(100),
        flip_flops: Some(50),
        block_rams: Some(4),
        ios: Some(30),
        pass: true,
        yosys_seconds: Some(60.0),
        nextpnr_seconds: None,
    };
    let mut now = old.clone();
    now.nextpnr_seconds = Some(125.4);
    now.fmax_mhz.insert("fabric".to_string(), Some(120.0));
    now.logic_cells = Some(110);
    let history_text = format!("{}\nnot json\n", serde_json::to_string(&old).unwrap());
    let (history, bad) = read_history(&history_text);
    assert_eq!((history.len(), bad), (1, 1));
    let text = compare_text(&now, &history);
    assert!(text.contains("-20.0%"), "{text}");
    assert!(text.contains("+10"), "{text}");
    assert!(
        text.contains("nextpnr (s)") && text.contains("125"),
        "{text}"
    );
    // Records from before the timing fields still load.
    let legacy = r#"{"when":1,"commit":"a","board":"ice40-hx8k","top":"t","placeholder":true,"seed":1,"fmax_mhz":{},"logic_cells":null,"flip_flops":null,"block_rams":null,"ios":null,"pass":true}"#;
    assert_eq!(read_history(legacy).0[0].yosys_seconds, None);
    assert!(compare_text(&now, &[]).contains("no previous record"));
}
