//! `mnemo system ...`: what the machine is and what it is doing.

use std::path::Path;

use clap::Subcommand;
use mnemo_protocol::system::{
    Processes, ProcessesParams, Profile, SnapshotNow, SystemBudget, SystemHistory,
    SystemHistoryParams,
};
use mnemo_protocol::NoParams;

use crate::connect;
use crate::output::Output;

#[derive(Subcommand, Debug)]
pub enum SystemCommand {
    /// The detected hardware and what it allows.
    Profile,
    /// The latest snapshot: CPU, RAM, disk, GPUs, the daemon itself.
    Now,
    /// Snapshots over time.
    History {
        /// Start (RFC 3339 or YYYY-MM-DD) [default: an hour ago].
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        until: Option<String>,
        /// Seconds per point.
        #[arg(long)]
        step: Option<u32>,
        /// Only these fields, comma-separated (e.g. cpu_pct,ram_pct).
        #[arg(long, value_delimiter = ',')]
        fields: Option<Vec<String>>,
    },
    /// The process inventory by category.
    Processes {
        /// inference, ide, browser, system or user_app.
        #[arg(long)]
        category: Option<String>,
        /// cpu, memory or name.
        #[arg(long, default_value = "cpu")]
        sort: String,
        #[arg(long, default_value_t = 25)]
        limit: usize,
    },
    /// The adaptive context budget and why.
    Budget,
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn pct(v: Option<f32>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1} %"))
}

