//! Help people can read: every command's `--help` fits 80 columns, ends with examples and exit
//! statuses, keeps the global options under their own heading; `simulate` describes each
//! scenario.

mod common;
use common::*;

/// `gpuledger ARGS --help` as an 80-column terminal would get it.
fn help(args: &[&str]) -> String {
    let out = bin()
        .args(args)
        .arg("--help")
        .env("COLUMNS", "80")
        .env("LINES", "24")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?} --help");
    String::from_utf8(out.stdout).unwrap()
}

/// The commands the top-level help lists (so a new command is checked without editing here).
fn commands() -> Vec<String> {
    let top = help(&[]);
    section(&top, "Commands:")
        .into_iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The section of `text` under `heading`: its indented and blank lines, up to the next heading.
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .collect()
}

#[test]
fn every_help_fits_80_columns_with_examples_and_exit_status() {
    let commands = commands();
    assert!(commands.len() >= 14, "{commands:?}");
    for command in [vec![], vec!["man"]]
        .into_iter()
        .chain(commands.iter().map(|c| vec![c.as_str()]))
    {
        let text = help(&command);
        for line in text.lines() {
            assert!(
                line.chars().count() <= 80,
                "gpuledger {command:?} --help: {} columns: {line:?}",
                line.chars().count()
            );
        }
        assert!(text.contains("\nExamples:\n"), "{command:?}: {text}");
        let exit = section(&text, "Exit status:");
        assert!(
            exit.iter().any(|l| l.trim_start().starts_with("0  success")),
            "{command:?}: {text}"
        );
        assert!(exit.iter().any(|l| l.contains("2  usage error")), "{command:?}");
    }
}

#[test]
fn a_narrow_terminal_gets_wrapped_words_not_broken_ones() {
    let text = help(&["guard"]);
    let words: Vec<&str> = text.split_whitespace().collect();
    for word in ["MemAvailable", "SIGTERM", "host-class"] {
        assert!(words.iter().any(|w| w.contains(word)), "{word} broken: {text}");
    }
}

#[test]
fn global_options_have_their_own_heading() {
    for command in ["record", "show", "serve"] {
        let text = help(&[command]);
        let global = section(&text, "Global options:").join("\n");
        let own = section(&text, "Options:").join("\n");
        for flag in ["--root", "--proc", "--threshold", "--color"] {
            assert!(global.contains(flag), "{command}: {flag} not global: {text}");
            assert!(!own.contains(flag), "{command}: {flag} among its own options");
        }
    }
    let top = help(&[]);
    assert!(section(&top, "Snapshot options:").join("\n").contains("--fail-on"));
}

#[test]
fn simulate_describes_each_scenario() {
    for args in [&["simulate"][..], &["simulate", "leak"][..]] {
        let text = help(args);
        for (name, about) in [
            ("ddp-peer-mirror", "mirrored as GTT"),
            ("single-gpu", "healthy baseline"),
            ("leak", "grows by 256 MiB steps"),
            ("amdgpu-tp", "tensor-parallel"),
        ] {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(&format!("- {name}:")))
                .unwrap_or_else(|| panic!("{name} not described: {text}"));
            let described = text.lines().skip(line).take(3).collect::<Vec<_>>().join(" ");
            let described = described.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(described.contains(about), "{name}: {described}");
        }
    }
}
