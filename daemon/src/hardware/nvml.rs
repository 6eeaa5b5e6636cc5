//! NVIDIA GPUs through NVML, loaded at run time once. No driver, no library or no GPU is the
//! normal case on many machines: no GPU readings and a status line saying why.

use std::collections::HashMap;
use std::ffi::OsStr;

use mnemo_protocol::system::{GpuInfo, GpuReading};
use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::Nvml;

use super::probe::GpuProbe;

pub struct NvmlProbe {
    nvml: Option<Nvml>,
    status: String,
}

impl NvmlProbe {
    /// Tries `libnvidia-ml.so`, then `libnvidia-ml.so.1` (what the driver package installs).
    pub fn load() -> Self {
        let first = match Nvml::init() {
            Ok(nvml) => return Self::found(nvml),
            Err(e) => e,
        };
        match Nvml::builder()
            .lib_path(OsStr::new("libnvidia-ml.so.1"))
            .init()
        {
            Ok(nvml) => Self::found(nvml),
            Err(_) => Self {
                nvml: None,
                status: format!("no NVML: {first} (no NVIDIA driver; GPU metrics off)"),
            },
        }
    }

    fn found(nvml: Nvml) -> Self {
        let count = nvml.device_count().unwrap_or(0);
        let status = if count == 0 {
            "NVML loaded, but no NVIDIA GPU detected".into()
        } else {
            format!("{count} NVIDIA GPU(s) via NVML")
        };
        Self {
            nvml: Some(nvml),
            status,
        }
    }
}

/// A reading the device does not support is None, not 0.
fn opt<T>(r: Result<T, nvml_wrapper::error::NvmlError>) -> Option<T> {
    r.ok()
}

impl GpuProbe for NvmlProbe {
    fn status(&self) -> String {
        self.status.clone()
    }

    fn info(&self) -> (Vec<GpuInfo>, Option<String>, Option<String>) {
        let Some(nvml) = &self.nvml else {
            return (Vec::new(), None, None);
        };
        let count = nvml.device_count().unwrap_or(0);
        let gpus = (0..count)
            .filter_map(|i| {
                let d = nvml.device_by_index(i).ok()?;
                Some(GpuInfo {
                    index: i,
                    name: d.name().unwrap_or_else(|_| format!("GPU {i}")),
                    uuid: opt(d.uuid()),
                    vram_total_bytes: opt(d.memory_info()).map(|m| m.total),
                })
            })
            .collect();
        let cuda = opt(nvml.sys_cuda_driver_version())
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
        (gpus, opt(nvml.sys_driver_version()), cuda)
    }

    fn sample(&self) -> Vec<GpuReading> {
        let Some(nvml) = &self.nvml else {
            return Vec::new();
        };
        (0..nvml.device_count().unwrap_or(0))
            .filter_map(|i| {
                let d = nvml.device_by_index(i).ok()?;
                let memory = opt(d.memory_info());
                let util = opt(d.utilization_rates());
                Some(GpuReading {
                    index: i,
                    name: d.name().unwrap_or_else(|_| format!("GPU {i}")),
                    memory_used_bytes: memory.as_ref().map(|m| m.used),
                    memory_total_bytes: memory.as_ref().map(|m| m.total),
                    utilization_pct: util.as_ref().map(|u| u.gpu as f32),
                    memory_utilization_pct: util.as_ref().map(|u| u.memory as f32),
                    temperature_c: opt(d.temperature(TemperatureSensor::Gpu)).map(|t| t as f32),
                    power_watts: opt(d.power_usage()).map(|mw| mw as f32 / 1000.0),
                })
            })
            .collect()
    }

    fn process_memory(&self) -> HashMap<u32, u64> {
        let Some(nvml) = &self.nvml else {
            return HashMap::new();
        };
        let mut out = HashMap::new();
        for i in 0..nvml.device_count().unwrap_or(0) {
            let Ok(d) = nvml.device_by_index(i) else {
                continue;
            };
            for p in d
                .running_compute_processes()
                .unwrap_or_default()
                .into_iter()
                .chain(d.running_graphics_processes().unwrap_or_default())
            {
                if let UsedGpuMemory::Used(bytes) = p.used_gpu_memory {
                    *out.entry(p.pid).or_insert(0) += bytes;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_driver_is_a_status_not_an_error() {
        let probe = NvmlProbe::load();
        // On a machine with a driver this still must not fail; without one it says why.
        if probe.nvml.is_none() {
            assert!(probe.status().starts_with("no NVML"), "{}", probe.status());
            assert!(
                probe.sample().is_empty()
                    && probe.info().0.is_empty()
                    && probe.process_memory().is_empty()
            );
        }
    }
}
