//! `top`: the live terminal view (ratatui + crossterm). The terminal is restored on exit and on
//! panic (ratatui's init installs the hook).

mod view;

use crate::findings::{analyze, Finding, Thresholds};
use crate::ledger::{Ledger, MemClass};
use crate::sampler::{SampleError, Sampler};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How the process table is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Host-class bytes, largest first.
    Host,
    /// Device-local bytes, largest first.
    Local,
    /// Rank, then pid.
    Rank,
    /// Pid.
    Pid,
}

impl SortKey {
    fn next(self) -> SortKey {
        match self {
            SortKey::Host => SortKey::Local,
            SortKey::Local => SortKey::Rank,
            SortKey::Rank => SortKey::Pid,
            SortKey::Pid => SortKey::Host,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SortKey::Host => "host-class",
            SortKey::Local => "device-local",
            SortKey::Rank => "rank",
            SortKey::Pid => "pid",
        }
    }
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

/// Runs the view until `q`, Esc or Ctrl-C.
pub fn run(mut sampler: Sampler, interval: Duration, t: &Thresholds) -> Result<(), TopError> {
    let first = Ledger::from_snapshot(&sampler.sample()?);
    let mut state = State {
        findings: analyze(&first, t),
        history: VecDeque::from([totals(&first)]),
        ledger: first,
        sort: SortKey::Host,
    };
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
                            KeyCode::Char('s') => state.sort = state.sort.next(),
                            _ => {}
                        }
                    }
                }
                continue;
            }
            next = Instant::now() + interval;
            let ledger = Ledger::from_snapshot(&sampler.sample()?);
            state.findings = analyze(&ledger, t);
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
