//! The exporter's sampling side: one rendering of `/metrics` (in each exposition format) and
//! `/snapshot.json` per sample,
//! shared by every scrape. Each body is an [`Bytes`] (reference-counted): a scrape, however slow
//! its reader, holds a reference to the one rendering, never a copy of it.

use super::classic_text::classic_text;
use super::metrics::{render_metrics, ExporterStats, MetricsOptions};
use super::negotiate::Exposition;
use crate::findings::window::Since;
use crate::findings::{Finding, Thresholds};
use crate::knowledge::Base;
use crate::ledger::{Filter, Ledger};
use crate::observe::{KernelLog, Observation, Observer};
use crate::outputs::json;
use crate::sampler::{SampleError, Sampler};
use axum::body::Bytes;
use std::time::Instant;

/// The latest rendering of every document.
#[derive(Debug, Clone, Default)]
pub(crate) struct Latest {
    /// `/metrics` in OpenMetrics text.
    pub openmetrics: Bytes,
    /// `/metrics` in the classic text format 0.0.4, derived from the OpenMetrics rendering.
    pub classic: Bytes,
    /// `/snapshot.json`.
    pub snapshot: Bytes,
}

impl Latest {
    /// `/metrics` in `exposition` (a reference count, not a copy).
    pub fn metrics(&self, exposition: Exposition) -> Bytes {
        match exposition {
            Exposition::OpenMetrics => self.openmetrics.clone(),
            Exposition::Classic => self.classic.clone(),
        }
    }

    /// Sets both `/metrics` renderings from the OpenMetrics text.
    fn set_metrics(&mut self, openmetrics: String) {
        self.classic = Bytes::from(classic_text(&openmetrics));
        self.openmetrics = Bytes::from(openmetrics);
    }
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
    /// Kernel-log findings before it are history.
    pub since: Since,
}

/// Samples and renders, keeping the exporter's own figures across samples.
pub(crate) struct Renderer {
    sampler: Sampler,
    opts: RenderOptions,
    /// The observation step, with the machine's known-issue facts from the first sample only
    /// (package versions do not change under a running exporter) and the kernel log re-read at
    /// most every few seconds.
    observer: Observer,
    stats: ExporterStats,
    /// The last good sample's ledger and findings, to re-render the metrics after a failure.
    last: Option<(Ledger, Vec<Finding>)>,
    latest: Latest,
}

impl Renderer {
    /// Takes and renders the first sample; its failure is the exporter's.
    pub fn first(sampler: Sampler, opts: RenderOptions) -> Result<Renderer, SampleError> {
        let mut observer = Observer::new(opts.thresholds.clone())
            .kernel_log(KernelLog::Cached)
            .window(opts.since, crate::clock::system());
        if let Ok(base) = Base::installed(None) {
            observer = observer.known_issues(base);
        }
        let mut r = Renderer {
            sampler,
            opts,
            observer,
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
                self.latest.set_metrics(text);
            }
        }
        self.latest()
    }

    fn sample(&mut self) -> Result<(), SampleError> {
        let started = Instant::now();
        let snap = self.sampler.sample()?;
        self.stats.count_scan(&snap.stats);
        let Observation {
            ledger: whole,
            findings,
        } = self.observer.observe(self.sampler.root(), snap);
        // Findings on the whole machine first: a filter hides verdicts, never changes one.
        let findings = self.opts.filter.findings(&findings);
        let mut ledger = self.opts.filter.ledger(whole);
        if !self.opts.show_cmdline {
            crate::redact::ledger(&mut ledger);
        }
        let snapshot = Bytes::from(json::render(&ledger, &findings));
        self.stats.scan_seconds = started.elapsed().as_secs_f64();
        let metrics = render_metrics(&ledger, &findings, &self.opts.metrics, &self.stats);
        self.latest.snapshot = snapshot;
        self.latest.set_metrics(metrics);
        self.last = Some((ledger, findings));
        Ok(())
    }
}
