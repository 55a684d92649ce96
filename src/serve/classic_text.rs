//! The classic Prometheus text format (0.0.4) derived from the OpenMetrics text that
//! prometheus-client encodes (it writes OpenMetrics only).
//!
//! ref: Prometheus "Exposition formats" (text-based format 0.0.4) and the OpenMetrics 1.0
//! specification. What differs for the families the exporter writes: an OpenMetrics counter
//! family `x` has samples `x_total` (and `x_created`), while 0.0.4 names the family by its
//! samples (`# HELP x_total`, `# TYPE x_total counter`) and has no `_created`; an info family `x`
//! has samples `x_info` and is a gauge in 0.0.4; `unknown` is `untyped`; there are no `# UNIT`
//! lines and no `# EOF`. Sample lines (label escaping, values) are the same in both; metadata
//! lines are recognised only at the start of a line, and a label value cannot hold a raw newline
//! (the encoder writes `\n`), so no sample is ever read as metadata.

/// A family's type as the OpenMetrics `# TYPE` line names it, and how 0.0.4 writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Samples `<name>_total`; the 0.0.4 family is named `<name>_total`.
    Counter,
    /// Samples `<name>_info`; a gauge named `<name>_info` in 0.0.4.
    Info,
    /// Any other type: the family keeps its name (`unknown` is written `untyped`).
    Other,
}

impl Family {
    fn of(type_name: &str) -> Family {
        match type_name {
            "counter" => Family::Counter,
            "info" => Family::Info,
            _ => Family::Other,
        }
    }

    /// The 0.0.4 family name of OpenMetrics family `name`.
    fn classic_name(self, name: &str) -> String {
        match self {
            Family::Counter => format!("{name}_total"),
            Family::Info => format!("{name}_info"),
            Family::Other => name.to_string(),
        }
    }

    /// The 0.0.4 type word of OpenMetrics type `type_name`.
    fn classic_type(self, type_name: &str) -> &str {
        match (self, type_name) {
            (Family::Info, _) => "gauge",
            (_, "unknown" | "stateset" | "gaugehistogram") => "untyped",
            (_, t) => t,
        }
    }
}

/// The 0.0.4 text of `openmetrics`, an exposition as prometheus-client encodes it (each family's
/// `# HELP` then `# TYPE` line, then its samples).
pub fn classic_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // The HELP line waits for its TYPE line: a counter's family name depends on it.
    let mut help: Option<(&str, &str)> = None;
    let mut counter: Option<String> = None;
    for line in openmetrics.split_inclusive('\n') {
        let meta = line.strip_prefix("# ").map(|m| m.trim_end_matches('\n'));
        match meta.and_then(|m| m.split_once(' ')) {
            Some(("HELP", rest)) => {
                help = Some(rest.split_once(' ').unwrap_or((rest, "")));
                continue;
            }
            Some(("TYPE", rest)) => {
                let (name, type_name) = rest.split_once(' ').unwrap_or((rest, ""));
                let family = Family::of(type_name);
                let classic = family.classic_name(name);
                if let Some((_, text)) = help.take().filter(|(n, _)| *n == name) {
                    out.push_str(&format!("# HELP {classic} {text}\n"));
                }
                out.push_str(&format!(
                    "# TYPE {classic} {}\n",
                    family.classic_type(type_name)
                ));
                counter = (family == Family::Counter).then(|| name.to_string());
                continue;
            }
            Some(("UNIT", _)) => continue,
            _ if meta == Some("EOF") => continue,
            _ => {}
        }
        if meta.is_none() && counter.as_deref().is_some_and(|c| is_created(line, c)) {
            continue;
        }
        out.push_str(line);
    }
    out
}

/// Whether sample `line` is counter `family`'s `_created` sample (OpenMetrics only).
fn is_created(line: &str, family: &str) -> bool {
    line.strip_prefix(family)
        .and_then(|rest| rest.strip_prefix("_created"))
        .is_some_and(|rest| rest.starts_with(['{', ' ']))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENMETRICS: &str = "\
# HELP gpuledger_host_memory_total_bytes Host RAM (MemTotal).
# TYPE gpuledger_host_memory_total_bytes gauge
gpuledger_host_memory_total_bytes 68719476736
# HELP gpuledger_scan_errors Scan problems.
# TYPE gpuledger_scan_errors counter
gpuledger_scan_errors_total{kind=\"sample_failed\"} 2
gpuledger_scan_errors_created{kind=\"sample_failed\"} 1700000000.0
# HELP gpuledger_scan_duration_seconds Seconds.
# TYPE gpuledger_scan_duration_seconds gauge
# UNIT gpuledger_scan_duration_seconds seconds
gpuledger_scan_duration_seconds 0.25
# HELP gpuledger_build Build.
# TYPE gpuledger_build info
gpuledger_build_info{version=\"0.1.0\"} 1
# HELP gpuledger_odd Odd.
# TYPE gpuledger_odd unknown
gpuledger_odd{comm=\"# TYPE x counter\\n# EOF\"} 1
# EOF
";

    #[test]
    fn counters_are_named_by_their_samples_and_openmetrics_only_lines_go() {
        let text = classic_text(OPENMETRICS);
        assert_eq!(
            text,
            "\
# HELP gpuledger_host_memory_total_bytes Host RAM (MemTotal).
# TYPE gpuledger_host_memory_total_bytes gauge
gpuledger_host_memory_total_bytes 68719476736
# HELP gpuledger_scan_errors_total Scan problems.
# TYPE gpuledger_scan_errors_total counter
gpuledger_scan_errors_total{kind=\"sample_failed\"} 2
# HELP gpuledger_scan_duration_seconds Seconds.
# TYPE gpuledger_scan_duration_seconds gauge
gpuledger_scan_duration_seconds 0.25
# HELP gpuledger_build_info Build.
# TYPE gpuledger_build_info gauge
gpuledger_build_info{version=\"0.1.0\"} 1
# HELP gpuledger_odd Odd.
# TYPE gpuledger_odd untyped
gpuledger_odd{comm=\"# TYPE x counter\\n# EOF\"} 1
"
        );
    }

    #[test]
    fn a_created_sample_is_dropped_only_for_its_counter() {
        assert!(is_created("x_created{a=\"b\"} 1", "x"));
        assert!(is_created("x_created 1", "x"));
        assert!(!is_created("x_created_bytes 1", "x"));
        assert!(!is_created("x_total 1", "x"));
        let gauge = "# HELP y_created Y.\n# TYPE y_created gauge\ny_created 3\n# EOF\n";
        assert_eq!(
            classic_text(gauge),
            "# HELP y_created Y.\n# TYPE y_created gauge\ny_created 3\n"
        );
    }
}
