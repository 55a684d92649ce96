//! `gpuledger experiment`.

use anyhow::{bail, Context, Result};
use gpuledger::experiment::{builtin, measure, parse_controls, verdict, Control, Measures};
use gpuledger::findings::Thresholds;
use gpuledger::outputs::text_table::{render, Align};
use gpuledger::recording::run::{record, RunOptions, Target};
use gpuledger::root::Root;
use gpuledger::timeline::RunSummary;
use gpuledger::units::{human_bytes, human_opt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

#[allow(clippy::too_many_arguments)]
pub fn run(
    root: Option<&Path>,
    controls: &[String],
    repeat: u32,
    list: bool,
    output: Option<&Path>,
    interval: std::time::Duration,
    command: &[String],
    t: &Thresholds,
) -> Result<ExitCode> {
    if list {
        let rows: Vec<Vec<String>> = builtin()
            .into_iter()
            .map(|c| {
                vec![
                    c.name,
                    c.env
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" "),
                    c.about,
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
        return Ok(ExitCode::SUCCESS);
    }
    if command.is_empty() {
        bail!("experiment needs a command after --");
    }
    let list: Vec<String> = controls
        .iter()
        .flat_map(|c| c.split(',').map(String::from))
        .collect::<Vec<_>>();
    let chosen = if list.is_empty() {
        builtin()
    } else {
        parse_controls(&join_user_controls(&list))?
    };
    let dir = output
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(format!("gpuledger-experiment-{}", std::process::id())));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if let Some(r) = root {
        std::fs::create_dir_all(r)
            .with_context(|| format!("cannot create --root {}", r.display()))?;
    }
    let opts = RunOptions {
        interval,
        duration: None,
        thresholds: t.clone(),
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
        for i in 0..repeat.max(1) {
            let file = dir.join(format!("{}-{i}.ledger", name.replace(' ', "-")));
            let _ = std::fs::remove_file(&file);
            let root = match root {
                Some(r) => Root::open(r)?,
                None => Root::live(),
            };
            eprintln!(
                "gpuledger experiment: {name} (run {}/{}) -> {}",
                i + 1,
                repeat.max(1),
                file.display()
            );
            record(
                root,
                &Target::Command {
                    argv: command.to_vec(),
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
    super::print(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `a,b,mine:X=1,Y=2` splits at every comma; put user controls' assignments back together.
fn join_user_controls(parts: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        match out.last_mut() {
            Some(last) if last.contains(':') && p.contains('=') && !p.contains(':') => {
                last.push(',');
                last.push_str(p);
            }
            _ => out.push(p.clone()),
        }
    }
    out
}
