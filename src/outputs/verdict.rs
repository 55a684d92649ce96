//! The verdict line that opens `gpuledger` and `show`: "CRITICAL: 3 findings (peer_mirror × 2,
//! driver_held_host); 64.0 GiB host, 25.9 GiB driver-held", or "OK: no findings; …".

use super::text_table::Paint;
use super::wrap;
use crate::findings::verdict::Verdict;

/// The verdict, then `context` (the host's size, the driver-held peak) after a semicolon,
/// wrapped to the width with the severity word coloured.
pub fn line(v: &Verdict, context: &str, paint: Paint) -> String {
    let Some(worst) = v.worst else {
        let text = format!("no findings; {context}");
        return wrap::hanging(&paint.heading("OK: "), 4, 4, &text, paint.width);
    };
    let kinds: Vec<String> = v
        .at_worst
        .iter()
        .map(|(k, n)| match n {
            1 => k.to_string(),
            n => format!("{k} × {n}"),
        })
        .collect();
    let n = v.total - v.less_severe();
    let plural = if n == 1 { "" } else { "s" };
    let mut text = format!("{n} finding{plural} ({})", kinds.join(", "));
    if v.less_severe() > 0 {
        text.push_str(&format!(" and {} less severe", v.less_severe()));
    }
    text.push_str("; ");
    text.push_str(context);
    let word = worst.as_str().to_uppercase();
    let cols = word.chars().count() + 2;
    let label = format!("{}: ", paint.severity(worst, &word));
    wrap::hanging(&label, cols, cols, &text, paint.width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;

    #[test]
    fn names_the_worst_kinds_and_counts_the_rest() {
        let v = Verdict::of([
            (Severity::Critical, "peer_mirror"),
            (Severity::Critical, "peer_mirror"),
            (Severity::Critical, "driver_held_host"),
            (Severity::Info, "known_issue"),
        ]);
        assert_eq!(
            line(&v, "64.0 GiB host, 25.9 GiB driver-held", Paint::PLAIN),
            "CRITICAL: 3 findings (peer_mirror × 2, driver_held_host) and 1 less severe;\n          64.0 GiB host, 25.9 GiB driver-held\n"
        );
        assert_eq!(
            line(&Verdict::of([]), "64.0 GiB host", Paint::PLAIN),
            "OK: no findings; 64.0 GiB host\n"
        );
    }
}
