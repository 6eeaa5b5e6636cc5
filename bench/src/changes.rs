//! Questions about something that changed: for each, the turns that say how things are now and
//! an older turn that said how they were (or what was planned), so `bench locomo` can count how
//! often the stale turn is recalled above the current one. The questions are ours, written by
//! reading the three LoCoMo dev conversations (which state few changes: these are all of the
//! clear ones found); a set for other conversations goes beside them by `sample_id`.

use mnemo_client::Client;
use mnemo_protocol::memory::SearchMode;
use serde_json::Value;

use mnemo_client::locomo;

struct Change {
    sample: &'static str,
    question: &'static str,
    current: &'static [&'static str],
    stale: &'static [&'static str],
}

const CHANGES: &[Change] = &[
    Change {
        sample: "conv-41",
        question: "Where does John work now?",
        // A job at a tech company after his engineering firm folded; before, a promotion there.
        current: &["D28:5"],
        stale: &["D19:8"],
    },
    Change {
        sample: "conv-41",
        question: "Is John volunteering these days?",
        current: &["D31:1"],
        stale: &["D28:11"],
    },
    Change {
        sample: "conv-26",
        question: "How far along is Caroline with adopting a child?",
        // Ready and asking her mentor, months after first deciding to.
        current: &["D17:1"],
        stale: &["D8:9"],
    },
    Change {
        sample: "conv-30",
        question: "What does Jon do for a living now?",
        // His own dance studio, after losing his job at the bank.
        current: &["D11:9", "D5:4"],
        stale: &["D1:2"],
    },
];

/// Where the first of `turns` is among `found` (1-based).
fn rank(found: &[String], turns: &[&str]) -> Option<usize> {
    found
        .iter()
        .position(|d| turns.contains(&d.as_str()))
        .map(|i| i + 1)
}

fn shown(rank: Option<usize>) -> String {
    rank.map_or_else(|| "not in the top 20".into(), |r| format!("#{r}"))
}

/// Hybrid recall of each change question of the loaded conversations: where the current and
/// the stale turns rank, and how often the stale one comes first.
pub async fn report(client: &mut Client, samples: &[Value]) -> anyhow::Result<()> {
    let mut asked = 0;
    let mut stale_first = 0;
    let mut lines = Vec::new();
    for sample in samples {
        let id = sample["sample_id"].as_str().unwrap_or_default();
        for change in CHANGES.iter().filter(|c| c.sample == id) {
            let namespace = locomo::namespace(sample);
            let found =
                super::turns_found(client, &namespace, change.question, SearchMode::Hybrid).await?;
            let (now, before) = (rank(&found, change.current), rank(&found, change.stale));
            let first = match (now, before) {
                (Some(n), Some(b)) => b < n,
                (None, Some(_)) => true,
                _ => false,
            };
            asked += 1;
            stale_first += first as usize;
            lines.push(format!(
                "  {id} \"{}\": current {}, stale {}{}",
                change.question,
                shown(now),
                shown(before),
                if first { "  ← stale first" } else { "" }
            ));
        }
    }
    if asked == 0 {
        println!("changes: no change questions are written for these conversations");
        return Ok(());
    }
    println!("changes: a stale turn recalled above the current one in {stale_first} of {asked} questions (hybrid, k=20)");
    println!("{}", lines.join("\n"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_one_based_and_absent_turns_are_none() {
        let found: Vec<String> = ["D1:1", "D2:2", "D3:3"].map(String::from).to_vec();
        assert_eq!(rank(&found, &["D3:3", "D2:2"]), Some(2));
        assert_eq!(rank(&found, &["D9:9"]), None);
        assert_eq!(shown(None), "not in the top 20");
    }
}
