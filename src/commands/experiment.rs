//! `gpuledger experiment`.

use crate::cli::{ExperimentPlan, ExperimentRun, Globals};
use anyhow::{Context, Result};
use gpuledger::experiment::{builtin, measure, opt_in, verdict, Control, Measures};
use gpuledger::outputs::text_table::{render, Align};
use gpuledger::recording::run::{record, RunOptions, Target};
use gpuledger::root::Root;
use gpuledger::timeline::RunSummary;
use gpuledger::units::{human_bytes, human_opt};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// Runs `experiment`'s plan.
pub fn run(g: &Globals, plan: ExperimentPlan) -> Result<ExitCode> {
    let run = match plan {
        ExperimentPlan::ListControls => return list_controls(),
        ExperimentPlan::Run(run) => run,
    };
    let ExperimentRun {
        controls: chosen,
        repeat,
        dir,
        interval,
        command,
    } = run;
    let root = g.root.as_deref();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if let Some(r) = root {
        std::fs::create_dir_all(r)
            .with_context(|| format!("cannot create --root {}", r.display()))?;
    }
    let opts = RunOptions {
        interval,
        duration: None,
        thresholds: g.thresholds.clone(),
        rates: Vec::new(),
        trace: None,
    };
    let mut configs: Vec<(String, Vec<(String, String)>)> = vec![("as given".into(), Vec::new())];
    configs.extend(
        chosen
            .iter()
            .map(|c: &Control| (c.name.clone(), c.env.clone())),
    );
    let mut measures: Vec<Measures> = Vec::new();
    let stop = AtomicBool::new(false);
    for (name, env) in &configs {
        let mut runs = Vec::new();
        for i in 0..repeat {
            let file = dir.join(format!("{}-{i}.ledger", name.replace(' ', "-")));
            let _ = std::fs::remove_file(&file);
            let root = match root {
                Some(r) => Root::open(r)?,
                None => Root::live(),
            };
            eprintln!(
                "gpuledger experiment: {name} (run {}/{}) -> {}",
                i + 1,
                repeat,
                file.display()
            );
            record(
                root,
                &Target::Command {
                    argv: command.clone(),
                    env: env.clone(),
                },
                &file,
                &opts,
                &stop,
                |_| {},
            )
            .with_context(|| format!("recording {name}"))?;
            runs.push(RunSummary::of(&gpuledger::recording::open(&file)?));
        }
        measures.push(measure(name, &runs));
    }
    super::print(&comparison(&measures, &dir))?;
    Ok(ExitCode::SUCCESS)
}

/// The comparison of every configuration's measures, the verdict and where the recordings are.
fn comparison(measures: &[Measures], dir: &Path) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let line = |what: &str, f: &dyn Fn(&Measures) -> String| {
        let mut r = vec![what.to_string()];
        r.extend(measures.iter().map(f));
        r
    };
    rows.push(line("peer-fd host-class, largest rank", &|m| {
        human_bytes(m.peer_host)
    }));
    rows.push(line("driver-held host memory, peak", &|m| {
        human_opt(m.driver_held)
    }));
    rows.push(line("MemAvailable, low point", &|m| {
        human_opt(m.mem_available_low)
    }));
    rows.push(line("pinned peer mirror", &|m| {
        if m.pinned_mirror {
            "yes".into()
        } else {
            "no".into()
        }
    }));
    rows.push(line("duration", &|m| format!("{:.1} s", m.duration_s)));
    rows.push(line("job end", &|m| {
        m.end
            .map(|e| e.to_string())
            .unwrap_or_else(|| "not recorded".into())
    }));
    let mut headers: Vec<(&str, Align)> = vec![("", Align::Left)];
    headers.extend(measures.iter().map(|m| (m.name.as_str(), Align::Right)));
    let mut out = render("  ", &headers, &rows);
    out.push('\n');
    out.push_str(&verdict(&measures[0], &measures[1..]));
    out.push_str(&format!(
        "\nRecordings in {} (compare two with `gpuledger diff`).\n",
        dir.display()
    ));
    out
}

/// `--list-controls`: the built-in controls as a table, the opt-in ones marked.
fn list_controls() -> Result<ExitCode> {
    let listed = builtin().into_iter().map(|c| (c, "")).chain(
        opt_in()
            .into_iter()
            .map(|c| (c, "opt-in, runs only when named: ")),
    );
    let rows: Vec<Vec<String>> = listed
        .map(|(c, mark)| {
            vec![
                c.name,
                c.env
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                format!("{mark}{}", c.about),
            ]
        })
        .collect();
    super::print(&render(
        "",
        &[
            ("CONTROL", Align::Left),
            ("ENVIRONMENT", Align::Left),
            ("ISOLATES", Align::Left),
        ],
        &rows,
    ))?;
    super::print("\nUser-defined: --controls 'NAME:VAR=VAL,VAR=VAL'. Debug keys are for diagnosis, not production.\n")?;
    Ok(ExitCode::SUCCESS)
}
