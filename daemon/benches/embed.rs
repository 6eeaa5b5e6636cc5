//! Embedding speed of the MiniLM path: chat turns per second in batches, and one short query.
//! `cargo bench --workspace --bench embed` (needs the model from packaging/fetch-model.sh).
//! Prints figures; asserts nothing.

use std::time::Instant;

use mnemo_daemon::embed::{Embedder, MiniLmEmbedder};

fn turns() -> Vec<String> {
    let path = std::env::var("LOCOMO")
        .unwrap_or_else(|_| "../../shared/data/locomo/locomo-dev.json".into());
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let samples: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
    let mut out = Vec::new();
    for s in &samples {
        for i in 1.. {
            let Some(session) = s["conversation"]
                .get(format!("session_{i}"))
                .and_then(|v| v.as_array())
            else {
                break;
            };
            for t in session {
                out.push(format!(
                    "{}: {}",
                    t["speaker"].as_str().unwrap_or(""),
                    t["text"].as_str().unwrap_or("")
                ));
            }
        }
    }
    if out.is_empty() {
        out = (0..600).map(|i| format!("Turn {i}: I went hiking with my sister last weekend and we saw a fox near the lake.")).collect();
    }
    out
}

/// Tokens the model reads for `texts`, as it tokenises them (no padding, at most its 256
/// positions each).
fn token_count(dir: &std::path::Path, texts: &[&str]) -> usize {
    let Ok(mut tokenizer) = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")) else {
        return 0;
    };
    tokenizer.with_padding(None);
    texts
        .iter()
        .filter_map(|t| tokenizer.encode(*t, true).ok())
        .map(|e| e.len().min(256))
        .sum()
}

fn main() {
    let dir = mnemo_protocol::paths::test_model_dir();
    let model = match MiniLmEmbedder::load(&dir, 256, 32) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    // What `mnemo bench` prints first too, so figures from different machines and builds
    // are not compared as if alike.
    println!(
        "machine: {}",
        mnemo_daemon::this_machine(&dir).machine_line()
    );
    println!(
        "profile: {}; embedder: {} ({} dimensions) from {}",
        mnemo_daemon::BUILD_PROFILE,
        model.model_id(),
        model.dim(),
        dir.display()
    );
    let texts = turns();
    let texts: Vec<&str> = texts.iter().take(600).map(String::as_str).collect();
    model.embed(&texts[..32]).unwrap();
    // Turns/s compares across runs only over the same tokens: the work is by token. Five
    // passes, as one pass on a shared machine moved by ±5 % from run to run.
    let tokens = token_count(&dir, &texts);
    let mut secs: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            model.embed(&texts).unwrap();
            started.elapsed().as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    println!(
        "minilm batch: {} chat turns ({tokens} tokens), median of 5 passes {:.2} s = {:.1} turns/s, {:.0} tokens/s (fastest {:.1} turns/s, slowest {:.1})",
        texts.len(),
        secs[2],
        texts.len() as f64 / secs[2],
        tokens as f64 / secs[2],
        texts.len() as f64 / secs[0],
        texts.len() as f64 / secs[4],
    );
    let hot = one_query_ms(&model, || {});
    println!("minilm one query: p50 {:.1} ms, p95 {:.1} ms", hot.0, hot.1);
    // In mnemod a search's other steps run between two queries' embeddings and push the
    // model's 21 MB of weights out of the cache (at 100k memories the codes scan alone reads
    // 19 MB), so its embedding reads them from memory; this is the figure it sees.
    let other_work = vec![1u8; OTHER_WORK_BYTES];
    let cold = one_query_ms(&model, || {
        // A byte of each 64-byte line read brings the whole line in.
        let read: u64 = other_work.iter().step_by(64).map(|&b| u64::from(b)).sum();
        std::hint::black_box(read);
    });
    println!(
        "minilm one query after {} MB of other reads (the model's weights out of the cache, as in mnemod): p50 {:.1} ms, p95 {:.1} ms",
        OTHER_WORK_BYTES >> 20,
        cold.0,
        cold.1
    );
}

/// More than this machine's last-level cache (32 MB), and than most desktops'.
const OTHER_WORK_BYTES: usize = 64 << 20;

/// p50 and p95 of 30 short queries embedded one at a time, `between` run before each.
fn one_query_ms(model: &MiniLmEmbedder, between: impl Fn()) -> (f64, f64) {
    let mut times = Vec::new();
    for q in [
        "When did Caroline go to the support group?",
        "What does Melanie paint?",
        "Where did they go camping?",
    ]
    .iter()
    .cycle()
    .take(30)
    {
        between();
        let started = Instant::now();
        model.embed(&[q]).unwrap();
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    (times[15], times[28])
}
