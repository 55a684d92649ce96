//! Metric families that encode their series in sorted label order.
//!
//! prometheus-client's `Family` keeps series in a `HashMap`, so every scrape listed them in a
//! different order; a `BTreeMap` keyed by the label set gives the same order on every scrape.
//! Label values still go through prometheus-client's encoder, which escapes `\`, `"` and newlines.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;
use std::collections::BTreeMap;

/// Label pairs in the order they are written.
pub(crate) type Labels = Vec<(String, String)>;

/// Label pairs as a series key.
pub(crate) fn l(pairs: &[(&str, String)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Gauge series keyed by label set; values add up when a label set repeats.
#[derive(Debug, Default)]
pub(crate) struct SortedGauges(BTreeMap<Labels, u64>);

impl SortedGauges {
    /// Adds `v` to the series `labels` (saturating: hostile inputs must not panic the exporter).
    pub(crate) fn add(&mut self, labels: Labels, v: u64) {
        let slot = self.0.entry(labels).or_default();
        *slot = slot.saturating_add(v);
    }

    /// Sets the series `labels` to `v`.
    pub(crate) fn set(&mut self, labels: Labels, v: u64) {
        self.0.insert(labels, v);
    }

    /// One series without labels, set to `v`.
    pub(crate) fn single(v: u64) -> SortedGauges {
        let mut g = SortedGauges::default();
        g.set(Vec::new(), v);
        g
    }
}

impl EncodeMetric for SortedGauges {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, v) in &self.0 {
            encoder.encode_family(labels)?.encode_gauge(v)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Float gauge series (ratios 0–1, degrees, watts, hertz) keyed by label set; values add up
/// when a label set repeats.
#[derive(Debug, Default)]
pub(crate) struct SortedRatios(BTreeMap<Labels, f64>);

impl SortedRatios {
    /// Adds `v` to the series `labels`.
    pub(crate) fn add(&mut self, labels: Labels, v: f64) {
        *self.0.entry(labels).or_default() += v;
    }
}

impl EncodeMetric for SortedRatios {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, v) in &self.0 {
            encoder.encode_family(labels)?.encode_gauge(v)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Counter series keyed by label set (the exporter's own counts since it started).
#[derive(Debug, Default)]
pub(crate) struct SortedCounters(BTreeMap<Labels, u64>);

impl SortedCounters {
    /// Sets the series `labels` to `v`.
    pub(crate) fn set(&mut self, labels: Labels, v: u64) {
        self.0.insert(labels, v);
    }
}

impl EncodeMetric for SortedCounters {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, v) in &self.0 {
            encoder
                .encode_family(labels)?
                .encode_counter::<Labels, _, u64>(v, None::<&Exemplar<Labels, u64>>)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Counter
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One gauge without labels holding a float (a duration in seconds).
#[derive(Debug)]
pub(crate) struct FloatGauge(pub f64);

impl EncodeMetric for FloatGauge {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.0)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}
