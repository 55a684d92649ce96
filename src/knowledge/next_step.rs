//! The one thing to try first for a match, and the alternatives: computed here once, so doctor,
//! the snapshot, `show` and the report say the same words.

use super::schema::Workaround;
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
    /// The first of `workarounds` of entry `issue`, the others as alternatives; `None` without
    /// workarounds. `command` is the job's command line (empty: a placeholder is shown).
    pub fn of(issue: &str, workarounds: &[Workaround], command: &[String]) -> Option<NextStep> {
        let (first, rest) = workarounds.split_first()?;
        let mut step = NextStep {
            issue: issue.to_string(),
            first: first.clone(),
            experiment: experiment_line(&first.env, command),
            alternatives: Vec::new(),
        };
        step.add_alternatives(issue, rest);
        Some(step)
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
        }
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