pub async fn run(cmd: SystemCommand, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut client = connect(socket).await?;
    match cmd {
        SystemCommand::Profile => {
            let p = client.call::<Profile>(&NoParams {}).await?;
            out.value(&p, || {
                let mut lines = vec![
                    format!(
                        "host      {} ({} {}, kernel {})",
                        p.host_name.as_deref().unwrap_or("?"),
                        p.os_name.as_deref().unwrap_or("?"),
                        p.os_version.as_deref().unwrap_or(""),
                        p.kernel_version.as_deref().unwrap_or("?")
                    ),
                    format!(
                        "cpu       {} ({} cores, {} threads, {})",
                        p.cpu_model.as_deref().unwrap_or("?"),
                        p.cpu_cores.map_or("?".into(), |c| c.to_string()),
                        p.cpu_threads,
                        p.arch
                    ),
                    format!(
                        "memory    {} RAM, {} swap",
                        gib(p.ram_total_bytes),
                        gib(p.swap_total_bytes)
                    ),
                    format!(
                        "disk      {} at {}",
                        p.disk_total_bytes.map_or("?".into(), gib),
                        p.disk_mount.as_deref().unwrap_or("?")
                    ),
                ];
                for g in &p.gpus {
                    lines.push(format!(
                        "gpu {}     {} ({})",
                        g.index,
                        g.name,
                        g.vram_total_bytes.map_or("VRAM unknown".into(), gib)
                    ));
                }
                lines.push(format!("gpus      {}", p.gpu_status));
                let c = &p.capabilities;
                lines.push(format!(
                    "caps      gpu {} cuda {} rocm {} metal {} neural engine {}",
                    c.has_gpu, c.cuda, c.rocm, c.metal, c.neural_engine
                ));
                lines.push(format!(
                    "fits      models up to {:.1} GB, {} tokens of context",
                    p.constraints.largest_model_gb, p.constraints.recommended_context_tokens
                ));
                lines.push(format!("why       {}", p.constraints.reason));
                lines.join("\n")
            });
        }
        SystemCommand::Now => {
            let r = client.call::<SnapshotNow>(&NoParams {}).await?;
            out.value(&r, || match &r.snapshot {
                None => "no snapshot yet (the first comes a few seconds after start)".into(),
                Some(s) => {
                    let mut lines = vec![
                        format!("at        {}", s.at),
                        format!(
                            "cpu       {}   load {} {} {}",
                            pct(s.cpu_pct),
                            s.load_1.map_or("-".into(), |l| format!("{l:.2}")),
                            s.load_5.map_or("-".into(), |l| format!("{l:.2}")),
                            s.load_15.map_or("-".into(), |l| format!("{l:.2}"))
                        ),
                        format!(
                            "ram       {} of {} ({}), swap {} of {}",
                            s.ram_used_bytes.map_or("-".into(), gib),
                            s.ram_total_bytes.map_or("-".into(), gib),
                            pct(s.ram_pct),
                            s.swap_used_bytes.map_or("-".into(), gib),
                            s.swap_total_bytes.map_or("-".into(), gib)
                        ),
                        format!(
                            "disk      {} used, {} free",
                            s.disk_used_bytes.map_or("-".into(), gib),
                            s.disk_free_bytes.map_or("-".into(), gib)
                        ),
                    ];
                    if s.gpus.is_empty() {
                        lines.push(format!("gpu       none: {}", r.gpu_status));
                    }
                    for g in &s.gpus {
                        lines.push(format!(
                            "gpu {}     {}: util {} mem {}/{} temp {} power {}",
                            g.index,
                            g.name,
                            pct(g.utilization_pct),
                            g.memory_used_bytes.map_or("-".into(), gib),
                            g.memory_total_bytes.map_or("-".into(), gib),
                            g.temperature_c.map_or("-".into(), |t| format!("{t:.0} °C")),
                            g.power_watts.map_or("-".into(), |w| format!("{w:.0} W"))
                        ));
                    }
                    lines.push(format!(
                        "mnemod    cpu {}, rss {}, {} memories, {} pending",
                        pct(s.daemon_cpu_pct),
                        s.daemon_rss_bytes.map_or("-".into(), gib),
                        s.memory_count.map_or("-".into(), |c| c.to_string()),
                        s.pending_work.unwrap_or(0)
                    ));
                    for i in &s.inference {
                        lines.push(format!(
                            "inference {} at {} ({}): {}",
                            i.kind,
                            i.url,
                            i.detected_by.join("+"),
                            if i.models.is_empty() {
                                "-".into()
                            } else {
                                i.models.join(", ")
                            }
                        ));
                    }
                    lines.join("\n")
                }
            });
        }
        SystemCommand::History {
            since,
            until,
            step,
            fields,
        } => {
            let r = client
                .call::<SystemHistory>(&SystemHistoryParams {
                    since,
                    until,
                    step,
                    fields,
                })
                .await?;
            out.value(&r, || {
                let mut lines = vec![format!("{} points, {} s apart", r.points.len(), r.step)];
                for p in &r.points {
                    let cols: Vec<String> = p
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, v)| *k != "at" && (v.is_number() || v.is_string()))
                        .take(6)
                        .map(|(k, v)| {
                            format!(
                                "{k}={}",
                                v.as_f64().map_or(v.to_string(), |f| format!("{f:.1}"))
                            )
                        })
                        .collect();
                    lines.push(format!(
                        "{}  {}",
                        p["at"].as_str().unwrap_or("?"),
                        cols.join("  ")
                    ));
                }
                lines.join("\n")
            });
        }
        SystemCommand::Processes {
            category,
            sort,
            limit,
        } => {
            let r = client
                .call::<Processes>(&ProcessesParams {
                    category,
                    sort: Some(sort),
                    limit: Some(limit),
                })
                .await?;
            out.value(&r, || {
                let mut lines = vec![format!("{:>7}  {:<10} {:>6} {:>10}  {:<20} {}", "PID", "CATEGORY", "CPU%", "RSS", "NAME", "COMMAND")];
                for p in &r.processes {
                    let cmd: String = p.cmdline.chars().take(50).collect();
                    lines.push(format!("{:>7}  {:<10} {:>6.1} {:>10}  {:<20} {}", p.pid, p.category, p.cpu_pct, gib(p.rss_bytes), p.name, cmd));
                }
                if r.taken_at.is_none() {
                    lines.push("(no inventory yet: it is taken a few seconds after start, then every minute)".into());
                }
                for i in &r.inference {
                    lines.push(format!("inference server: {} at {} ({}), models: {}", i.kind, i.url, i.detected_by.join("+"), i.models.join(", ")));
                }
                lines.join("\n")
            });
        }
        SystemCommand::Budget => {
            let b = client.call::<SystemBudget>(&NoParams {}).await?;
            out.value(&b, || {
                format!(
                    "{} tokens: core {}, session {}, retrieved {}\n{}",
                    b.total_tokens, b.core_tokens, b.session_tokens, b.retrieved_tokens, b.reason
                )
            });
        }
    }
    Ok(())
}
