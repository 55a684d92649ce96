//! `plot`'s charts of the job's own evidence: one chart per `--rate` series, with the job's phase
//! markers as labelled vertical lines. Series are thinned to the min and max of at most
//! [`COLUMNS`] buckets, so a long run's chart stays small.

use super::axis::fit;
use super::page::{esc, Section};
use super::Run;
use crate::job_output::plausible;
use crate::outputs::safe_text::display_safe;
use crate::recording::{RateSeries, Recording};
use plotters::prelude::*;
use std::fmt::Write;

const COLUMNS: usize = 1000;
const RATE_COLOR: RGBColor = RGBColor(44, 160, 44);
const MARKER_COLOR: RGBColor = RGBColor(148, 103, 189);

/// The runs' throughput series and phase markers, each run under its letter; `None` when no
/// run recorded either.
pub fn section(runs: &[Run]) -> Option<Section> {
    let any = runs.iter().any(|r| {
        let e = &r.rec.evidence;
        !e.rates.is_empty() || !e.markers.is_empty()
    });
    if !any {
        return None;
    }
    let mut body = String::new();
    for (run, letter) in runs.iter().zip(["A", "B"]) {
        let _ = writeln!(body, "<h3>{letter}: {}</h3>", esc(run.name));
        let charts = rate_charts(run.rec);
        body.push_str(if charts.is_empty() {
            "<p>no --rate series or phase markers recorded</p>\n"
        } else {
            &charts
        });
    }
    Some(Section {
        id: "throughput",
        title: "Throughput and phases (the job's own output)".into(),
        body,
    })
}

/// The charts of a recording's rate series with its markers; the markers alone as a list when
/// there is no series to draw them on; nothing when it has neither.
fn rate_charts(rec: &Recording) -> String {
    let base = rec.host.first_ms;
    let t_s = |t: u64| (t as f64 - base as f64) / 1000.0;
    let markers: Vec<(f64, String)> = rec
        .evidence
        .markers
        .iter()
        .map(|m| (t_s(m.t_ms), m.text.clone()))
        .collect();
    if rec.evidence.rates.is_empty() && !markers.is_empty() {
        let list: Vec<String> = markers
            .iter()
            .map(|(t, text)| format!("{t:.1} s {}", esc(text)))
            .collect();
        return format!(
            "<p class=\"markers\">phase markers: {}</p>\n",
            list.join("; ")
        );
    }
    rec.evidence
        .rates
        .iter()
        .map(|r| {
            let points: Vec<(f64, f64)> = thin(r)
                .into_iter()
                .map(|(t, v)| (t_s(t), v))
                .filter(|p| plausible(p.1))
                .collect();
            format!(
                "<figure class=\"rate\">{}</figure>\n",
                chart(r, &points, &markers)
            )
        })
        .collect()
}

/// At most two points (the min and the max) per bucket of consecutive points.
fn thin(r: &RateSeries) -> Vec<(u64, f64)> {
    let per = r.points.len().div_ceil(COLUMNS).max(1);
    if per == 1 {
        return r.points.clone();
    }
    r.points
        .chunks(per)
        .flat_map(|c| {
            let lo = c.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
            let hi = c.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
            let mut two: Vec<(u64, f64)> = lo.into_iter().chain(hi).collect();
            two.sort_by_key(|p| p.0);
            two
        })
        .collect()
}

fn chart(r: &RateSeries, points: &[(f64, f64)], markers: &[(f64, String)]) -> String {
    // Job text reaches SVG text here: control and bidi characters shown visibly, as everywhere.
    let unit = display_safe(r.unit.as_deref().unwrap_or_default()).into_owned();
    let title = format!("{} ({} points)", display_safe(&r.name), r.points.len());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 260)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let xs = points
            .iter()
            .map(|p| p.0)
            .chain(markers.iter().map(|m| m.0));
        // Ranges through axis::fit: a value of 1.7e308 with headroom would make the axis
        // infinite, and plotters' label loop would never end.
        let x = fit(xs, 0.0, 1.0, 1.0);
        let y = fit(points.iter().map(|p| p.1), 0.0, 1.1, 0.001);
        let (y_min, y_max) = (y.start, y.end);
        let Ok(mut c) = ChartBuilder::on(&root)
            .caption(&title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(x, y)
        else {
            return format!("<p>could not draw {}</p>", esc(&title));
        };
        let _ = c
            .configure_mesh()
            .x_desc("seconds")
            .y_desc(unit.as_str())
            .light_line_style(RGBColor(235, 235, 235))
            .draw();
        for (t, text) in markers {
            let _ = c.draw_series(LineSeries::new(
                [(*t, y_min), (*t, y_max)],
                MARKER_COLOR.stroke_width(1),
            ));
            let label: String = display_safe(text).chars().take(40).collect();
            let _ = c.draw_series(std::iter::once(Text::new(
                label,
                (*t, y_max),
                ("sans-serif", 11).into_font().color(&MARKER_COLOR),
            )));
        }
        let _ = c.draw_series(LineSeries::new(
            points.iter().copied(),
            RATE_COLOR.stroke_width(2),
        ));
        let _ = root.present();
    }
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_and_control_characters_in_job_text_are_shown_not_obeyed() {
        let r = RateSeries {
            name: "wave\u{202e}evil".into(),
            unit: Some("s/\u{1b}[31mwave".into()),
            points: vec![(0, 1.0), (1000, 2.0)],
            dropped: 0,
        };
        let svg = chart(
            &r,
            &[(0.0, 1.0), (1.0, 2.0)],
            &[(0.5, "epoch\u{202e}2".into())],
        );
        assert!(
            !svg.contains('\u{202e}') && !svg.contains('\u{1b}'),
            "{svg}"
        );
        assert!(svg.contains("wave"), "{svg}");
    }
}
