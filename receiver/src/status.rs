//! The live status: one progress line per port and one per board, redrawn a
//! few times a second on a terminal (indicatif hides itself otherwise).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::stats::Shared;

pub fn run(shared: Arc<Shared>, names: Vec<String>) {
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    let style = ProgressStyle::with_template("{prefix:.bold} {msg}").expect("valid template");
    let bars: Vec<ProgressBar> = names
        .iter()
        .map(|n| {
            let b = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
            b.set_prefix(n.clone());
            b
        })
        .collect();
    let boards = multi.add(ProgressBar::new_spinner().with_style(style));
    boards.set_prefix("boards");
    let mut last = vec![0u64; bars.len()];
    let mut t = Instant::now();
    loop {
        let done = shared.stopping();
        let dt = t.elapsed().as_secs_f64().max(1e-3);
        t = Instant::now();
        for (i, b) in bars.iter().enumerate() {
            let c = &shared.ports[i];
            let bytes = c.bytes.load(Relaxed);
            let rate = (bytes - last[i]) as f64 * 8.0 / dt / 1e6;
            last[i] = bytes;
            b.set_message(format!(
                "pkts {} recs {} {} {:.1} Mb/s LOST {} kdrop {} rej {}",
                c.packets.load(Relaxed),
                c.records.load(Relaxed),
                HumanBytes(bytes),
                rate,
                c.lost_words.load(Relaxed),
                c.kernel_drops.load(Relaxed),
                c.rejects.load(Relaxed),
            ));
        }
        let msg: Vec<String> = shared
            .boards()
            .iter()
            .map(|b| {
                format!(
                    "board {}: seq {}..{} gaps {}",
                    b.board, b.seq.first_seq, b.seq.last_seq, b.seq.lost
                )
            })
            .collect();
        boards.set_message(if msg.is_empty() {
            "no packets yet".into()
        } else {
            msg.join("; ")
        });
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    for b in &bars {
        b.finish();
    }
    boards.finish();
}
