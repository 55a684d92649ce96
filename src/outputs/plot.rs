//! `plot`: one self-contained HTML page (inline SVG drawn with plotters, no scripts, no network)
//! with per-rank × device timelines (device-local vs host-class), the host counters, the step
//! markers that `stepwise_growth` found, and the findings; with two recordings the diff too.
//! Every line is drawn from the recording's plot columns (min and max per pixel column), so the
//! page stays a few MB however long the recording is.

use crate::ledger::MemClass;
use crate::recording::{ClassSeries, Recording};
use crate::timeline::diff::{diff, render_diff};
use crate::timeline::{RunSummary, TimelineKind};
use crate::units::human_bytes;
use plotters::prelude::*;
use std::collections::BTreeSet;
use std::fmt::Write;

const GIB: f64 = (1u64 << 30) as f64;
const DEVICE_COLOR: RGBColor = RGBColor(31, 119, 180);
const HOST_COLOR: RGBColor = RGBColor(214, 39, 40);
const STEP_COLOR: RGBColor = RGBColor(120, 120, 120);

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

struct Line<'a> {
    name: &'a str,
    color: RGBColor,
    values: Vec<(f64, f64)>,
}

fn chart(title: &str, lines: &[Line], markers: &[f64]) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 260)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let x_max = lines
            .iter()
            .flat_map(|l| l.values.iter().map(|v| v.0))
            .fold(1.0f64, f64::max);
        let y_max = lines
            .iter()
            .flat_map(|l| l.values.iter().map(|v| v.1))
            .fold(0.0f64, f64::max)
            .max(0.001)
            * 1.1;
        let Ok(mut c) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        else {
            return svg_error(title);
        };
        let _ = c
            .configure_mesh()
            .x_desc("seconds")
            .y_desc("GiB")
            .light_line_style(RGBColor(235, 235, 235))
            .draw();
        for &m in markers {
            let _ = c.draw_series(LineSeries::new(
                [(m, 0.0), (m, y_max)],
                STEP_COLOR.stroke_width(1),
            ));
        }
        for l in lines {
            let color = l.color;
            if let Ok(s) = c.draw_series(LineSeries::new(
                l.values.iter().copied(),
                color.stroke_width(2),
            )) {
                s.label(l.name).legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                });
            }
        }
        let _ = c
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw();
        let _ = root.present();
    }
    svg
}

fn svg_error(title: &str) -> String {
    format!("<p>could not draw {}</p>", esc(title))
}

/// Seconds since the start of each plot column.
fn column_times(rec: &Recording) -> Vec<f64> {
    rec.host
        .columns
        .iter()
        .map(|c| c.t_ms.saturating_sub(rec.host.first_ms) as f64 / 1000.0)
        .collect()
}

/// A column's low and high points, in that order: at most two points per pixel column.
fn series_of(times: &[f64], columns: impl Iterator<Item = (u64, u64)>) -> Vec<(f64, f64)> {
    times
        .iter()
        .zip(columns)
        .flat_map(|(&t, (lo, hi))| {
            let n = if lo == hi { 1 } else { 2 };
            [(t, lo as f64 / GIB), (t, hi as f64 / GIB)]
                .into_iter()
                .take(n)
        })
        .collect()
}

/// A class series' columns, or zeros where the process held nothing of that class.
fn columns_of<'a>(
    s: Option<&'a ClassSeries>,
    n: usize,
) -> Box<dyn Iterator<Item = (u64, u64)> + 'a> {
    match s {
        Some(s) => Box::new(s.columns.iter().copied()),
        None => Box::new(std::iter::repeat_n((0, 0), n)),
    }
}

/// Times of the columns in which a series grew by exactly a stepwise_growth step.
fn step_times(times: &[f64], s: Option<&ClassSeries>, steps: &[u64]) -> Vec<f64> {
    let Some(s) = s else { return Vec::new() };
    let cols: BTreeSet<usize> = steps
        .iter()
        .filter_map(|b| s.steps.get(b))
        .flat_map(|st| st.columns.iter().copied())
        .collect();
    cols.into_iter()
        .filter_map(|c| times.get(c).copied())
        .collect()
}

