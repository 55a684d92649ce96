//! Device-memory failures in a job's output: the lines frameworks and runtimes print when an
//! allocation on the GPU fails, with the bytes asked and the device when the line says them.
//!
//! The shapes, from the frameworks' own messages:
//! - PyTorch (CUDA, XPU, HIP): `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate
//!   20.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.23 GiB is free.`
//! - XLA/JAX: `RESOURCE_EXHAUSTED: Out of memory while trying to allocate 68719476736 bytes.`
//! - CuPy: `OutOfMemoryError: Out of memory allocating 21,474,836,480 bytes (allocated so far: …)`
//! - CUDA runtime/driver: `CUDA error: out of memory`, `cudaErrorMemoryAllocation`,
//!   `CUDA_ERROR_OUT_OF_MEMORY`; HIP: `hipErrorOutOfMemory`.
//! - Level Zero / Unified Runtime: `ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY`,
//!   `UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY`, `UR_RESULT_ERROR_OUT_OF_RESOURCES` (what the
//!   4-GPU Battlemage jobs of compute-runtime#952/#957 died with).
//!
//! A host allocation failure ("Cannot allocate memory", `std::bad_alloc`, a CPU allocator's
//! message) is none of these and is not matched.

use serde::Serialize;

/// Which layer said the device ran out of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OomLayer {
    /// PyTorch's caching allocator (`torch.OutOfMemoryError`, "… out of memory. Tried to allocate").
    Torch,
    /// XLA (JAX, TensorFlow): `RESOURCE_EXHAUSTED`.
    Xla,
    /// CuPy's memory pool.
    Cupy,
    /// The CUDA runtime or driver.
    Cuda,
    /// HIP.
    Hip,
    /// Level Zero.
    LevelZero,
    /// Unified Runtime (SYCL's backend layer).
    UnifiedRuntime,
}

impl OomLayer {
    /// How the finding names it.
    pub fn as_str(self) -> &'static str {
        match self {
            OomLayer::Torch => "PyTorch",
            OomLayer::Xla => "XLA",
            OomLayer::Cupy => "CuPy",
            OomLayer::Cuda => "CUDA",
            OomLayer::Hip => "HIP",
            OomLayer::LevelZero => "Level Zero",
            OomLayer::UnifiedRuntime => "Unified Runtime",
        }
    }
}

/// A device-memory failure read from one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DeviceOom {
    /// Who said it.
    pub layer: OomLayer,
    /// The bytes the failed allocation asked for, when the line says.
    pub asked: Option<u64>,
    /// The device index the line names (`GPU 0`), when it does.
    pub gpu: Option<u32>,
    /// The bytes free on it, when the line says.
    pub free: Option<u64>,
}

/// The device-memory failure `line` reports, if it reports one.
pub fn device_oom(line: &str) -> Option<DeviceOom> {
    let layer = layer(line)?;
    let asked = after(line, "Tried to allocate ")
        .or_else(|| after(line, "trying to allocate "))
        .or_else(|| after(line, "Out of memory allocating "))
        .and_then(size);
    let gpu = after(line, "GPU ").and_then(|s| {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    });
    let free = after(line, " of which ").and_then(size);
    Some(DeviceOom {
        layer,
        asked,
        gpu,
        free,
    })
}

fn layer(line: &str) -> Option<OomLayer> {
    let has = |s: &str| line.contains(s);
    let low = line.to_ascii_lowercase();
    let oom = low.contains("out of memory");
    if has("ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY") {
        Some(OomLayer::LevelZero)
    } else if has("UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY") || has("UR_RESULT_ERROR_OUT_OF_RESOURCES")
    {
        Some(OomLayer::UnifiedRuntime)
    } else if oom && has("Tried to allocate") {
        Some(OomLayer::Torch)
    } else if has("RESOURCE_EXHAUSTED") && oom {
        Some(OomLayer::Xla)
    } else if low.contains("cupy") && oom {
        Some(OomLayer::Cupy)
    } else if has("cudaErrorMemoryAllocation")
        || has("CUDA_ERROR_OUT_OF_MEMORY")
        || (oom && has("CUDA"))
    {
        Some(OomLayer::Cuda)
    } else if has("hipErrorOutOfMemory") || (oom && has("HIP")) {
        Some(OomLayer::Hip)
    } else {
        None
    }
}

