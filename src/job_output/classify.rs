//! Which lines of a job's output are runtime or driver errors.

use serde::{Deserialize, Serialize};

/// What an error line matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Level Zero: `ZE_RESULT_ERROR_*`.
    LevelZero,
    /// Unified Runtime (SYCL's backend layer): `UR_RESULT_ERROR_*`.
    UnifiedRuntime,
    /// A SYCL exception.
    Sycl,
    /// CUDA: `CUDA error`, `cudaError*`, `CUDA_ERROR_*`, `CUBLAS_STATUS_*`.
    Cuda,
    /// NCCL: `NCCL WARN`, `NCCL error`.
    Nccl,
    /// oneCCL: `CCL_ERROR`, or `oneCCL` with an error.
    OneCcl,
    /// HIP: `hipError*`, `HIP error`.
    Hip,
    /// "out of memory" from any layer.
    OutOfMemory,
    /// The last line of a Python traceback (`SomeError: message`).
    PythonException,
}

impl ErrorKind {
    /// Every kind.
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::LevelZero,
        ErrorKind::UnifiedRuntime,
        ErrorKind::Sycl,
        ErrorKind::Cuda,
        ErrorKind::Nccl,
        ErrorKind::OneCcl,
        ErrorKind::Hip,
        ErrorKind::OutOfMemory,
        ErrorKind::PythonException,
    ];

    /// How it is written in recordings and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::LevelZero => "level_zero",
            ErrorKind::UnifiedRuntime => "unified_runtime",
            ErrorKind::Sycl => "sycl",
            ErrorKind::Cuda => "cuda",
            ErrorKind::Nccl => "nccl",
            ErrorKind::OneCcl => "one_ccl",
            ErrorKind::Hip => "hip",
            ErrorKind::OutOfMemory => "out_of_memory",
            ErrorKind::PythonException => "python_exception",
        }
    }
}

/// The kind of a single line, without traceback context (see [`Traceback`] for that). The most
/// specific layer wins: a UR error that says "out of memory" is a UR error.
pub fn classify(line: &str) -> Option<ErrorKind> {
    let has = |s: &str| line.contains(s);
    // Every line of the job's output passes here: no allocation per line.
    let low = |s: &str| {
        line.as_bytes()
            .windows(s.len())
            .any(|w| w.eq_ignore_ascii_case(s.as_bytes()))
    };
    if has("ZE_RESULT_ERROR_") {
        Some(ErrorKind::LevelZero)
    } else if has("UR_RESULT_ERROR_") {
        Some(ErrorKind::UnifiedRuntime)
    } else if low("sycl") && low("exception") {
        Some(ErrorKind::Sycl)
    } else if has("CUDA error") || has("cudaError") || has("CUDA_ERROR_") || has("CUBLAS_STATUS_") {
        Some(ErrorKind::Cuda)
    } else if has("NCCL WARN") || low("nccl error") {
        Some(ErrorKind::Nccl)
    } else if has("CCL_ERROR") || (has("oneCCL") && low("error")) {
        Some(ErrorKind::OneCcl)
    } else if has("hipError") || has("HIP error") {
        Some(ErrorKind::Hip)
    } else if low("out of memory") {
        Some(ErrorKind::OutOfMemory)
    } else {
        None
    }
}

const TRACEBACK: &str = "Traceback (most recent call last):";

/// Follows one stream for Python tracebacks: after `Traceback (most recent call last):` come
/// indented frame lines, then the exception line. Launchers prefix every line of a rank (torchrun:
/// `[rank0]: `), so the prefix before `Traceback` is stripped from the lines that follow it.
#[derive(Debug, Clone, Default)]
pub struct Traceback {
    /// The prefix of the open traceback's lines, while one is open.
    open: Option<String>,
}

impl Traceback {
    /// Feeds the next line; returns true when it is the exception line that ends a traceback.
    pub fn feed(&mut self, line: &str) -> bool {
        if let Some(at) = line.find(TRACEBACK) {
            self.open = Some(line[..at].to_string());
            return false;
        }
        let Some(prefix) = self.open.as_deref() else {
            return false;
        };
        let Some(rest) = line.strip_prefix(prefix) else {
            // Another rank's line, interleaved: this traceback is still open.
            return false;
        };
        if rest.starts_with([' ', '\t']) || rest.is_empty() {
            return false;
        }
        self.open = None;
        is_exception_line(rest)
    }
}

/// `Name`, `dotted.Name` or `Name: message`, the way Python prints an exception.
fn is_exception_line(s: &str) -> bool {
    let name = s.split(':').next().unwrap_or_default();
    !name.is_empty()
        && !name.starts_with('.')
        && !name.ends_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}
