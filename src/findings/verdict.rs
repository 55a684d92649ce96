//! The one-line verdict the text views print first: the worst severity and, of that severity,
//! how many findings of which kinds. Every view computes it here, from its own findings.

use super::Severity;

/// What the findings of one view come to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The most severe finding's severity; `None` when there is no finding.
    pub worst: Option<Severity>,
    /// All findings.
    pub total: usize,
    /// Findings of the worst severity by kind, most first, then by name.
    pub at_worst: Vec<(&'static str, usize)>,
}

impl Verdict {
    /// The verdict of findings given as (severity, kind name).
    pub fn of(findings: impl IntoIterator<Item = (Severity, &'static str)>) -> Verdict {
        let all: Vec<(Severity, &'static str)> = findings.into_iter().collect();
        let worst = all.iter().map(|f| f.0).max();
        let mut counts: std::collections::BTreeMap<&'static str, usize> = Default::default();
        for (_, kind) in all.iter().filter(|f| Some(f.0) == worst) {
            *counts.entry(kind).or_default() += 1;
        }
        let mut at_worst: Vec<(&'static str, usize)> = counts.into_iter().collect();
        at_worst.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        Verdict {
            worst,
            total: all.len(),
            at_worst,
        }
    }

    /// Findings less severe than the worst.
    pub fn less_severe(&self) -> usize {
        self.total - self.at_worst.iter().map(|k| k.1).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_severity_counts_its_kinds_and_the_rest_are_counted() {
        let v = Verdict::of([
            (Severity::Info, "known_issue"),
            (Severity::Critical, "driver_held_host"),
            (Severity::Critical, "peer_mirror"),
            (Severity::Critical, "peer_mirror"),
            (Severity::Warning, "memory_pressure"),
        ]);
        assert_eq!(v.worst, Some(Severity::Critical));
        assert_eq!(v.at_worst, [("peer_mirror", 2), ("driver_held_host", 1)]);
        assert_eq!((v.total, v.less_severe()), (5, 2));
    }

    #[test]
    fn no_findings_is_no_severity() {
        let v = Verdict::of([]);
        assert_eq!((v.worst, v.total, v.less_severe()), (None, 0, 0));
    }
}
