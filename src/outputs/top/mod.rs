//! `top`: the live terminal view (ratatui + crossterm). The terminal is restored on exit and on
//! panic (ratatui's init installs the hook).

mod view;

use crate::findings::{Finding, Thresholds};
use crate::ledger::{Filter, Ledger, MemClass};
use crate::observe::{KernelLog, Observer};
use crate::sampler::{SampleError, Sampler};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub use crate::ledger::SortKey;

/// The order the `s` key cycles through.
fn next_sort(key: SortKey) -> SortKey {
    match key {
        SortKey::Host => SortKey::Local,
        SortKey::Local => SortKey::Rank,
        SortKey::Rank => SortKey::Pid,
        SortKey::Pid => SortKey::Host,
    }
}

/// How `top` runs.
#[derive(Debug, Clone)]
pub struct TopOptions {
    /// Time between samples.
    pub interval: Duration,
    /// The first sort order.
    pub sort: SortKey,
    /// `--pid`/`--device`: what is shown (findings are computed on the whole machine first).
    pub filter: Filter,
    /// Whether to draw in colour (the binary's one `--color`/NO_COLOR/CLICOLOR_FORCE decision).
    pub color: bool,
}

/// What the view shows.
#[derive(Debug)]
pub struct State {
    /// Latest ledger.
    pub ledger: Ledger,
    /// Its findings.
    pub findings: Vec<Finding>,
    /// Host-class and device-local totals of the last samples, oldest first.
    pub history: VecDeque<(u64, u64)>,
    /// Sort order.
    pub sort: SortKey,
}

const HISTORY: usize = 300;

fn totals(l: &Ledger) -> (u64, u64) {
    (
        l.resident_total(MemClass::Host),
        l.resident_total(MemClass::Device),
    )
}

/// One sample: the shown ledger and the findings about it, computed on the whole machine.
fn sample(
    sampler: &mut Sampler,
    filter: &Filter,
    observer: &mut Observer,
) -> Result<(Ledger, Vec<Finding>), TopError> {
    let whole = observer.sample(sampler)?;
    let findings = filter.findings(&whole.findings);
    Ok((filter.ledger(&whole.ledger), findings))
}

/// Runs the view until `q`, Esc or Ctrl-C.
pub fn run(mut sampler: Sampler, opts: &TopOptions, t: &Thresholds) -> Result<(), TopError> {
    let mut observer = Observer::new(t.clone()).kernel_log(KernelLog::Cached);
    let (first, findings) = sample(&mut sampler, &opts.filter, &mut observer)?;
    let mut state = State {
        findings,
        history: VecDeque::from([totals(&first)]),
        ledger: first,
        sort: opts.sort,
    };
    let interval = opts.interval;
    // crossterm reads NO_COLOR itself; the binary has already decided, with --color too.
    ratatui::crossterm::style::force_color_output(opts.color);
    let mut terminal = ratatui::init();
    let result = (|| -> Result<(), TopError> {
        let mut next = Instant::now() + interval;
        loop {
            terminal.draw(|f| view::draw(f, &state))?;
            let wait = next.saturating_duration_since(Instant::now());
            if event::poll(wait)? {
                if let Event::Key(k) = event::read()? {
                    if k.kind == KeyEventKind::Press {
                        match k.code {
                            KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                            KeyCode::Char('c')
                                if k.modifiers.contains(event::KeyModifiers::CONTROL) =>
                            {
                                return Ok(())
                            }
                            KeyCode::Char('s') => state.sort = next_sort(state.sort),
                            _ => {}
                        }
                    }
                }
                continue;
            }
            next = Instant::now() + interval;
            let (ledger, findings) = sample(&mut sampler, &opts.filter, &mut observer)?;
            state.findings = findings;
            state.history.push_back(totals(&ledger));
            while state.history.len() > HISTORY {
                state.history.pop_front();
            }
            state.ledger = ledger;
        }
    })();
    ratatui::restore();
    result
}

/// The view failed.
#[derive(Debug, thiserror::Error)]
pub enum TopError {
    /// Sampling failed.
    #[error(transparent)]
    Sample(#[from] SampleError),
    /// The terminal failed.
    #[error("terminal")]
    Terminal(#[from] std::io::Error),
}
