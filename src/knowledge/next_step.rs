//! The one thing to try first for a match, and the alternatives: computed here once, so doctor,
//! the snapshot, `show` and the report say the same words.

use super::schema::{Throughput, Workaround};
use crate::experiment;
use serde::Serialize;
use std::collections::BTreeMap;

/// What a user whose job matches an entry tries first, and what next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextStep {
    /// The entry whose workaround comes first.
    pub issue: String,
    /// Its first workaround, with its caveat.
    pub first: Workaround,
    /// The command line that runs the job with and without it (an `experiment` control), when
    /// the workaround is an environment change.
    pub experiment: Option<String>,
    /// The other workarounds, each once, with the entry that gives it.
    pub alternatives: Vec<Alternative>,
    /// The job's command line, for the experiment line when the ranking changes the first.
    #[serde(skip)]
    command: Vec<String>,
}

/// A workaround to try after the first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Alternative {
    /// The entry it comes from.
    pub issue: String,
    /// The workaround.
    pub workaround: Workaround,
}

impl NextStep {
    /// The best of `workarounds` of entry `issue` by what was measured (else the first), the
    /// others as alternatives; `None` without workarounds. `command` is the job's command line (empty: a placeholder is shown).
    pub fn of(issue: &str, workarounds: &[Workaround], command: &[String]) -> Option<NextStep> {
        let (first, rest) = workarounds.split_first()?;
        let mut step = NextStep {
            issue: issue.to_string(),
            first: first.clone(),
            experiment: experiment_line(&first.env, command),
            alternatives: Vec::new(),
            command: command.to_vec(),
        };
        step.add_alternatives(issue, rest);
        step.rank_by_measurements();
        Some(step)
    }

    /// Orders the first workaround and the alternatives by what the reports measured
    /// ([`rank_key`]): the one that left the smallest share of the default's host RAM held with
    /// throughput unchanged comes first. Workarounds nobody measured keep their order, after the
    /// measured ones with unchanged or unmeasured throughput and before those that cost throughput.
    pub fn rank_by_measurements(&mut self) {
        let mut all: Vec<Alternative> = std::iter::once(Alternative {
            issue: self.issue.clone(),
            workaround: self.first.clone(),
        })
        .chain(self.alternatives.drain(..))
        .collect();
        all.sort_by_key(|a| rank_key(&a.workaround));
        let best = all.remove(0);
        if best.workaround != self.first {
            self.experiment = experiment_line(&best.workaround.env, &self.command);
        }
        self.issue = best.issue;
        self.first = best.workaround;
        self.alternatives = all;
    }

    /// Adds `more` workarounds of entry `issue`, except those that repeat one already listed:
    /// the same environment, or the same words when none is set.
    pub fn add_alternatives(&mut self, issue: &str, more: &[Workaround]) {
        for w in more {
            let seen = std::iter::once(&self.first)
                .chain(self.alternatives.iter().map(|a| &a.workaround))
                .any(|x| same(x, w));
            if !seen {
                self.alternatives.push(Alternative {
                    issue: issue.to_string(),
                    workaround: w.clone(),
                });
            }
        }
    }

    /// The step in one line: "try first: …; then: …".
    pub fn sentence(&self) -> String {
        let mut s = format!("try first: {} ({})", self.first.what, self.first.caveat);
        if let Some(m) = &self.first.measured {
            s.push_str(&format!("; measured: {}", m.sentence()));
        }
        if let Some(cmd) = &self.experiment {
            s.push_str(&format!("; measure it with `{cmd}`"));
        }
        if !self.alternatives.is_empty() {
            let alts: Vec<&str> = self
                .alternatives
                .iter()
                .map(|a| a.workaround.what.as_str())
                .collect();
            s.push_str(&format!("; then: {}", alts.join("; ")));
        }
        s
    }
}

/// Where a workaround ranks: measured with throughput unchanged, then measured with throughput
/// not measured, then not measured at all, then measured at a throughput cost; within each, by
/// the share of the default's host RAM it left held.
fn rank_key(w: &Workaround) -> (u8, u64) {
    match &w.measured {
        None => (2, 0),
        Some(m) => {
            let class = match m.throughput {
                Throughput::Unchanged => 0,
                Throughput::NotMeasured => 1,
                Throughput::Lower => 3,
            };
            (class, m.held_per_mille())
        }
    }
}

fn same(a: &Workaround, b: &Workaround) -> bool {
    if a.env.is_empty() && b.env.is_empty() {
        a.what == b.what
    } else {
        a.env == b.env
    }
}