/// The text after the first `marker`.
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

/// A size at the start of `s`: `20.00 GiB`, `2.00 MiB`, `68719476736 bytes`,
/// `21,474,836,480 bytes`, `64.00GiB`.
fn size(s: &str) -> Option<u64> {
    let num: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .collect();
    let value: f64 = num.replace(',', "").parse().ok()?;
    let unit = s[num.len()..].trim_start();
    let scale: u64 = [
        ("KiB", 1u64 << 10),
        ("MiB", 1 << 20),
        ("GiB", 1 << 30),
        ("TiB", 1 << 40),
        ("KB", 1000),
        ("MB", 1_000_000),
        ("GB", 1_000_000_000),
        ("bytes", 1),
        ("B", 1),
    ]
    .into_iter()
    .find(|(u, _)| unit.starts_with(u))?
    .1;
    let bytes = value * scale as f64;
    (bytes.is_finite() && bytes < u64::MAX as f64).then_some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn torch_names_the_bytes_the_gpu_and_what_was_free() {
        let l = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 \
                 has a total capacity of 139.81 GiB of which 1.23 GiB is free. Including \
                 non-PyTorch memory, this process has 138.57 GiB memory in use.";
        let o = device_oom(l).unwrap();
        assert_eq!(o.layer, OomLayer::Torch);
        assert_eq!(o.asked, Some(20 << 30));
        assert_eq!(o.gpu, Some(0));
        assert_eq!(o.free, Some((1.23 * (1u64 << 30) as f64) as u64));
        let xpu = "XPU out of memory. Tried to allocate 2.00 MiB (GPU 1; 23.86 GiB total)";
        let o = device_oom(xpu).unwrap();
        assert_eq!((o.asked, o.gpu), (Some(2 << 20), Some(1)));
    }

    #[test]
    fn xla_cupy_and_the_runtimes() {
        let jax = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while \
                   trying to allocate 68719476736 bytes.";
        assert_eq!(
            device_oom(jax).map(|o| (o.layer, o.asked)),
            Some((OomLayer::Xla, Some(1 << 36)))
        );
        let cupy = "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 21,474,836,480 \
                    bytes (allocated so far: 0 bytes).";
        assert_eq!(
            device_oom(cupy).map(|o| (o.layer, o.asked)),
            Some((OomLayer::Cupy, Some(20 << 30)))
        );
        for (line, layer) in [
            ("RuntimeError: CUDA error: out of memory", OomLayer::Cuda),
            ("cudaErrorMemoryAllocation at foo.cu:12", OomLayer::Cuda),
            ("hipErrorOutOfMemory", OomLayer::Hip),
            ("ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", OomLayer::LevelZero),
            (
                "RuntimeError: level_zero backend failed with error: 40 \
                 (UR_RESULT_ERROR_OUT_OF_RESOURCES)",
                OomLayer::UnifiedRuntime,
            ),
        ] {
            assert_eq!(device_oom(line).map(|o| o.layer), Some(layer), "{line}");
        }
    }

    #[test]
    fn host_allocation_failures_and_other_errors_are_not_device_oom() {
        for line in [
            "MemoryError: Unable to allocate 8.00 GiB for an array",
            "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes",
            "terminate called after throwing an instance of 'std::bad_alloc'",
            "OSError: [Errno 12] Cannot allocate memory",
            "CUDA error: an illegal memory access was encountered",
            "Out of memory: Killed process 4242 (python3)",
        ] {
            assert_eq!(device_oom(line), None, "{line}");
        }
    }

    proptest! {
        #[test]
        fn any_line_parses_without_panic(line in ".{0,300}") {
            let _ = device_oom(&line);
        }

        #[test]
        fn the_asked_size_is_read_back(gib in 0u64..100_000, mib in 0u64..1024) {
            let line = format!("CUDA out of memory. Tried to allocate {gib}.{:02} GiB.", mib % 100);
            let asked = device_oom(&line).unwrap().asked.unwrap();
            let want = (gib as f64 + (mib % 100) as f64 / 100.0) * (1u64 << 30) as f64;
            prop_assert!((asked as f64 - want).abs() <= 1.0 + want * 1e-12);
        }
    }
}
