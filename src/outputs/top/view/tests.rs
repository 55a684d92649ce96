use super::*;
use crate::findings::{analyze, Thresholds};
use crate::ledger::{Ledger, SortKey};
use crate::outputs::top::model::{Flow, Scroll};
use crate::root::Root;
use crate::sampler::{Sampler, SamplerOptions, Scope};
use crate::sim::{Backing, LiveWriter, Scenario, SimParams, Simulation};
use crate::tree_writer::TreeWriter;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use std::path::Path;
use std::sync::OnceLock;

fn state_of(dir: &Path) -> State {
    let root = Root::open(dir).unwrap();
    let snap = Sampler::new(root, Scope::All, SamplerOptions::default())
        .sample()
        .unwrap();
    let ledger = Ledger::from_snapshot(snap);
    State {
        findings: analyze(&ledger, &Thresholds::default()),
        ledger,
        history: Default::default(),
    }
}

/// seed-2622 with a comm that would clear the screen, forge a row and reverse the text, and
/// no environment (so the finding names the process by comm).
fn hostile_state() -> State {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed-2622");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(fixture.join("."))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let proc = dir.path().join("proc/116400");
    std::fs::write(proc.join("comm"), "\u{1b}[2Jpwn\nx\u{202e}\u{9b}\n").unwrap();
    std::fs::remove_file(proc.join("environ")).unwrap();
    state_of(dir.path())
}

fn fixture_state(name: &str) -> State {
    state_of(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
}

/// 64 DDP ranks on 64 xe cards, 10 s into the run (registered-only backing: alive, every rank with a
/// context and mirrors on every card): 4,096 process × device rows, 4,032 mirror findings.
fn ranks64() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut p = SimParams::new(Scenario::DdpPeerMirror);
        p.ranks = 64;
        p.backing = Backing::RegisteredOnly;
        let sim = Simulation::new(p);
        let mut w =
            LiveWriter::new(TreeWriter::new(dir.path()).unwrap(), "ddp-peer-mirror").unwrap();
        w.write(&sim.state_at(10.0)).unwrap();
        state_of(dir.path())
    })
}

/// Draws a frame (telling `m` what it showed) and returns the screen's rows as text.
fn screen(state: &State, m: &mut Model, width: u16, height: u16) -> Vec<String> {
    let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
    term.draw(|f| draw(f, state, m)).unwrap();
    let buf = term.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect()
}

fn shot(state: &State, width: u16, height: u16) -> Vec<String> {
    screen(state, &mut Model::new(SortKey::Rank), width, height)
}

fn press(m: &mut Model, code: KeyCode) {
    assert_eq!(
        m.on_key(KeyEvent::new(code, KeyModifiers::NONE)),
        Flow::Continue
    );
}

fn has(rows: &[String], text: &str) -> bool {
    rows.iter().any(|r| r.contains(text))
}

/// The data rows of the process table: rows that start with a pid.
fn table_rows(rows: &[String]) -> Vec<String> {
    rows.iter()
        .map(|r| r.trim_start_matches('│').trim_start().to_string())
        .filter(|r| r.starts_with("40") && r.contains("python3"))
        .collect()
}

/// The screen's rows that start with `device` (inside the devices box).
fn device_row(state: &State, device: &str) -> String {
    shot(state, 160, 40)
        .into_iter()
        .find(|row| row.trim_start_matches('│').starts_with(device))
        .unwrap_or_else(|| panic!("no row for {device}"))
}

#[test]
fn vram_bar_is_drawn_against_the_device_capacity() {
    // 3 GiB held on a 12 GiB B580 (capacity from dmem.capacity): a quarter of the bar.
    let state = fixture_state("xe-suspended");
    let busy = device_row(&state, "0000:03:00.0");
    assert_eq!(busy.matches('█').count(), BAR / 4, "{busy}");
    assert_eq!(busy.matches('░').count(), BAR - BAR / 4, "{busy}");
    assert!(busy.contains("VRAM held 3.0 GiB of 12.0 GiB"), "{busy}");
    // The suspended card still has its capacity, and nothing held.
    let asleep = device_row(&state, "0000:04:00.0");
    assert_eq!(asleep.matches('░').count(), BAR, "{asleep}");
    assert!(asleep.contains("of 12.0 GiB"), "{asleep}");
}

