//! `gpuledger project`.

use crate::cli::{Basis, Globals, ProjectPlan};
use anyhow::{bail, Context, Result};
use gpuledger::ledger::Ledger;
use gpuledger::outputs::text_table::{render, Align};
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::timeline::peaks;
use gpuledger::timeline::project::{peers_per_rank, project, Outlook, Peers, MAX_RANKS};
use gpuledger::units::human_bytes;
use std::process::ExitCode;

/// Runs `project`; the plan has checked the rank range and the basis.
pub fn run(g: &Globals, plan: ProjectPlan) -> Result<ExitCode> {
    let ProjectPlan {
        ranks,
        basis,
        peers,
        host_mem,
    } = plan;
    let (mirror, basis) = mirror_of(&basis)?;
    let (total, in_use, against) = host_of(g, host_mem)?;
    let outlook = project(ranks, peers, mirror, total, in_use).context("project")?;
    let table: Vec<Vec<String>> = outlook
        .rows
        .iter()
        .map(|r| {
            vec![
                r.ranks.to_string(),
                peers_per_rank(r.ranks, peers).to_string(),
                human_bytes(r.needed),
                if r.fits {
                    "fits".into()
                } else {
                    "does not fit".into()
                },
            ]
        })
        .collect();
    let mut out = format!(
        "Per-peer mirror {} ({basis}), against {against}\n\n",
        human_bytes(mirror)
    );
    out.push_str(&render(
        "  ",
        &[
            ("RANKS", Align::Right),
            ("PEERS EACH", Align::Right),
            ("PINNED HOST RAM", Align::Right),
            ("", Align::Left),
        ],
        &table,
    ));
    out.push('\n');
    out.push_str(&conclusion(&outlook, ranks, peers, mirror));
    super::print(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The per-peer mirror size and where it comes from.
fn mirror_of(basis: &Basis) -> Result<(u64, String)> {
    Ok(match basis {
        Basis::Recording(f) => {
            let rec = gpuledger::recording::open(f).context("project")?;
            let m = peaks(&rec)
                .into_iter()
                .filter(|p| !p.home)
                .map(|p| p.host)
                .max()
                .unwrap_or(0);
            if m == 0 {
                bail!(
                    "{} shows no host-class memory on a peer device: nothing to project",
                    f.display()
                );
            }
            (m, format!("largest per-peer mirror in {}", f.display()))
        }
        Basis::VramPerRank(v) => (*v, "--vram-per-rank".to_string()),
    })
}

/// The host RAM projected against (total, in use, in words): `--host-mem`, else this machine.
fn host_of(g: &Globals, host_mem: Option<u64>) -> Result<(u64, u64, String)> {
    Ok(match host_mem {
        Some(h) => (h, 0, "--host-mem".to_string()),
        None => {
            let mut s = Sampler::new(g.open_root()?, Scope::All, SamplerOptions::default());
            let l = Ledger::from_snapshot(s.sample()?);
            let (Some(t), Some(a)) = (l.host.mem_total, l.host.mem_available) else {
                bail!("MemTotal/MemAvailable not readable: pass --host-mem");
            };
            let used = t.saturating_sub(a);
            (
                t,
                used,
                format!(
                    "this machine ({} total, {} in use now)",
                    human_bytes(t),
                    human_bytes(used)
                ),
            )
        }
    })
}

/// The sentence under the table; it speaks of the rows above it and, when they all fit, of the
/// first rank count beyond them that would not.
fn conclusion(o: &Outlook, ranks: u32, peers: Peers, mirror: u64) -> String {
    match o.first_bad {
        Some(n) if n <= ranks => {
            let need = o.rows.iter().find(|r| r.ranks == n).map_or(0, |r| r.needed);
            format!(
                "The job stops fitting at {n} ranks: {n} × {} × {} = {} of pinned host RAM, with {} free for it.\n",
                peers_per_rank(n, peers),
                human_bytes(mirror),
                human_bytes(need),
                human_bytes(o.room)
            )
        }
        Some(n) => format!("Up to {ranks} ranks fit; the job would stop fitting at {n} ranks.\n"),
        None => format!("Every rank count up to {MAX_RANKS} fits.\n"),
    }
}
