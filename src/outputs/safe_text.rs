//! Display-safe text: strings read from a machine (comm, cmdline, cgroup paths, environment values,
//! kernel log lines) are attacker-controlled, and a terminal obeys the control sequences in them
//! (`ESC [2J` clears the analyst's screen, a newline forges a table row, U+202E reverses what
//! follows). Every human renderer passes such strings through [`display_safe`]; JSON does not need
//! it (serde escapes control characters) and keeps the exact bytes.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` changes how a terminal or a bidi-aware viewer shows the text around it: C0 controls,
/// DEL, C1 controls (U+0080–U+009F, which some terminals take as CSI and friends), the bidi
/// embedding, override and isolate controls, the implicit direction marks, and the Unicode line and
/// paragraph separators.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with every unsafe character written visibly: `\e` for ESC, `\n`, `\r`, `\t`, `\xNN` for the
/// other ASCII controls and DEL, `\u{NNNN}` for C1 controls and bidi or separator characters.
/// Borrowed (no copy) when nothing needs escaping, which is the common case.
pub fn display_safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\u{1b}' => out.push_str("\\e"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`display_safe`] as an owned `String` (table cells, ratatui spans).
pub fn safe(s: &str) -> String {
    display_safe(s).into_owned()
}

/// A recorded command as one shell line (`sh -c 'sleep 0.3'`), so what is shown can be run
/// again; words with a NUL byte, which no shell can pass, are joined with spaces instead.
pub fn command_line(words: &[String]) -> String {
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_can_be_run_again() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            command_line(&words(&["sh", "-c", "sleep 0.3"])),
            "sh -c 'sleep 0.3'"
        );
        assert_eq!(command_line(&words(&["python3", "a.py"])), "python3 a.py");
        assert_eq!(command_line(&words(&["a\0b"])), "a\0b");
    }
    use proptest::prelude::*;

    #[test]
    fn escapes_what_a_terminal_obeys() {
        assert_eq!(
            display_safe("\u{1b}[2Jgone\nfake row"),
            "\\e[2Jgone\\nfake row"
        );
        assert_eq!(display_safe("a\u{7f}b\u{0}c\u{7}"), "a\\x7fb\\x00c\\x07");
        assert_eq!(display_safe("\u{9b}31m"), "\\u{009b}31m");
        assert_eq!(display_safe("evil\u{202e}gpj.exe"), "evil\\u{202e}gpj.exe");
        assert_eq!(display_safe("x\u{2066}y\u{2069}"), "x\\u{2066}y\\u{2069}");
    }

    #[test]
    fn leaves_ordinary_text_alone() {
        for s in [
            "python3",
            "pt_main_thread",
            "/usr/bin/ℹ️ café 数据",
            "a\\eb",
        ] {
            assert!(matches!(display_safe(s), Cow::Borrowed(_)), "{s}");
        }
    }

    proptest! {
        #[test]
        fn output_never_holds_an_unsafe_char(s in "(?s).{0,200}") {
            let out = display_safe(&s);
            prop_assert!(!out.chars().any(is_unsafe_char), "{:?}", out);
        }
    }
}
