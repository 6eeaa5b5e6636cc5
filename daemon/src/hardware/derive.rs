//! Pure derivations from readings: the profile's constraints and the adaptive budget.

use mnemo_protocol::system::{Budget, Capabilities, Constraints, GpuInfo};

const GB: f64 = 1024.0 * 1024.0 * 1024.0;

/// What the machine can run, from its memory and GPUs.
pub fn constraints(
    ram_total_bytes: u64,
    cpu_threads: usize,
    gpus: &[GpuInfo],
    caps: &Capabilities,
) -> Constraints {
    let ram_gb = ram_total_bytes as f64 / GB;
    let best_vram_gb = gpus
        .iter()
        .filter_map(|g| g.vram_total_bytes)
        .max()
        .map(|b| b as f64 / GB);
    // Leave room for the KV cache and the rest of the system.
    let (largest, where_) = match (best_vram_gb, caps.metal) {
        (_, true) => (
            ram_gb * 0.65,
            format!("{ram_gb:.0} GB unified memory (Metal)"),
        ),
        (Some(vram), false) if vram >= 2.0 => {
            (vram * 0.85, format!("{vram:.0} GB VRAM on the largest GPU"))
        }
        _ => (
            ram_gb * 0.5,
            format!("{ram_gb:.0} GB RAM, CPU inference (no usable GPU)"),
        ),
    };
    let context = match largest {
        x if x < 4.0 => 2048,
        x if x < 8.0 => 4096,
        x if x < 16.0 => 8192,
        x if x < 40.0 => 16384,
        _ => 32768,
    };
    let embeddings = ram_gb >= 2.0 && cpu_threads >= 2;
    Constraints {
        largest_model_gb: (largest * 10.0).round() as f32 / 10.0,
        recommended_context_tokens: context,
        local_embeddings_sensible: embeddings,
        reason: format!(
            "{where_}: models up to {largest:.1} GB fit, so {context} tokens of context; local embeddings {}",
            if embeddings { "are cheap here (MiniLM needs ~100 MB and one core)" } else { "would strain this machine" }
        ),
    }
}

/// The adaptive context budget: the profile's recommendation scaled by live RAM pressure
/// (×1 below 70 %, ×0.75 to 90 %, ×0.5 above) and split into core / session / retrieved.
pub fn budget(recommended_tokens: u32, ram_pct: Option<f32>) -> Budget {
    let (multiplier, pressure) = match ram_pct {
        None => (1.0, "RAM use unknown yet, so no reduction".to_string()),
        Some(p) if p < 70.0 => (1.0, format!("RAM at {p:.0} % (below 70 %), full budget")),
        Some(p) if p <= 90.0 => (
            0.75,
            format!("RAM at {p:.0} % (70–90 %), budget cut to three quarters"),
        ),
        Some(p) => (0.5, format!("RAM at {p:.0} % (above 90 %), budget halved")),
    };
    let total = (recommended_tokens as f32 * multiplier) as u32;
    let core = total * 15 / 100;
    let session = total * 35 / 100;
    Budget {
        total_tokens: total,
        core_tokens: core,
        session_tokens: session,
        retrieved_tokens: total - core - session,
        base_tokens: recommended_tokens,
        pressure_multiplier: multiplier,
        ram_pct,
        reason: format!("{recommended_tokens} recommended tokens for this machine; {pressure}; split 15 % core, 35 % session, 50 % retrieved"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(index: u32, vram_gb: Option<u64>) -> GpuInfo {
        GpuInfo {
            index,
            name: format!("GPU {index}"),
            uuid: None,
            vram_total_bytes: vram_gb.map(|g| g << 30),
        }
    }

    #[test]
    fn two_gpus_the_larger_decides() {
        let caps = Capabilities {
            has_gpu: true,
            cuda: true,
            ..Default::default()
        };
        let c = constraints(64 << 30, 16, &[gpu(0, Some(8)), gpu(1, Some(24))], &caps);
        assert_eq!(c.largest_model_gb, 20.4);
        assert_eq!(c.recommended_context_tokens, 16384);
        assert!(c.reason.contains("24 GB VRAM"), "{}", c.reason);
    }

    #[test]
    fn no_gpu_uses_half_the_ram() {
        let c = constraints(24 << 30, 2, &[], &Capabilities::default());
        assert_eq!(c.largest_model_gb, 12.0);
        assert_eq!(c.recommended_context_tokens, 8192);
        assert!(c.local_embeddings_sensible);
        assert!(c.reason.contains("CPU inference"));
    }

    #[test]
    fn a_gpu_without_reported_vram_falls_back_to_ram() {
        let c = constraints(
            8 << 30,
            4,
            &[gpu(0, None)],
            &Capabilities {
                has_gpu: true,
                ..Default::default()
            },
        );
        assert_eq!(c.largest_model_gb, 4.0);
    }

    #[test]
    fn budget_follows_ram_pressure() {
        let table = [
            (None, 1.0, 8192),
            (Some(50.0), 1.0, 8192),
            (Some(75.0), 0.75, 6144),
            (Some(95.0), 0.5, 4096),
        ];
        for (ram, mult, total) in table {
            let b = budget(8192, ram);
            assert_eq!(
                (b.pressure_multiplier, b.total_tokens),
                (mult, total),
                "{ram:?}"
            );
            assert_eq!(b.core_tokens + b.session_tokens + b.retrieved_tokens, total);
        }
        let b = budget(8192, Some(95.0));
        assert!(
            b.reason.contains("above 90 %") && b.reason.contains("halved"),
            "{}",
            b.reason
        );
    }
}
