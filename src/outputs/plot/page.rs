//! The page shell: inline CSS, the run legend and the sections in order. No scripts, no links,
//! no fonts or images to fetch: the file is the whole report.

use super::style::{RUN_COLORS, RUN_DASHES};
use crate::outputs::safe_text::display_safe;
use std::fmt::Write;

/// One part of the page, rendered in the order given: a heading and its HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The `id` attribute, so a part can be linked to (`report.html#compare`).
    pub id: &'static str,
    /// The heading (plain text; it is escaped here).
    pub title: String,
    /// The body, already HTML.
    pub body: String,
}

/// Text read from a recording, made safe to put inside HTML (and free of bidi tricks).
pub fn esc(s: &str) -> String {
    html_escape::encode_safe(&display_safe(s)).into_owned()
}

/// Laptop-first layout: the page is at most 1400 px wide and the small multiples wrap in a grid.
const CSS: &str = "\
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222}\
h1{font-size:1.5em} h2{font-size:1.25em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}\
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:.6em}\
figure{margin:0;border:1px solid #e4e4e4;border-radius:4px;padding:.3em}\
figcaption{font-size:.85em;color:#333;margin:.1em .3em} figure>svg{display:block;width:100%;height:auto}\
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}\
td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}\
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
th.run-a{border-top:3px solid #0072b2} th.run-b{border-top:3px solid #d55e00}\
tr>th:first-child{white-space:nowrap} .finding{white-space:nowrap} .sev{font-weight:600} .sev.critical{color:#b00020} .sev.warning{color:#8a5a00} .sev.info{color:#555}\
tr.critical td{background:#fde0e0} tr.warning td{background:#fff3cd}\
tr.verdict td{background:#eef5fb;font-weight:600} tr.warn td{background:#fff3cd}\
.meta{color:#555;font-size:.9em} .legend span{margin-right:1.5em;white-space:nowrap}\
code{overflow-wrap:anywhere} details{margin:.4em 0 .8em}";

/// A short line sample in a run's colour and dash, for the legend.
fn swatch(run: usize) -> String {
    let (c, dash) = (RUN_COLORS[run % 2], RUN_DASHES[run % 2]);
    format!(
        "<svg width=\"36\" height=\"10\" style=\"display:inline;vertical-align:middle\"><line x1=\"0\" y1=\"5\" x2=\"36\" y2=\"5\" stroke=\"rgb({},{},{})\" stroke-width=\"3\" stroke-dasharray=\"{dash}\"/></svg>",
        c.0, c.1, c.2
    )
}

/// The legend: which colour and line style is which run, and what the marks mean.
pub fn legend(names: &[&str]) -> String {
    let mut out = String::from("<p class=\"legend\">");
    for (i, name) in names.iter().enumerate() {
        let letter = if i == 0 { "A" } else { "B" };
        let _ = write!(out, "<span>{} {letter} = {}</span>", swatch(i), esc(name));
    }
    out.push_str("<span>▲ allocator step (stepwise_growth)</span></p>\n");
    out
}

/// The whole page.
pub fn render(names: &[&str], sections: &[Section]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>gpuledger report</title>\n<style>{CSS}</style></head><body>\n\
<h1>gpuledger: {}</h1>\n{}",
        if names.len() == 2 {
            "run A vs run B"
        } else {
            "one run"
        },
        legend(names)
    );
    for s in sections {
        let _ = write!(
            out,
            "<section id=\"{}\">\n<h2>{}</h2>\n{}</section>\n",
            s.id,
            esc(&s.title),
            s.body
        );
    }
    out.push_str("</body></html>\n");
    out
}
