//! A gauge family that encodes its series in sorted label order.
//!
//! prometheus-client's `Family` keeps series in a `HashMap`, so every scrape listed them in a
//! different order; a `BTreeMap` keyed by the label set gives the same order on every scrape.
//! Label values still go through prometheus-client's encoder, which escapes `\`, `"` and newlines.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use std::collections::BTreeMap;

/// Label pairs in the order they are written.
pub(crate) type Labels = Vec<(String, String)>;

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
