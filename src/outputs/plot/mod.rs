//! `plot`: one self-contained HTML page (inline SVG drawn with plotters, inline CSS, no scripts,
//! no network) comparing one or two recordings: a per-rank table with the diff's verdict, then
//! small multiples per rank × device with A and B overlaid (one grid and one scale per memory
//! class), host memory, and the findings. Lines come from the recordings' plot columns, merged to
//! the chart's width, so the page stays small however long the recordings are.
//!
//! The page is a list of [`Section`]s rendered in order; a new chart is one more entry in
//! [`sections`].

mod axis;
mod calls;
mod chart;
mod compare;
mod evidence;
mod findings;
mod nodes;
mod overlay;
mod page;
mod series;
mod style;

pub use page::Section;

use crate::ledger::MemClass;
use crate::recording::Recording;
use crate::timeline::ranks::pair_ranks;
use crate::timeline::{JobSet, RunSummary};

/// One recording on the page, with its summary computed once.
pub struct Run<'a> {
    /// Its name (the file it came from).
    pub name: &'a str,
    /// The recording (plot columns).
    pub rec: &'a Recording,
    /// Its summary (peaks, findings, job end).
    pub summary: RunSummary,
}

/// The page's sections in order.
pub fn sections(runs: &[Run]) -> Vec<Section> {
    let summaries: Vec<&RunSummary> = runs.iter().map(|r| &r.summary).collect();
    let pairs = pair_ranks(&summaries);
    let mut out = vec![
        compare::section(runs, &pairs),
        overlay::class_section(runs, &pairs, MemClass::Device),
        overlay::class_section(runs, &pairs, MemClass::Host),
        overlay::host_section(runs),
    ];
    out.extend(calls::section(runs));
    out.extend(evidence::section(runs));
    out.push(findings::section(runs));
    out
}

/// The whole page for one or two recordings (a third and later are not drawn). `sets` holds,
/// for each recording that stands for a multi-node job, that job's nodes (empty or `None`
/// otherwise): they are listed after the comparison.
pub fn render_html(recs: &[(String, Recording)], sets: &[Option<&JobSet>]) -> String {
    let runs: Vec<Run> = recs
        .iter()
        .take(2)
        .map(|(name, rec)| Run {
            name,
            rec,
            summary: RunSummary::of(rec),
        })
        .collect();
    let names: Vec<&str> = runs.iter().map(|r| r.name).collect();
    let mut all = sections(&runs);
    if let Some(n) = nodes::section(&names, sets) {
        all.insert(1, n);
    }
    page::render(&names, &all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_are_escaped_and_sections_keep_their_order() {
        let name = "<script>alert(1)</script>\u{202E}evil".to_string();
        let html = render_html(
            &[
                (name.clone(), Recording::default()),
                (name, Recording::default()),
            ],
            &[],
        );
        assert!(
            !html.contains("<script") && !html.contains('\u{202E}'),
            "{html}"
        );
        let at = |id: &str| {
            html.find(&format!("<section id=\"{id}\">"))
                .unwrap_or(usize::MAX)
        };
        let order = ["compare", "device-local", "host-class", "host", "findings"].map(at);
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        assert!(
            html.contains("<table class=\"ranks\">") && html.contains("<table class=\"runs\">")
        );
    }
}
