//! What `top` shows, apart from the data: focus, scroll positions, sort, grouping, filter, help.
//! Keys change it here and nowhere else (no terminal needed), and the frame reports back how many
//! rows each pane has and how many it showed ([`Model::fit`]).

use crate::ledger::SortKey;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A pane that scrolls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The device bars.
    Devices,
    /// The process table.
    Processes,
    /// The findings.
    Findings,
}

impl Pane {
    /// Tab order.
    const ORDER: [Pane; 3] = [Pane::Devices, Pane::Processes, Pane::Findings];

    fn index(self) -> usize {
        match self {
            Pane::Devices => 0,
            Pane::Processes => 1,
            Pane::Findings => 2,
        }
    }

    fn next(self) -> Pane {
        Self::ORDER[(self.index() + 1) % 3]
    }

    fn prev(self) -> Pane {
        Self::ORDER[(self.index() + 2) % 3]
    }
}

/// A scroll position: the first shown row of `len`, `page` of them shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scroll {
    /// First shown row.
    pub offset: usize,
    /// Rows in all.
    pub len: usize,
    /// Rows the last frame showed.
    pub page: usize,
}

impl Scroll {
    fn max_offset(&self) -> usize {
        self.len.saturating_sub(self.page.max(1))
    }

    /// Rows hidden above the shown ones.
    pub fn above(&self) -> usize {
        self.offset.min(self.len)
    }

    /// Rows hidden below the shown ones.
    pub fn below(&self) -> usize {
        self.len.saturating_sub(self.offset + self.page)
    }

    fn moved(self, key: KeyCode) -> Scroll {
        let page = self.page.max(1);
        let offset = match key {
            KeyCode::Up => self.offset.saturating_sub(1),
            KeyCode::Down => self.offset + 1,
            KeyCode::PageUp => self.offset.saturating_sub(page),
            KeyCode::PageDown => self.offset + page,
            KeyCode::Home => 0,
            KeyCode::End => usize::MAX,
            _ => self.offset,
        };
        Scroll {
            offset: offset.min(self.max_offset()),
            ..self
        }
    }
}

/// What the caller does after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep drawing.
    Continue,
    /// Leave `top`.
    Quit,
}

/// The view's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// The pane the scroll keys move.
    pub focus: Pane,
    scroll: [Scroll; 3],
    /// Process order.
    pub sort: SortKey,
    /// One row per process (its devices summed) instead of one per process and device.
    pub grouped: bool,
    /// Shown processes match this (name, pid or command line); empty shows all.
    pub filter: String,
    /// Every finding on a line of its own instead of many of one kind and severity folded.
    pub each: bool,
    /// Whether keys are typed into the filter.
    pub editing: bool,
    /// Whether the key help covers the screen.
    pub help: bool,
}

impl Model {
    /// The first state: the process table focused, nothing filtered.
    pub fn new(sort: SortKey) -> Model {
        Model {
            focus: Pane::Processes,
            scroll: [Scroll::default(); 3],
            sort,
            grouped: false,
            filter: String::new(),
            each: false,
            editing: false,
            help: false,
        }
    }

    /// A pane's scroll position.
    pub fn scroll(&self, pane: Pane) -> Scroll {
        self.scroll[pane.index()]
    }

    /// Tells the model how many rows `pane` has and how many the frame showed; keeps the
    /// offset inside them (rows go away as processes exit or the filter narrows).
    pub fn fit(&mut self, pane: Pane, len: usize, page: usize) {
        let s = &mut self.scroll[pane.index()];
        s.len = len;
        s.page = page;
        s.offset = s.offset.min(s.max_offset());
    }

    /// Applies one key press.
    pub fn on_key(&mut self, k: KeyEvent) -> Flow {
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            return Flow::Quit;
        }
        if self.editing {
            self.edit(k.code);
            return Flow::Continue;
        }
        if self.help {
            self.help = false;
            return match k.code {
                KeyCode::Char('q') => Flow::Quit,
                _ => Flow::Continue,
            };
        }
        match k.code {
            KeyCode::Char('q') => return Flow::Quit,
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('/') => self.editing = true,
            KeyCode::Esc => self.set_filter(String::new()),
            KeyCode::Char('g') => {
                self.grouped = !self.grouped;
                self.scroll[Pane::Processes.index()].offset = 0;
            }
            KeyCode::Char('v') => {
                self.each = !self.each;
                self.scroll[Pane::Findings.index()].offset = 0;
            }
            KeyCode::Char('s') => self.sort = next_sort(self.sort),
            KeyCode::Tab => self.focus = self.focus.next(),
            KeyCode::BackTab => self.focus = self.focus.prev(),
            code => {
                let s = &mut self.scroll[self.focus.index()];
                *s = s.moved(code);
            }
        }
        Flow::Continue
    }

    fn edit(&mut self, code: KeyCode) {
        match code {
            KeyCode::Esc => {
                self.editing = false;
                self.set_filter(String::new());
            }
            KeyCode::Enter => self.editing = false,
            KeyCode::Backspace => {
                let mut f = self.filter.clone();
                f.pop();
                self.set_filter(f);
            }
            KeyCode::Char(c) if !c.is_control() => {
                let f = format!("{}{c}", self.filter);
                self.set_filter(f);
            }
            _ => {}
        }
    }

    /// A new filter shows its matches from the top.
    fn set_filter(&mut self, filter: String) {
        if filter != self.filter {
            self.scroll[Pane::Processes.index()].offset = 0;
        }
        self.filter = filter;
    }
}

