//! How the two runs of a comparison are told apart, in the charts and in the page around them.

use plotters::style::RGBColor;

/// Run A and run B: blue and vermillion, a pair that colour-blind readers tell apart
/// (Okabe & Ito's palette).
pub const RUN_COLORS: [RGBColor; 2] = [RGBColor(0, 114, 178), RGBColor(213, 94, 0)];
/// Run A solid, run B dashed (an SVG dash array), so the runs differ in print and greyscale too.
pub const RUN_DASHES: [&str; 2] = ["none", "7 4"];