#[test]
fn no_capacity_draws_no_bar() {
    // seed-2622's xe cards have no dmem.capacity: the busiest must not be drawn full.
    let state = fixture_state("seed-2622");
    let row = device_row(&state, "0000:03:00.0");
    assert!(row.contains("no capacity"), "{row}");
    assert!(!row.contains('█') && !row.contains('░'), "{row}");
}

#[test]
fn findings_that_do_not_fit_are_counted() {
    let mut state = fixture_state("seed-2622");
    assert_eq!(state.findings.len(), 3);
    assert!(!has(&shot(&state, 400, 40), " more below"), "3 fit");
    // Twelve of one kind fold into one line, as in the snapshot; twelve kinds would not.
    let three = state.findings.clone();
    state.findings = three.iter().cycle().take(12).cloned().collect();
    crate::findings::rank(&mut state.findings);
    let rows = shot(&state, 400, 40);
    assert!(
        has(
            &rows,
            "CRITICAL peer_mirror: 8 findings, 2 processes × 2 peers"
        ),
        "folded: {}",
        rows.join("\n")
    );
    for x in &mut state.findings {
        x.severity = crate::findings::Severity::Warning;
    }
    state.findings[0].severity = crate::findings::Severity::Critical;
    state.findings.truncate(4);
    state.findings.extend(three.iter().take(4).cloned());
    crate::findings::rank(&mut state.findings);
    for (width, height) in [(400, 30), (120, 30), (60, 30)] {
        let mut m = Model::new(SortKey::Rank);
        let rows = screen(&state, &mut m, width, height);
        let s = m.scroll(Pane::Findings);
        assert!(s.page >= 1, "{width}: the worst finding is always drawn");
        let more = format!("+{} more below", s.len - s.page);
        assert!(
            s.len == s.page || has(&rows, &more),
            "width {width}: want {more:?} in\n{}",
            rows.join("\n")
        );
    }
}

#[test]
fn wrapping_counts_rows_as_the_paragraph_does() {
    let line = Line::from("aaa bbb ccc");
    assert_eq!(wrapped_rows(&line, 11), 1);
    assert_eq!(wrapped_rows(&line, 7), 2);
    assert_eq!(wrapped_rows(&line, 3), 3);
    assert_eq!(wrapped_rows(&Line::from("abcdefgh"), 3), 3);
}

#[test]
fn hostile_comm_is_drawn_escaped() {
    let state = hostile_state();
    let cells = shot(&state, 250, 50).concat();
    assert!(
        !cells.chars().any(crate::outputs::safe_text::is_unsafe_char),
        "raw control characters reached the screen"
    );
    let shown = "\\e[2Jpwn\\nx\\u{202e}\\u{009b}";
    assert!(cells.contains(shown), "escaped comm in the table");
    assert!(
        cells.contains(&format!("pid 116400 ({shown}")),
        "escaped comm in the finding"
    );
}

/// At both sizes: the table starts with rank 0 (the snapshot's order), every pane counts what
/// it hides, PgDn moves the table a page and End reaches the last row.
#[test]
fn sixty_four_ranks_scroll_and_count_what_is_hidden() {
    let state = ranks64();
    for (width, height) in [(80, 24), (200, 50)] {
        let mut m = Model::new(SortKey::Rank);
        let rows = screen(state, &mut m, width, height);
        let all = rows.join("\n");
        let p = m.scroll(Pane::Processes);
        assert_eq!(p.len, 64 * 64, "{width}x{height}");
        assert!(p.page >= 4, "{width}x{height}: {p:?}\n{all}");
        let first = table_rows(&rows);
        assert!(
            first[0].starts_with("4001") && first[0].contains("0000:03:00.0 *"),
            "{all}"
        );
        assert_eq!(first.len(), p.page, "{all}");
        assert!(
            has(&rows, &format!("+{} more below", p.len - p.page)),
            "{all}"
        );
        let d = m.scroll(Pane::Devices);
        assert_eq!(d.len, 64);
        assert!(has(&rows, &format!("+{} more below", 64 - d.page)), "{all}");
        assert!(has(&rows, "sorted by rank, per process × device"), "{all}");
        assert_eq!(
            has(&rows, "/usr/bin/python3 -u train.py"),
            width == 200,
            "command lines only where they fit: {all}"
        );

        press(&mut m, KeyCode::PageDown);
        let rows = screen(state, &mut m, width, height);
        assert_eq!(m.scroll(Pane::Processes).offset, p.page);
        assert!(
            has(&rows, &format!("+{} more above", p.page)),
            "{}",
            rows.join("\n")
        );
        press(&mut m, KeyCode::End);
        let rows = screen(state, &mut m, width, height);
        let last = table_rows(&rows);
        assert!(
            last.last().unwrap().contains("0000:42:00.0"),
            "{}",
            rows.join("\n")
        );
        assert!(!has(&rows, "more below ") || m.scroll(Pane::Processes).below() == 0);
        assert_eq!(m.scroll(Pane::Processes).below(), 0);
    }
}