/// The order the `s` key cycles through, from the snapshot's own (rank).
fn next_sort(key: SortKey) -> SortKey {
    match key {
        SortKey::Rank => SortKey::Host,
        SortKey::Host => SortKey::Local,
        SortKey::Local => SortKey::Pid,
        SortKey::Pid => SortKey::Rank,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(m: &mut Model, code: KeyCode) -> Flow {
        m.on_key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn typed(m: &mut Model, text: &str) {
        for c in text.chars() {
            press(m, KeyCode::Char(c));
        }
    }

    /// 100 process rows, 10 on screen.
    fn hundred() -> Model {
        let mut m = Model::new(SortKey::Rank);
        m.fit(Pane::Processes, 100, 10);
        m
    }

    #[test]
    fn scroll_keys_move_the_focused_pane_within_its_rows() {
        let mut m = hundred();
        let at = |m: &Model| m.scroll(Pane::Processes).offset;
        press(&mut m, KeyCode::Up);
        assert_eq!(at(&m), 0, "nothing above the first row");
        press(&mut m, KeyCode::Down);
        assert_eq!(at(&m), 1);
        press(&mut m, KeyCode::PageDown);
        assert_eq!(at(&m), 11);
        press(&mut m, KeyCode::PageUp);
        assert_eq!(at(&m), 1);
        press(&mut m, KeyCode::End);
        assert_eq!(at(&m), 90, "the last page is full");
        press(&mut m, KeyCode::PageDown);
        assert_eq!(at(&m), 90);
        let s = m.scroll(Pane::Processes);
        assert_eq!((s.above(), s.below()), (90, 0));
        press(&mut m, KeyCode::Home);
        assert_eq!(at(&m), 0);
        assert_eq!(m.scroll(Pane::Processes).below(), 90);
    }

    #[test]
    fn tab_moves_the_focus_and_the_keys_follow_it() {
        let mut m = hundred();
        m.fit(Pane::Findings, 30, 5);
        press(&mut m, KeyCode::Tab);
        assert_eq!(m.focus, Pane::Findings);
        press(&mut m, KeyCode::PageDown);
        assert_eq!(m.scroll(Pane::Findings).offset, 5);
        assert_eq!(m.scroll(Pane::Processes).offset, 0, "unfocused pane stays");
        press(&mut m, KeyCode::Tab);
        assert_eq!(m.focus, Pane::Devices);
        press(&mut m, KeyCode::BackTab);
        press(&mut m, KeyCode::BackTab);
        assert_eq!(m.focus, Pane::Processes);
    }

    #[test]
    fn fewer_rows_pull_the_offset_back() {
        let mut m = hundred();
        press(&mut m, KeyCode::End);
        m.fit(Pane::Processes, 15, 10);
        assert_eq!(m.scroll(Pane::Processes).offset, 5);
        m.fit(Pane::Processes, 3, 10);
        assert_eq!(m.scroll(Pane::Processes).offset, 0);
        assert_eq!(m.scroll(Pane::Processes).below(), 0);
    }

    #[test]
    fn slash_types_a_filter_that_escape_clears() {
        let mut m = hundred();
        press(&mut m, KeyCode::PageDown);
        press(&mut m, KeyCode::Char('/'));
        assert!(m.editing);
        typed(&mut m, "py?q");
        assert_eq!(m.filter, "py?q", "? and q are text while typing");
        assert!(!m.help);
        assert_eq!(
            m.scroll(Pane::Processes).offset,
            0,
            "matches shown from the top"
        );
        press(&mut m, KeyCode::Backspace);
        press(&mut m, KeyCode::Enter);
        assert_eq!((m.filter.as_str(), m.editing), ("py?", false));
        press(&mut m, KeyCode::Esc);
        assert_eq!(m.filter, "");
        press(&mut m, KeyCode::Char('/'));
        typed(&mut m, "x");
        press(&mut m, KeyCode::Esc);
        assert_eq!((m.filter.as_str(), m.editing), ("", false));
        assert_eq!(
            press(&mut m, KeyCode::Esc),
            Flow::Continue,
            "Esc never quits"
        );
    }

    #[test]
    fn question_mark_opens_help_and_any_key_closes_it() {
        let mut m = hundred();
        press(&mut m, KeyCode::Char('?'));
        assert!(m.help);
        press(&mut m, KeyCode::PageDown);
        assert!(!m.help);
        assert_eq!(
            m.scroll(Pane::Processes).offset,
            0,
            "the closing key only closes"
        );
        press(&mut m, KeyCode::Char('?'));
        assert_eq!(press(&mut m, KeyCode::Char('q')), Flow::Quit);
    }

    #[test]
    fn g_groups_v_unfolds_s_sorts_q_and_ctrl_c_quit() {
        let mut m = hundred();
        m.fit(Pane::Findings, 30, 5);
        press(&mut m, KeyCode::Tab);
        press(&mut m, KeyCode::PageDown);
        press(&mut m, KeyCode::Char('v'));
        assert!(m.each);
        assert_eq!(m.scroll(Pane::Findings).offset, 0, "listed from the top");
        press(&mut m, KeyCode::Char('v'));
        assert!(!m.each);
        press(&mut m, KeyCode::Char('g'));
        assert!(m.grouped);
        press(&mut m, KeyCode::Char('g'));
        assert!(!m.grouped);
        let mut seen = vec![m.sort];
        for _ in 0..4 {
            press(&mut m, KeyCode::Char('s'));
            seen.push(m.sort);
        }
        assert_eq!(
            seen,
            [
                SortKey::Rank,
                SortKey::Host,
                SortKey::Local,
                SortKey::Pid,
                SortKey::Rank
            ]
        );
        assert_eq!(press(&mut m, KeyCode::Char('q')), Flow::Quit);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        m.editing = true;
        assert_eq!(m.on_key(ctrl_c), Flow::Quit, "also while typing a filter");
    }
}
