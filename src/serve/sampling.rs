//! The exporter's sampling side: one rendering of `/metrics` and `/snapshot.json` per sample,
//! shared by every scrape. Each body is an [`Bytes`] (reference-counted): a scrape, however slow
//! its reader, holds a reference to the one rendering, never a copy of it.

use super::metrics::{render_metrics, ExporterStats, MetricsOptions};
use super::redact::redact_ledger;
use crate::findings::{analyze, Finding, Thresholds};
use crate::knowledge::KnownIssues;
use crate::ledger::{Filter, Ledger};
use crate::outputs::json;
use crate::sampler::{SampleError, Sampler};
use crate::sources::kernel_log::LogCache;
use axum::body::Bytes;
use std::time::Instant;

/// The latest rendering of both documents.
#[derive(Debug, Clone, Default)]
pub(crate) struct Latest {
    /// `/metrics`.
    pub metrics: Bytes,
    /// `/snapshot.json`.
    pub snapshot: Bytes,
}

/// What a sample is rendered with.
#[derive(Debug, Clone)]
pub(crate) struct RenderOptions {
    /// Finding thresholds.
    pub thresholds: Thresholds,
    /// Cardinality bounds.
    pub metrics: MetricsOptions,
    /// What /metrics and /snapshot.json show.
    pub filter: Filter,
    /// Whether command lines are shown as they are (`--show-cmdline`) or redacted.
    pub show_cmdline: bool,
}

/// Samples and renders, keeping the exporter's own figures across samples.
pub(crate) struct Renderer {
    sampler: Sampler,
    opts: RenderOptions,
    /// The machine's known-issue facts, from the first sample only: package versions do not
    /// change under a running exporter.
    known: Option<KnownIssues>,
    /// The kernel log, re-read at most every few seconds.
    kernel: LogCache,
    stats: ExporterStats,
    /// The last good sample's ledger and findings, to re-render the metrics after a failure.
    last: Option<(Ledger, Vec<Finding>)>,
    latest: Latest,
}

impl Renderer {
    /// Takes and renders the first sample; its failure is the exporter's.
    pub fn first(sampler: Sampler, opts: RenderOptions) -> Result<Renderer, SampleError> {
        let mut r = Renderer {
            sampler,
            opts,
            known: None,
            kernel: LogCache::default(),
            stats: ExporterStats::default(),
            last: None,
            latest: Latest::default(),
        };
        r.sample()?;
        Ok(r)
    }

    /// The latest rendering (cheap: two reference counts).
    pub fn latest(&self) -> Latest {
        self.latest.clone()
    }

    /// Takes the next sample. A failed sample is counted and the last good sample stays
    /// served, its metrics re-rendered so that the failure counter shows.
    pub fn tick(&mut self) -> Latest {
        if self.sample().is_err() {
            self.stats.failed_samples = self.stats.failed_samples.saturating_add(1);
            if let Some((ledger, findings)) = &self.last {
                let text = render_metrics(ledger, findings, &self.opts.metrics, &self.stats);
                self.latest.metrics = Bytes::from(text);
            }
        }
        self.latest()
    }

    fn sample(&mut self) -> Result<(), SampleError> {
        let started = Instant::now();
        let snap = self.sampler.sample()?;
        if self.known.is_none() {
            self.known = KnownIssues::of_machine(self.sampler.root(), &snap).ok();
        }
        self.stats.count_scan(&snap.stats);
        let mut whole = Ledger::from_snapshot(&snap);
        let mut findings = analyze(&whole, &self.opts.thresholds);
        let log = self.kernel.get(self.sampler.root(), Instant::now());
        crate::findings::kernel::add(log, &mut whole, &mut findings);
        if let Some(k) = &self.known {
            k.extend(&mut findings);
        }
        // Findings on the whole machine first: a filter hides verdicts, never changes one.
        let findings = self.opts.filter.findings(&findings);
        let mut ledger = self.opts.filter.ledger(&whole);
        if !self.opts.show_cmdline {
            redact_ledger(&mut ledger);
        }
        let snapshot = Bytes::from(json::render(&ledger, &findings));
        self.stats.scan_seconds = started.elapsed().as_secs_f64();
        let metrics = render_metrics(&ledger, &findings, &self.opts.metrics, &self.stats);
        self.latest = Latest {
            metrics: Bytes::from(metrics),
            snapshot,
        };
        self.last = Some((ledger, findings));
        Ok(())
    }
}