#[test]
fn findings_are_grouped_worst_first_and_scroll_with_focus() {
    let state = ranks64();
    let mut m = Model::new(SortKey::Rank);
    let rows = screen(state, &mut m, 200, 50);
    let all = rows.join("\n");
    let critical = rows
        .iter()
        .position(|r| r.contains("CRITICAL driver_held_host"));
    let grouped = rows
        .iter()
        .position(|r| r.contains("peer_mirror: 4032 findings, 64 processes × 64 peers"));
    assert!(critical.is_some() && grouped.is_some(), "{all}");
    assert!(critical < grouped, "critical first: {all}");
    assert!(
        has(&rows, "findings 4033 (folded by kind; v lists each)"),
        "{all}"
    );
    // At 80x24 the long critical finding fills the pane; Tab to the findings and PgDn.
    let rows = screen(state, &mut m, 80, 24);
    assert!(has(&rows, "+1 more below"), "{}", rows.join("\n"));
    press(&mut m, KeyCode::Tab);
    assert_eq!(m.focus, Pane::Findings);
    press(&mut m, KeyCode::PageDown);
    let rows = screen(state, &mut m, 80, 24);
    assert!(has(&rows, "+1 more above"), "{}", rows.join("\n"));
    assert!(
        has(&rows, "peer_mirror: 4032 findings"),
        "{}",
        rows.join("\n")
    );
    assert_eq!(
        m.scroll(Pane::Processes),
        Scroll {
            offset: 0,
            ..m.scroll(Pane::Processes)
        }
    );
    // v lists each of them, scrolled from the top.
    press(&mut m, KeyCode::Char('v'));
    let rows = screen(state, &mut m, 200, 50);
    let f = m.scroll(Pane::Findings);
    assert_eq!((f.offset, f.len), (0, 1 + 4032));
    assert!(
        has(&rows, "INFO     peer_mirror: rank 0 (pid 4001, home"),
        "{}",
        rows.join("\n")
    );
    assert!(has(&rows, &format!("+{} more below", f.len - f.page)));
}

#[test]
fn question_mark_draws_the_key_help_over_the_screen() {
    let state = ranks64();
    for (width, height) in [(80, 24), (200, 50)] {
        let mut m = Model::new(SortKey::Rank);
        screen(state, &mut m, width, height);
        press(&mut m, KeyCode::Char('?'));
        let rows = screen(state, &mut m, width, height);
        let all = rows.join("\n");
        for key in [
            "keys (gpuledger top)",
            "PgUp PgDn",
            "Home End",
            "filter processes by name",
            "q Ctrl-C",
        ] {
            assert!(has(&rows, key), "{width}x{height}: {key:?} in\n{all}");
        }
        press(&mut m, KeyCode::Esc);
        assert!(!has(
            &screen(state, &mut m, width, height),
            "keys (gpuledger top)"
        ));
    }
}

#[test]
fn slash_filters_by_pid_name_or_command_line_and_says_so() {
    let state = ranks64();
    let mut m = Model::new(SortKey::Rank);
    screen(state, &mut m, 80, 24);
    press(&mut m, KeyCode::Char('/'));
    for c in "4063".chars() {
        press(&mut m, KeyCode::Char(c));
    }
    let rows = screen(state, &mut m, 80, 24);
    let all = rows.join("\n");
    assert!(rows[23].starts_with(" filter: 4063▏"), "{all}");
    assert!(has(&rows, "processes 1 of 64 match \"4063\""), "{all}");
    let shown = table_rows(&rows);
    assert!(shown.iter().all(|r| r.starts_with("4063")), "{all}");
    press(&mut m, KeyCode::Enter);
    let rows = screen(state, &mut m, 80, 24);
    assert!(
        rows[23].starts_with(" filter: 4063 (Esc clears)"),
        "{}",
        rows[23]
    );
    press(&mut m, KeyCode::Esc);
    let rows = screen(state, &mut m, 80, 24);
    assert!(
        has(&rows, "processes 64 (sorted by rank"),
        "{}",
        rows.join("\n")
    );
    // Every rank's command line names the script, in any case; nothing else matches.
    m.filter = "TRAIN.PY".into();
    let rows = screen(state, &mut m, 80, 24);
    assert!(has(&rows, "64 of 64 match"), "{}", rows.join("\n"));
    m.filter = "nothing-runs-this".into();
    let rows = screen(state, &mut m, 80, 24);
    assert!(table_rows(&rows).is_empty() && has(&rows, "0 of 64 match"));
}