/// One recording's charts and findings: lines from its plot columns, everything else from its
/// summary.
fn section(name: &str, rec: &Recording, summary: &RunSummary) -> String {
    let found = &summary.timeline;
    let mut out = format!(
        "<h2>{}</h2>\n<p class=\"meta\">command <code>{}</code>, {:.1} s, {} samples; job end: {}</p>\n",
        esc(name),
        esc(&summary.command.join(" ")),
        summary.duration_s,
        summary.samples,
        esc(&summary.job_end.to_string())
    );
    let times = column_times(rec);
    let steps: Vec<u64> = found
        .iter()
        .filter(|f| f.kind == TimelineKind::StepwiseGrowth)
        .map(|f| f.bytes)
        .collect();
    let keys: BTreeSet<(Option<u32>, u32, String)> = rec
        .series
        .iter()
        .map(|s| {
            (
                rec.process(s.pid).and_then(|p| p.rank),
                s.pid,
                s.device.clone(),
            )
        })
        .collect();
    for (rank, pid, device) in keys {
        let local = rec.class_series(pid, &device, MemClass::Device);
        let host = rec.class_series(pid, &device, MemClass::Host);
        let mut markers = step_times(&times, local, &steps);
        markers.extend(step_times(&times, host, &steps));
        let who = rank
            .map(|r| format!("rank {r} (pid {pid})"))
            .unwrap_or_else(|| format!("pid {pid}"));
        out.push_str("<figure class=\"timeline\">");
        out.push_str(&chart(
            &format!("{who} on {device}"),
            &[
                Line {
                    name: "device-local",
                    color: DEVICE_COLOR,
                    values: series_of(&times, columns_of(local, times.len())),
                },
                Line {
                    name: "host-class",
                    color: HOST_COLOR,
                    values: series_of(&times, columns_of(host, times.len())),
                },
            ],
            &markers,
        ));
        out.push_str("</figure>\n");
    }
    let held_name = match summary.driver_held_peak {
        Some(d) if d.pinned_shmem > 0 => format!("driver-held ({} + pinned shmem)", d.counter),
        Some(d) => format!("driver-held ({})", d.counter),
        None => "driver-held (not recorded)".into(),
    };
    out.push_str("<figure class=\"host\">");
    out.push_str(&chart(
        "host memory",
        &[
            Line {
                name: "MemAvailable",
                color: DEVICE_COLOR,
                values: series_of(&times, rec.host.columns.iter().map(|c| c.mem_available)),
            },
            Line {
                name: &held_name,
                color: HOST_COLOR,
                values: series_of(&times, rec.host.columns.iter().map(|c| c.driver_held)),
            },
        ],
        &[],
    ));
    out.push_str("</figure>\n");
    out.push_str(&super::plot_evidence::rate_charts(rec));
    out.push_str("<table class=\"findings\"><tr><th>severity</th><th>finding</th><th>at</th><th>bytes</th><th>message</th></tr>\n");
    for f in found {
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{:.1} s</td><td>{}</td><td>{}</td></tr>",
            f.severity.as_str(),
            f.severity.as_str(),
            f.kind.as_str(),
            f.t_s,
            human_bytes(f.bytes),
            esc(&f.message)
        );
    }
    out.push_str("</table>\n");
    out
}

/// The whole page for one or two recordings.
pub fn render_html(recs: &[(String, Recording)]) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpuledger report</title>\n<style>\
body{font-family:sans-serif;margin:2em;max-width:1600px} figure{display:inline-block;margin:.5em} \
table{border-collapse:collapse;margin:1em 0} td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top} \
tr.critical td{background:#fde0e0} tr.warning td{background:#fff3cd} .meta{color:#555} pre{background:#f6f6f6;padding:1em}\
</style></head><body>\n<h1>gpuledger timelines</h1>\n<p>Blue: device-local (VRAM) resident bytes; red: host-class (GTT/system) resident bytes on that device; grey lines: allocator steps found by stepwise_growth.</p>\n",
    );
    let summaries: Vec<RunSummary> = recs.iter().map(|(_, r)| RunSummary::of(r)).collect();
    for ((name, rec), summary) in recs.iter().zip(&summaries) {
        out.push_str(&section(name, rec, summary));
    }
    if let ([(a_name, _), (b_name, _)], [a, b]) = (recs, summaries.as_slice()) {
        let _ = write!(
            out,
            "<h2>A vs B</h2>\n<pre class=\"diff\">{}</pre>\n",
            esc(&render_diff(&diff(a, b), a_name, b_name))
        );
    }
    out.push_str("</body></html>\n");
    out
}
