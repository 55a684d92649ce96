//! One small chart as inline SVG (plotters): A and B overlaid on the axes the caller gives, so
//! every chart of a grid shares its scale and heights compare across the grid.

use super::style::RUN_COLORS;
use plotters::prelude::*;

/// Size of a small multiple, in SVG pixels.
pub const SIZE: (u32, u32) = (360, 210);
/// Width of the plotting area: series are cut to at most this many columns before drawing.
pub const PLOT_WIDTH: usize = 300;

/// One run's line in a chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Line {
    /// Which run (0 = A, 1 = B): picks colour and dash.
    pub run: usize,
    /// (seconds, GiB) points.
    pub points: Vec<(f64, f64)>,
    /// (seconds, GiB) where the series grew by a stepwise_growth step.
    pub steps: Vec<(f64, f64)>,
}

/// The axes shared by a grid of charts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// Seconds.
    pub x_max: f64,
    /// GiB.
    pub y_max: f64,
    /// The y axis's caption.
    pub y_desc: &'static str,
}

impl Scale {
    /// Axes that hold every line given (at least 1 s and 1 GiB, with headroom on top), both
    /// finite whatever the points hold.
    pub fn fitting<'a>(lines: impl Iterator<Item = &'a Line>, y_desc: &'static str) -> Scale {
        let points: Vec<(f64, f64)> = lines.flat_map(|l| l.points.iter().copied()).collect();
        let x = super::axis::fit(points.iter().map(|p| p.0), 0.0, 1.0, 1.0);
        let y = super::axis::fit(points.iter().map(|p| p.1), 0.0, 1.08, 1.0);
        Scale {
            x_max: x.end,
            y_max: y.end,
            y_desc,
        }
    }
}

/// Draws one chart; a drawing failure gives a short note instead of the chart.
pub fn chart(title: &str, lines: &[Line], scale: Scale) -> String {
    let mut svg = String::new();
    if draw(&mut svg, lines, scale).is_err() {
        return format!("<p>could not draw {}</p>", super::page::esc(title));
    }
    svg
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(svg: &mut String, lines: &[Line], scale: Scale) -> DrawResult {
    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut c = ChartBuilder::on(&root)
        .margin(6)
        .margin_right(14)
        .x_label_area_size(30)
        .y_label_area_size(46)
        .build_cartesian_2d(0.0..scale.x_max, 0.0..scale.y_max)?;
    c.configure_mesh()
        .x_desc("seconds from start")
        .y_desc(scale.y_desc)
        .x_labels(6)
        .y_labels(5)
        .label_style(("sans-serif", 12))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()?;
    for l in lines {
        // A is drawn wider than B's dashes, so where the runs coincide both stay visible.
        let color = RUN_COLORS[l.run % 2];
        if l.run % 2 == 0 {
            c.draw_series(LineSeries::new(
                l.points.iter().copied(),
                color.stroke_width(3),
            ))?;
        } else {
            c.draw_series(DashedLineSeries::new(
                l.points.iter().copied(),
                7,
                4,
                color.stroke_width(2),
            ))?;
        }
        let fill = RUN_COLORS[l.run % 2].filled();
        c.draw_series(l.steps.iter().map(|&p| TriangleMarker::new(p, 5, fill)))?;
    }
    root.present()?;
    Ok(())
}