#[test]
fn g_shows_one_row_per_process_with_its_devices_summed() {
    let state = ranks64();
    let mut m = Model::new(SortKey::Rank);
    press(&mut m, KeyCode::Char('g'));
    let rows = screen(state, &mut m, 200, 50);
    let all = rows.join("\n");
    assert_eq!(m.scroll(Pane::Processes).len, 64);
    assert!(has(&rows, "per process)"), "{all}");
    let first = &table_rows(&rows)[0];
    assert!(first.contains("0000:03:00.0 * +63"), "{first}");
    let p = state
        .ledger
        .processes
        .iter()
        .find(|p| p.pid == 4001)
        .unwrap();
    let local: u64 = p
        .devices()
        .iter()
        .map(|d| p.resident(d, MemClass::Device))
        .sum();
    assert!(
        first.contains(&human_bytes(local)),
        "{first} sums {}",
        human_bytes(local)
    );
}

/// seed-2622 after five samples: four with every process's resident bytes halved, then the
/// fixture itself (so every spark rises at its end).
fn with_history() -> State {
    let mut s = fixture_state("seed-2622");
    let mut half = s.ledger.clone();
    for u in half.processes.iter_mut().flat_map(|p| p.usage.iter_mut()) {
        u.resident = u.resident.map(|b| b / 2);
    }
    for _ in 0..4 {
        s.history.push(&half);
    }
    s.history.push(&s.ledger);
    s
}

#[test]
fn at_80x24_nothing_is_cut_and_the_history_follows_the_top_rows() {
    let state = with_history();
    let mut m = Model::new(SortKey::Rank);
    let rows = screen(&state, &mut m, 80, 24);
    assert!(
        rows[0].trim_end().ends_with("driver-held 25.9 GiB"),
        "the driver-held total is whole: {rows:#?}"
    );
    assert!(rows.iter().all(|r| r.chars().count() == 80));
    let history = &rows[20..23];
    assert!(
        history[0].starts_with("machine       driver-held "),
        "{rows:#?}"
    );
    assert!(history[0].contains("█ 25.9 GiB  host "), "{rows:#?}");
    assert!(history[1].starts_with("0000:03:00.0  host "), "{rows:#?}");
    assert!(history[2].starts_with("pid 116400    host "), "{rows:#?}");
    assert!(history[2].contains("▄▄▄▄█ 9.1 GiB  local "), "{rows:#?}");
    // Scrolling the panes moves what the history follows (64 ranks on 64 cards: both scroll).
    let r = ranks64();
    let mut state = State {
        ledger: r.ledger.clone(),
        findings: r.findings.clone(),
        history: Default::default(),
    };
    state.history.push(&state.ledger);
    let mut m = Model::new(SortKey::Rank);
    assert!(has(&screen(&state, &mut m, 80, 24), "pid 4001 "));
    press(&mut m, KeyCode::End);
    let rows = screen(&state, &mut m, 80, 24);
    assert!(
        has(&rows, "pid 4064 ") && !has(&rows, "pid 4001 "),
        "{rows:#?}"
    );
    assert!(has(&rows, "0000:03:00.0  host "), "{rows:#?}");
    press(&mut m, KeyCode::BackTab);
    press(&mut m, KeyCode::End);
    let rows = screen(&state, &mut m, 80, 24);
    assert!(!has(&rows, "0000:03:00.0  host "), "{rows:#?}");
    for shape in [(80, 24), (200, 50)] {
        let rows = screen(&state, &mut Model::new(SortKey::Rank), shape.0, shape.1);
        assert!(has(&rows, "machine"), "{shape:?}: {rows:#?}");
    }
}