/// `gpuledger experiment --controls C -- CMD`: a built-in control that sets every variable of
/// `env` when there is one, else `NAME:VAR=VAL,…`; `None` for an empty `env`.
fn experiment_line(env: &BTreeMap<String, String>, command: &[String]) -> Option<String> {
    if env.is_empty() {
        return None;
    }
    let builtin = experiment::builtin().into_iter().find(|c| {
        env.iter()
            .all(|(k, v)| c.env.iter().any(|(ck, cv)| ck == k && cv == v))
    });
    let control = match builtin {
        Some(c) => c.name,
        None => {
            let set: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("'fix:{}'", set.join(","))
        }
    };
    let job = if command.is_empty() {
        "<the job's command>".to_string()
    } else {
        shell_words(command)
    };
    Some(format!(
        "gpuledger experiment --controls {control} -- {job}"
    ))
}

/// The command as a shell would take it back: words with spaces or quotes single-quoted.
fn shell_words(command: &[String]) -> String {
    command
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(what: &str, env: &[(&str, &str)]) -> Workaround {
        Workaround {
            what: what.into(),
            caveat: "c".into(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            measured: None,
        }
    }

    fn measured(what: &str, held: u64, throughput: Throughput) -> Workaround {
        Workaround {
            measured: Some(super::super::schema::Measured {
                link: "https://example.org/lab".into(),
                date: "2026-10-04".into(),
                setup: "4x B70".into(),
                host_held: format!("{held} MiB"),
                baseline_held: "1000 MiB".into(),
                throughput,
            }),
            ..w(what, &[(what, "1")])
        }
    }

    #[test]
    fn measurements_rank_the_workarounds_not_their_order_in_the_files() {
        let ws = [
            w("downgrade", &[]),
            measured("resident", 325, Throughput::Unchanged),
            measured("slower", 10, Throughput::Lower),
            measured("unmeasured speed", 5, Throughput::NotMeasured),
            measured("defer", 24, Throughput::Unchanged),
        ];
        let mut s = NextStep::of("cr-953", &ws, &[]).unwrap();
        s.add_alternatives("cr-980", &[measured("peer", 24, Throughput::Unchanged)]);
        s.rank_by_measurements();
        let order: Vec<&str> = std::iter::once(s.first.what.as_str())
            .chain(s.alternatives.iter().map(|a| a.workaround.what.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                "defer",
                "peer",
                "resident",
                "unmeasured speed",
                "downgrade",
                "slower"
            ]
        );
        assert_eq!(
            s.experiment.as_deref(),
            Some("gpuledger experiment --controls 'fix:defer=1' -- <the job's command>")
        );
        assert_eq!(s.alternatives[0].issue, "cr-980");
        assert!(
            s.sentence()
                .contains("measured: host RAM 24 MiB (1000 MiB without it), throughput unchanged"),
            "{}",
            s.sentence()
        );
    }

    #[test]
    fn without_measurements_the_order_is_kept() {
        let mut s = NextStep::of("a", &[w("one", &[]), w("two", &[])], &[]).unwrap();
        s.rank_by_measurements();
        assert_eq!(s.first.what, "one");
        assert_eq!(s.alternatives[0].workaround.what, "two");
    }

    #[test]
    fn the_first_workaround_runs_as_the_matching_builtin_control() {
        let ws = [
            w(
                "defer off",
                &[("NEOReadDebugKeys", "1"), ("EnableDeferBacking", "0")],
            ),
            w("26.05", &[]),
        ];
        let cmd: Vec<String> = ["torchrun", "--nproc-per-node", "2", "train.py"]
            .map(String::from)
            .into();
        let s = NextStep::of("cr-953", &ws, &cmd).unwrap();
        assert_eq!(
            s.experiment.as_deref(),
            Some("gpuledger experiment --controls no-defer-backing -- torchrun --nproc-per-node 2 train.py")
        );
        assert_eq!(s.alternatives.len(), 1);
        assert!(s
            .sentence()
            .starts_with("try first: defer off (c); measure it with `gpuledger experiment"));
        assert!(s.sentence().ends_with("; then: 26.05"));
    }

    #[test]
    fn alternatives_that_set_the_same_environment_are_listed_once() {
        let mask = [("ZE_AFFINITY_MASK", "0")];
        let mut s = NextStep::of("a", &[w("one", &[("X", "1")]), w("mask", &mask)], &[]).unwrap();
        s.add_alternatives(
            "b",
            &[
                w("one device per process", &mask),
                w("X again", &[("X", "1")]),
            ],
        );
        s.add_alternatives("c", &[w("new", &[]), w("new", &[])]);
        let names: Vec<&str> = s
            .alternatives
            .iter()
            .map(|a| a.workaround.what.as_str())
            .collect();
        assert_eq!(names, ["mask", "new"]);
        assert_eq!(
            s.experiment.as_deref(),
            Some("gpuledger experiment --controls 'fix:X=1' -- <the job's command>")
        );
    }

    #[test]
    fn words_a_shell_would_split_are_quoted() {
        let cmd = ["python", "-c", "print('a b')"].map(String::from);
        assert_eq!(shell_words(&cmd), r"python -c 'print('\''a b'\'')'");
    }
}
