//! Help and documents people can read: every command's `--help` fits 80 columns, ends with
//! examples and exit statuses, keeps the global options under their own heading; `simulate`
//! describes each scenario; the README is short, starts with the two commands CI runs, and what
//! it and the code cite exists.

use crate::common;
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
            exit.iter()
                .any(|l| l.trim_start().starts_with("0  success")),
            "{command:?}: {text}"
        );
        assert!(
            exit.iter().any(|l| l.contains("2  usage error")),
            "{command:?}"
        );
    }
}

#[test]
fn a_narrow_terminal_gets_wrapped_words_not_broken_ones() {
    let text = help(&["guard"]);
    let words: Vec<&str> = text.split_whitespace().collect();
    for word in ["MemAvailable", "SIGTERM", "host-class"] {
        assert!(
            words.iter().any(|w| w.contains(word)),
            "{word} broken: {text}"
        );
    }
}

#[test]
fn global_options_have_their_own_heading() {
    for command in ["record", "show", "serve"] {
        let text = help(&[command]);
        let global = section(&text, "Global options:").join("\n");
        let own = section(&text, "Options:").join("\n");
        for flag in ["--root", "--proc", "--threshold", "--color"] {
            assert!(
                global.contains(flag),
                "{command}: {flag} not global: {text}"
            );
            assert!(
                !own.contains(flag),
                "{command}: {flag} among its own options"
            );
        }
    }
    let top = help(&[]);
    assert!(section(&top, "Snapshot options:")
        .join("\n")
        .contains("--fail-on"));
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
            let described = text
                .lines()
                .skip(line)
                .take(3)
                .collect::<Vec<_>>()
                .join(" ");
            let described = described.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(described.contains(about), "{name}: {described}");
        }
    }
}

fn repo_file(path: &str) -> String {
    read(&repo_path(path))
}

#[test]
fn the_readme_starts_with_the_two_commands_and_ci_runs_its_test_command() {
    let readme = repo_file("README.md");
    assert!(
        readme.lines().count() < 120,
        "README is for users: keep it short"
    );
    let block: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "```sh")
        .skip(1)
        .take_while(|l| *l != "```")
        .collect();
    let commands: Vec<&str> = block
        .iter()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .collect();
    assert_eq!(
        commands,
        ["cargo run --release", "cargo test --all-targets"]
    );
    let ci = repo_file(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == commands[1]),
        "CI runs {}",
        commands[1]
    );
    for section in ["## Quick start", "## Limitations", "## Layout"] {
        assert!(readme.contains(section), "README lacks {section}");
    }
}

#[test]
fn what_the_readme_and_the_code_cite_exists() {
    let readme = repo_file("README.md");
    for link in readme.split("](").skip(1) {
        let target = link.split(')').next().unwrap_or("");
        if !target.starts_with("http") && !target.starts_with('#') {
            repo_file(target);
        }
    }
    for doc in [
        "docs/DESIGN.md",
        "docs/ARCHITECTURE.md",
        "docs/REFERENCE.md",
    ] {
        assert!(readme.contains(doc), "README does not link {doc}");
    }
    let design = repo_file("docs/DESIGN.md");
    for contract in [
        "## Regions and classes",
        "## Driver-held host memory",
        "## Findings",
        "## Recording schema",
        "## Capture tree",
    ] {
        assert!(design.contains(contract), "docs/DESIGN.md lacks {contract}");
    }
    for cited in ["src/lib.rs", "src/layout.rs", "src/findings/peer_mirror.rs"] {
        let text = repo_file(cited);
        assert!(text.contains("docs/DESIGN.md"), "{cited}");
        assert!(
            !text.replace("docs/DESIGN.md", "").contains("DESIGN.md"),
            "{cited}"
        );
    }
}

#[test]
fn every_command_has_a_man_page_with_its_examples() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for command in commands() {
        let page = dir.path().join(format!("gpuledger-{command}.1"));
        let roff = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{command}: {e}"));
        assert!(
            roff.contains("Examples:") && roff.contains("Exit status:"),
            "{command}"
        );
    }
    assert!(dir.path().join("gpuledger.1").exists());
}
