//! The comparison as HTML tables: per rank (from `timeline::ranks`) and per run (from
//! `timeline::diff`), with the diff's verdict as the last row. Numbers come from the library;
//! this file only lays them out.

use super::page::{esc, Section};
use super::Run;
use crate::findings::Severity;
use crate::timeline::diff::{diff, Value};
use crate::timeline::ranks::{RankPair, RankSide};
use crate::timeline::Registrations;
use crate::units::human_bytes;
use std::collections::BTreeMap;
use std::fmt::Write;

const LETTERS: [&str; 2] = ["A", "B"];

fn registrations(r: Registrations) -> &'static str {
    match r {
        Registrations::None => "no peer registrations",
        Registrations::Pinned => "pinned",
        Registrations::NotPinned => "not pinned (bookkeeping)",
        Registrations::Unknown => "unknown",
    }
}

/// A side's findings, one line per (severity, kind) with a count, worst first.
fn findings(side: &RankSide) -> String {
    let mut counts: BTreeMap<(std::cmp::Reverse<Severity>, &str), usize> = BTreeMap::new();
    for (sev, kind) in &side.findings {
        *counts
            .entry((std::cmp::Reverse(*sev), kind.as_str()))
            .or_default() += 1;
    }
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .into_iter()
        .map(|((sev, kind), n)| {
            let times = if n > 1 {
                format!(" ×{n}")
            } else {
                String::new()
            };
            format!(
                "<span class=\"finding\"><span class=\"sev {0}\">{0}</span> {1}{times}</span>",
                sev.0.as_str(),
                esc(kind)
            )
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

/// One cell per run for a column of the per-rank table.
fn cells(out: &mut String, pair: &RankPair, n: usize, f: impl Fn(&RankSide) -> (bool, String)) {
    for side in pair.sides.iter().take(n) {
        match side {
            Some(s) => {
                let (num, text) = f(s);
                let class = if num { " class=\"num\"" } else { "" };
                let _ = write!(out, "<td{class}>{text}</td>");
            }
            None => out.push_str("<td>not in this run</td>"),
        }
    }
}

fn header(out: &mut String, n: usize) {
    let cols = [
        "peak device-local (home card)",
        "peak host-class on own card",
        "peak host-class on peer cards",
        "peer registrations",
        "findings",
    ];
    out.push_str("<table class=\"ranks\">\n<tr><th rowspan=\"2\">rank</th>");
    for c in cols {
        let _ = write!(out, "<th colspan=\"{n}\">{c}</th>");
    }
    out.push_str("</tr>\n<tr>");
    for _ in cols {
        for l in LETTERS.iter().take(n) {
            let _ = write!(out, "<th class=\"run-{}\">{l}</th>", l.to_lowercase());
        }
    }
    out.push_str("</tr>\n");
}

/// The per-rank table; `verdict` lines close it, each across the whole row.
fn rank_table(pairs: &[RankPair], n: usize, verdict: &[(&str, &str)]) -> String {
    let mut out = String::new();
    header(&mut out, n);
    for p in pairs {
        let _ = write!(out, "<tr><th>{}</th>", esc(&p.who.to_string()));
        cells(&mut out, p, n, |s| (true, human_bytes(s.device_local)));
        cells(&mut out, p, n, |s| (true, human_bytes(s.host_own)));
        cells(&mut out, p, n, |s| (true, human_bytes(s.host_peers)));
        cells(&mut out, p, n, |s| {
            (false, registrations(s.registrations).into())
        });
        cells(&mut out, p, n, |s| (false, findings(s)));
        out.push_str("</tr>\n");
    }
    for (class, line) in verdict {
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td colspan=\"{}\">{}</td></tr>",
            1 + 5 * n,
            esc(line)
        );
    }
    out.push_str("</table>\n");
    out
}

/// A cell: whether it is a number (right-aligned), and its escaped text as the diff shows it.
fn value(v: &Value) -> (bool, String) {
    (!matches!(v, Value::Text(_)), esc(&v.show()))
}

/// The run-level rows of the diff: host memory, duration, job end, what differs around the runs.
fn run_table(rows: &[crate::timeline::diff::Row]) -> String {
    let mut out = String::from(
        "<table class=\"runs\">\n<tr><th></th><th class=\"run-a\">A</th><th class=\"run-b\">B</th></tr>\n",
    );
    for r in rows {
        let _ = write!(out, "<tr><th>{}</th>", esc(&r.what));
        for v in [&r.a, &r.b] {
            let (num, text) = value(v);
            let class = if num { " class=\"num\"" } else { "" };
            let _ = write!(out, "<td{class}>{text}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// The comparison section: per-rank table with the verdict, then the run-level table.
pub fn section(runs: &[Run], pairs: &[RankPair]) -> Section {
    let mut body = String::new();
    for (run, letter) in runs.iter().zip(LETTERS) {
        let s = &run.summary;
        let _ = writeln!(
            body,
            "<p class=\"meta\"><b>{letter}</b> = {}: <code>{}</code>, {:.1} s, {}; job end: {}</p>",
            esc(run.name),
            esc(&crate::outputs::safe_text::command_line(&s.command)),
            s.duration_s,
            crate::units::count(s.samples as usize, "sample"),
            esc(&s.job_end.to_string())
        );
    }
    let d = match runs {
        [a, b] => Some(diff(&a.summary, &b.summary)),
        _ => None,
    };
    let verdict: Vec<(&str, &str)> = d
        .iter()
        .flat_map(|d| {
            d.warning
                .iter()
                .map(|w| ("warn", w.as_str()))
                .chain(d.verdict.iter().map(|v| ("verdict", v.as_str())))
        })
        .collect();
    body.push_str(&rank_table(pairs, runs.len().min(2), &verdict));
    if let Some(d) = &d {
        body.push_str(&run_table(&d.rows));
    }
    Section {
        id: "compare",
        title: if runs.len() == 2 {
            "A vs B by rank"
        } else {
            "By rank"
        }
        .into(),
        body,
    }
}
