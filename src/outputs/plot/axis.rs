//! Axis ranges the chart library can always draw. plotters steps from the low end of a range to
//! the high end by its label spacing; on an infinite range (a value of 1.7e308 with 10 % headroom
//! overflows to inf) that loop never ends. Every range a chart is built on comes from here: only
//! finite values count, both ends are clamped to ±[`AXIS_LIMIT`], and the range is never empty.

use std::ops::Range;

/// Largest magnitude an axis end may have (far above any byte count in GiB, second or rate
/// value gpuledger stores; far below where headroom or label steps overflow).
pub const AXIS_LIMIT: f64 = 1e18;

/// A range from `floor` (or lower) that holds every finite value given, `headroom` times its
/// top on top (1.1 = 10 %), clamped to ±[`AXIS_LIMIT`]. It is at least `min_span` wide and at
/// least a thousandth of its largest end, so label steps never fall below the float spacing.
pub fn fit(
    values: impl Iterator<Item = f64>,
    floor: f64,
    headroom: f64,
    min_span: f64,
) -> Range<f64> {
    let clamp = |v: f64| v.clamp(-AXIS_LIMIT, AXIS_LIMIT);
    let (mut lo, mut hi) = (clamp(floor), clamp(floor));
    for v in values.filter(|v| v.is_finite()).map(clamp) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi > 0.0 {
        hi = clamp(hi * headroom);
    }
    let span = min_span.abs().max(1e-3 * lo.abs().max(hi.abs()));
    if hi - lo < span {
        if hi + span <= AXIS_LIMIT {
            hi = lo + span;
        } else {
            lo = hi - span;
        }
    }
    lo..hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn overflowing_and_infinite_values_give_a_finite_range() {
        let r = fit([1.7e308, 3.0].into_iter(), 0.0, 1.1, 1.0);
        assert_eq!(r, 0.0..AXIS_LIMIT);
        let r = fit([f64::INFINITY, -1e308, f64::NAN].into_iter(), 0.0, 1.1, 1.0);
        assert_eq!(r, -AXIS_LIMIT..0.0);
        assert_eq!(fit([2.0, 4.0].into_iter(), 0.0, 1.5, 1.0), 0.0..6.0);
        assert_eq!(fit(std::iter::empty(), 0.0, 1.1, 1.0), 0.0..1.0);
    }

    proptest! {
        #[test]
        fn every_range_is_finite_and_not_empty(
            vs in prop::collection::vec(prop::num::f64::ANY, 0..20),
            floor in -1e300f64..1e300,
        ) {
            let r = fit(vs.into_iter(), floor, 1.1, 1.0);
            prop_assert!(r.start.is_finite() && r.end.is_finite(), "{r:?}");
            prop_assert!(r.end - r.start >= 1e-3 * r.start.abs().max(r.end.abs()), "{r:?}");
            prop_assert!(r.end - r.start >= 1.0, "{r:?}");
            prop_assert!(r.start.abs() <= AXIS_LIMIT && r.end.abs() <= AXIS_LIMIT, "{r:?}");
        }
    }
}
