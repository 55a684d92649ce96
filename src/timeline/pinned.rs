//! `pinned_rounding`: pinned host memory a caching allocator rounded up to powers of two, seen in
//! a traced recording's calls. PyTorch's caching host allocator rounds every pinned request up to
//! the next power of two and caches freed blocks, so a process that pins rows of odd sizes holds
//! up to twice what its tensors use (51.12 GB of rows became 74.49 GB pinned on PyTorch 2.13's
//! XPU backend, with GPUActive tracking it and Mlocked flat); `pinned_max_round_threshold_mb` and
//! `pinned_max_cached_size_mb` turn both off above 1 MiB.
//!
//! The calls show the blocks, not the requests behind them, so the rule is the blocks' shape: a
//! process whose large (≥ [`crate::recording::ROUNDING_FLOOR`]) pinned host allocations are at least
//! [`MIN_BYTES`] in all, [`MIN_CALLS`] or more of them, and [`POW2_SHARE_PCT`] % of whose bytes
//! sit in blocks of exactly a power of two. Buffers pinned at their own sizes (a DataLoader's
//! batches, `cudaHostRegister` of a model's weights) are almost never powers of two and never
//! fire it.

use super::patterns::TimelineFinding;
use crate::findings::{Finding, Kind, Severity};
use crate::recording::{CallRow, CallTable};
use crate::units::human_bytes;
use gpuledger_trace_wire::Api;

/// Least bytes of large pinned allocations for the finding.
pub const MIN_BYTES: u64 = 1 << 30;
/// Least number of large pinned allocations.
pub const MIN_CALLS: u64 = 2;
/// Least share (percent) of those bytes in power-of-two blocks.
pub const POW2_SHARE_PCT: u64 = 90;

/// The allocator setting that pins exact sizes (PyTorch's `PYTORCH_ALLOC_CONF`).
pub const FIX: &str =
    "PYTORCH_ALLOC_CONF=pinned_max_round_threshold_mb:1,pinned_max_cached_size_mb:1";

/// One finding per process whose pinned host blocks have the rounded shape, timed from
/// `started_ms` (the recording's start; call times are wall-clock milliseconds).
pub fn pinned_rounding(calls: &CallTable, started_ms: u64) -> Vec<TimelineFinding> {
    calls
        .rows
        .iter()
        .filter(|r| r.api == Api::HostPinned && rounded(r))
        .map(|r| finding(r, started_ms))
        .collect()
}

fn rounded(r: &CallRow) -> bool {
    let ((calls, bytes), (_, pow2)) = (r.large_allocs, r.pow2_allocs);
    calls >= MIN_CALLS
        && bytes >= MIN_BYTES
        && pow2.saturating_mul(100) >= bytes.saturating_mul(POW2_SHARE_PCT)
}

fn finding(r: &CallRow, started_ms: u64) -> TimelineFinding {
    let (n, pow2) = r.pow2_allocs;
    let message = format!(
        "pid {}'s {n} large pinned host allocations total {}, {} of it in blocks of exactly a \
         power of two (largest {}, {} live at the peak): a caching allocator that rounds \
         requests up (PyTorch's pinned host allocator) pins up to twice what the tensors use; \
         set {FIX} to pin exact sizes (experiment control exact-pinned); see --explain \
         pinned_rounding",
        r.pid,
        human_bytes(r.large_allocs.1),
        human_bytes(pow2),
        human_bytes(r.largest),
        human_bytes(r.peak_live),
    );
    let t_ms = r
        .live
        .iter()
        .find(|(_, live)| *live == r.peak_live)
        .map_or(0, |(t, _)| t.saturating_sub(started_ms));
    let mut f = Finding::new(Kind::PinnedRounding, Severity::Warning, message);
    f.pid = Some(r.pid);
    f.bytes = pow2;
    TimelineFinding {
        finding: f,
        t_s: t_ms as f64 / 1000.0,
        worst_severity: None,
        held: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::trace_read::pinned_row;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn table(rows: Vec<CallRow>) -> CallTable {
        CallTable {
            rows,
            ..CallTable::default()
        }
    }

    /// Rows of odd sizes as PyTorch's caching host allocator pins them: each request rounded up
    /// to the next power of two (a 1.6 GiB row takes 2 GiB, a 3.1 GiB row 4 GiB).
    #[test]
    fn rounded_blocks_make_the_finding_with_the_allocator_setting() {
        let rows_gib = [1.6, 1.6, 3.1, 3.1, 0.7];
        let blocks: Vec<u64> = rows_gib
            .iter()
            .map(|g| ((g * GIB as f64) as u64).next_power_of_two())
            .collect();
        assert_eq!(blocks, [2 * GIB, 2 * GIB, 4 * GIB, 4 * GIB, GIB]);
        let found = pinned_rounding(&table(vec![pinned_row(7, &blocks, 0)]), 0);
        assert_eq!(found.len(), 1);
        let f = &found[0].finding;
        assert_eq!(
            (f.kind, f.severity, f.pid),
            (Kind::PinnedRounding, Severity::Warning, Some(7))
        );
        assert_eq!(f.bytes, 13 * GIB);
        assert!(f.message.contains(FIX), "{}", f.message);
        assert!(
            f.message
                .contains("5 large pinned host allocations total 13.0 GiB"),
            "{}",
            f.message
        );
    }

    /// A DataLoader's pinned batches: 3×224×224 fp32 images × 64 per batch, 8 batches in flight:
    /// 36.75 MiB each, never a power of two. Nor is a registered model (another API kind).
    #[test]
    fn ordinary_pinned_buffers_do_not_make_it() {
        let batch = 64 * 3 * 224 * 224 * 4;
        assert!(!u64::is_power_of_two(batch));
        let loader = pinned_row(1, &vec![batch; 64], 0);
        assert!(loader.large_allocs.1 > MIN_BYTES);
        let mut registered = pinned_row(2, &[2 * GIB, 2 * GIB], 0);
        registered.api = Api::Registered;
        // Mostly exact sizes with one power of two among them.
        let mixed = pinned_row(3, &[GIB, 700 * MIB, 900 * MIB, 1000 * MIB], 0);
        // Powers of two, but small in all.
        let small = pinned_row(4, &[64 * MIB, 128 * MIB, 256 * MIB], 0);
        // One block only.
        let one = pinned_row(5, &[4 * GIB], 0);
        let t = table(vec![loader, registered, mixed, small, one]);
        assert!(
            pinned_rounding(&t, 0).is_empty(),
            "{:?}",
            pinned_rounding(&t, 0)
        );
    }

    #[test]
    fn small_powers_of_two_below_the_floor_are_not_counted() {
        let row = pinned_row(1, &[4096, 8192, 2 * MIB, 3 * MIB], 2);
        assert_eq!(row.large_allocs, (2, 5 * MIB));
        assert_eq!(row.pow2_allocs, (1, 2 * MIB));
    }
}
