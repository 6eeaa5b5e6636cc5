//! Averaging snapshots into fixed steps: used to keep 1-minute aggregates after 24 h and to
//! answer `system.history` at the step a client asks for.

use mnemo_protocol::system::{GpuReading, Snapshot};
use mnemo_protocol::time::{format_micros, parse_micros};

fn mean_f32(values: impl Iterator<Item = Option<f32>>) -> Option<f32> {
    let (sum, n) = values
        .flatten()
        .fold((0.0f64, 0u32), |(s, n), v| (s + v as f64, n + 1));
    (n > 0).then(|| (sum / n as f64) as f32)
}

fn mean_u64(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    let (sum, n) = values
        .flatten()
        .fold((0u128, 0u128), |(s, n), v| (s + v as u128, n + 1));
    (n > 0).then(|| (sum / n) as u64)
}

/// One snapshot standing for all of `group` (non-empty), stamped at `at`.
fn merge(group: &[&Snapshot], at: i64, step: u32) -> Snapshot {
    let f = |get: fn(&Snapshot) -> Option<f32>| mean_f32(group.iter().map(|s| get(s)));
    let u = |get: fn(&Snapshot) -> Option<u64>| mean_u64(group.iter().map(|s| get(s)));
    let last = group[group.len() - 1];
    let gpu_indexes: std::collections::BTreeSet<u32> = group
        .iter()
        .flat_map(|s| s.gpus.iter().map(|g| g.index))
        .collect();
    let gpus = gpu_indexes
        .into_iter()
        .map(|i| {
            let readings: Vec<&GpuReading> = group
                .iter()
                .flat_map(|s| s.gpus.iter().filter(|g| g.index == i))
                .collect();
            GpuReading {
                index: i,
                name: readings[0].name.clone(),
                memory_used_bytes: mean_u64(readings.iter().map(|g| g.memory_used_bytes)),
                memory_total_bytes: mean_u64(readings.iter().map(|g| g.memory_total_bytes)),
                utilization_pct: mean_f32(readings.iter().map(|g| g.utilization_pct)),
                memory_utilization_pct: mean_f32(readings.iter().map(|g| g.memory_utilization_pct)),
                temperature_c: mean_f32(readings.iter().map(|g| g.temperature_c)),
                power_watts: mean_f32(readings.iter().map(|g| g.power_watts)),
            }
        })
        .collect();
    Snapshot {
        at: format_micros(at),
        span_secs: step,
        cpu_pct: f(|s| s.cpu_pct),
        load_1: f(|s| s.load_1),
        load_5: f(|s| s.load_5),
        load_15: f(|s| s.load_15),
        ram_total_bytes: u(|s| s.ram_total_bytes),
        ram_used_bytes: u(|s| s.ram_used_bytes),
        ram_available_bytes: u(|s| s.ram_available_bytes),
        ram_pct: f(|s| s.ram_pct),
        swap_total_bytes: u(|s| s.swap_total_bytes),
        swap_used_bytes: u(|s| s.swap_used_bytes),
        disk_used_bytes: u(|s| s.disk_used_bytes),
        disk_free_bytes: u(|s| s.disk_free_bytes),
        gpus,
        daemon_cpu_pct: f(|s| s.daemon_cpu_pct),
        daemon_rss_bytes: u(|s| s.daemon_rss_bytes),
        sampler_cpu_us: u(|s| s.sampler_cpu_us),
        memory_count: last.memory_count,
        active_sessions: last.active_sessions,
        pending_work: u(|s| s.pending_work),
        inference: last.inference.clone(),
    }
}

/// Averages `points` (oldest first) into buckets of `step` seconds aligned to the epoch; each
/// bucket is stamped with its start. Empty buckets are left out.
pub fn downsample(points: &[Snapshot], step: u32) -> Vec<Snapshot> {
    let step_us = i64::from(step.max(1)) * 1_000_000;
    let mut out = Vec::new();
    let mut group: Vec<&Snapshot> = Vec::new();
    let mut bucket = None;
    for p in points {
        let Ok(at) = parse_micros(&p.at) else {
            continue;
        };
        let b = at.div_euclid(step_us) * step_us;
        if bucket.is_some_and(|cur| cur != b) && !group.is_empty() {
            out.push(merge(&group, bucket.unwrap_or(b), step));
            group.clear();
        }
        bucket = Some(b);
        group.push(p);
    }
    if let (Some(b), false) = (bucket, group.is_empty()) {
        out.push(merge(&group, b, step));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(secs: i64, cpu: f32, gpu_temp: Option<f32>) -> Snapshot {
        Snapshot {
            at: format_micros(1_700_000_000_000_000 + secs * 1_000_000),
            span_secs: 5,
            cpu_pct: Some(cpu),
            ram_used_bytes: Some(100 + secs as u64),
            gpus: vec![
                GpuReading {
                    index: 0,
                    name: "A".into(),
                    temperature_c: gpu_temp,
                    utilization_pct: Some(cpu),
                    ..Default::default()
                },
                GpuReading {
                    index: 1,
                    name: "B".into(),
                    temperature_c: None,
                    utilization_pct: Some(10.0),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn five_second_points_become_minutes() {
        // 1_700_000_000 s is 20 s into a minute: 0..40 s fill that minute, 40..100 s the next.
        let points: Vec<Snapshot> = (0..20).map(|i| snap(i * 5, i as f32, Some(50.0))).collect();
        let minutes = downsample(&points, 60);
        assert_eq!(minutes.len(), 2);
        assert_eq!(minutes[0].span_secs, 60);
        assert_eq!(minutes[0].cpu_pct, Some(3.5)); // points 0..=7
        assert_eq!(minutes[1].cpu_pct, Some(13.5)); // points 8..=19
        assert!(minutes[0].at.ends_with(":00.000Z"), "{}", minutes[0].at);
    }

    #[test]
    fn unsupported_metrics_stay_absent() {
        let points = vec![snap(0, 1.0, None), snap(5, 3.0, Some(60.0))];
        let one = downsample(&points, 60);
        assert_eq!(
            one[0].gpus[0].temperature_c,
            Some(60.0),
            "the mean of what was reported"
        );
        assert_eq!(
            one[0].gpus[1].temperature_c, None,
            "never reported: absent, not 0"
        );
        assert_eq!(one[0].gpus[1].utilization_pct, Some(10.0));
    }
}
