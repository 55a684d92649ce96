//! `top`: the live terminal view (ratatui + crossterm). The terminal is restored on exit and on
//! panic (ratatui's init installs the hook). Keys change the [`Model`]; the frame is drawn from the
//! sampled [`State`] and the model.

pub mod history;
mod model;
mod rows;
mod view;

pub use model::{Flow, Model, Pane, Scroll};

use crate::findings::{Finding, Thresholds};
use crate::ledger::{Filter, Ledger};
use crate::observe::{KernelLog, Observer};
use crate::sampler::{SampleError, Sampler};
use history::History;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::Duration;

pub use crate::ledger::SortKey;

/// How `top` runs.
#[derive(Debug, Clone)]
pub struct TopOptions {
    /// Time between samples.
    pub interval: Duration,
    /// The first sort order (the snapshot's, rank, unless `--sort` says otherwise).
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
    /// Its findings, most severe first (the library's order).
    pub findings: Vec<Finding>,
    /// The last samples' series, for the sparklines.
    pub history: History,
}

/// One sample: the shown ledger and the findings about it, computed on the whole machine.
fn sample(
    sampler: &mut Sampler,
    filter: &Filter,
    observer: &mut Observer,
) -> Result<(Ledger, Vec<Finding>), TopError> {
    let whole = observer.sample(sampler)?;
    let findings = filter.findings(&whole.findings);
    Ok((filter.ledger(whole.ledger), findings))
}

/// What the sampling thread sends: a ledger and its findings, or why sampling stopped.
type Sample = Result<(Ledger, Vec<Finding>), TopError>;

/// Samples every `interval` on a thread of its own, so that keys are answered while a large
/// machine is being read; the thread ends when the view has gone or a sample failed.
fn spawn_sampler(
    mut sampler: Sampler,
    filter: Filter,
    mut observer: Observer,
    interval: Duration,
) -> Receiver<Sample> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::spawn(move || loop {
        std::thread::sleep(interval);
        let s = sample(&mut sampler, &filter, &mut observer);
        let failed = s.is_err();
        if tx.send(s).is_err() || failed {
            return;
        }
    });
    rx
}

impl State {
    /// Takes a new sample in.
    fn push(&mut self, ledger: Ledger, findings: Vec<Finding>) {
        self.findings = findings;
        self.history.push(&ledger);
        self.ledger = ledger;
    }
}

/// How often keys and samples are looked for.
const TICK: Duration = Duration::from_millis(50);

/// Runs the view until `q` or Ctrl-C.
pub fn run(mut sampler: Sampler, opts: &TopOptions, t: &Thresholds) -> Result<(), TopError> {
    let mut observer = Observer::new(t.clone()).kernel_log(KernelLog::Cached);
    let (first, findings) = sample(&mut sampler, &opts.filter, &mut observer)?;
    let mut state = State {
        findings,
        history: History::default(),
        ledger: first,
    };
    state.history.push(&state.ledger);
    let mut model = Model::new(opts.sort);
    let samples = spawn_sampler(sampler, opts.filter.clone(), observer, opts.interval);
    // crossterm reads NO_COLOR itself; the binary has already decided, with --color too.
    ratatui::crossterm::style::force_color_output(opts.color);
    let mut terminal = ratatui::init();
    let result = (|| -> Result<(), TopError> {
        let mut dirty = true;
        loop {
            if dirty {
                terminal.draw(|f| view::draw(f, &state, &mut model))?;
                dirty = false;
            }
            if event::poll(TICK)? {
                match event::read()? {
                    Event::Key(k) if k.kind == KeyEventKind::Press => {
                        if model.on_key(k) == Flow::Quit {
                            return Ok(());
                        }
                        dirty = true;
                    }
                    Event::Resize(..) => dirty = true,
                    _ => {}
                }
            }
            match samples.try_recv() {
                Ok(s) => {
                    let (ledger, findings) = s?;
                    state.push(ledger, findings);
                    dirty = true;
                }
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => return Err(TopError::SamplerStopped),
            }
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
    /// The sampling thread ended without saying why (it panicked).
    #[error("the sampling thread stopped")]
    SamplerStopped,
}
