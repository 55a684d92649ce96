//! Putting untrusted text into Markdown. Process names, command lines, environment values, device
//! names and paths come from the machine or a capture, so whoever named a process controls them.
//! Plain text is HTML-escaped and has its Markdown punctuation backslash-escaped; verbatim text
//! goes into code spans and fences longer than any backtick run it holds, so nothing in it can
//! close them. Control characters (ESC, newlines in a table cell, bidi overrides) are shown as
//! `\n`, `\x1b`, `\u{202e}` so that the report neither breaks its layout nor drives a terminal.

use std::borrow::Cow;

fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with the report's hidden host names replaced (`--redact`, before any escaping) and
/// control, zero-width and bidi characters written as escapes; `keep_newlines` leaves line
/// breaks alone (for multi-line verbatim text such as lspci output).
pub(crate) fn visible(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    match crate::redact::hosts::hide_hosts(s) {
        Cow::Borrowed(b) => controls_visible(b, keep_newlines),
        Cow::Owned(o) => Cow::Owned(controls_visible(&o, keep_newlines).into_owned()),
    }
}

fn controls_visible(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !s
        .chars()
        .any(|c| is_hidden(c) && !(keep_newlines && c == '\n'))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' if keep_newlines => out.push('\n'),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if is_hidden(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Plain Markdown text (a table cell, a list item, a heading): controls made visible, `& < >` as
/// HTML entities (quotes need none: Markdown text is never inside an HTML attribute) and the
/// punctuation that starts emphasis, links, code or a table cell backslash-escaped, so the text
/// renders as itself. Words GitHub would turn into live links or notifications (`@user`, `#123`,
/// `owner/repo#1`, URLs, `www.` names; backslashes do not stop its autolinks) go into code
/// spans instead, where it links nothing.
pub(crate) fn text(s: &str) -> String {
    let v = visible(s, false);
    let mut out = String::with_capacity(v.len());
    for (i, word) in v.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if links(word) {
            out.push_str(&code_cell(word));
        } else {
            escape_into(&mut out, word);
        }
    }
    out
}

/// Whether GitHub would make `word` a link, a mention or an issue reference.
fn links(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    word.contains('@')
        || lower.contains("://")
        || lower.contains("www.")
        || word
            .split('#')
            .skip(1)
            .any(|after| after.starts_with(|c: char| c.is_ascii_alphanumeric()))
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// An inline code span that shows `s` verbatim (controls made visible). Outside a table.
pub(crate) fn code(s: &str) -> String {
    let v = visible(s, false);
    let ticks = "`".repeat(longest_backtick_run(&v) + 1);
    // A span that starts or ends with a backtick or a space needs one space of padding, which
    // CommonMark strips again.
    let pad = if v.starts_with(['`', ' ']) || v.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{v}{pad}{ticks}")
}

/// A code span inside a table row: as [`code`], with `|` escaped, since GFM splits cells on every
/// unescaped pipe, even inside code spans (and unescapes `\|` there).
pub(crate) fn code_cell(s: &str) -> String {
    code(s).replace('|', "\\|")
}

/// A fenced block around `body`, whose lines are already free of control characters: the fence
/// is longer than any backtick run in it, so no line of the body can close it.
pub(crate) fn fenced(body: &str) -> String {
    let fence = "`".repeat(longest_backtick_run(body).max(2) + 1);
    let mut out = format!("{fence}\n{body}");
    if !body.is_empty() && !body.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cannot_open_html_or_links() {
        assert_eq!(
            text("<script>alert('x')</script> [a](b) *c* a|b"),
            "&lt;script&gt;alert('x')&lt;/script&gt; \\[a\\](b) \\*c\\* a\\|b"
        );
        assert_eq!(text("a\nb\u{1b}[31m"), "a\\\\nb\\\\x1b\\[31m");
    }

    #[test]
    fn mentions_issue_references_and_urls_become_code() {
        assert_eq!(
            text("ask @torvalds about #1 and a/b#22 at https://x.org/p or www.x.org, not C# or #"),
            "ask `@torvalds` about `#1` and `a/b#22` at `https://x.org/p` or `www.x.org,` not C# or #"
        );
        assert_eq!(
            text("a|@b"),
            "`a\\|@b`",
            "a pipe in a table cell stays escaped"
        );
    }

    #[test]
    fn code_spans_and_fences_outlast_the_backticks_inside() {
        assert_eq!(code("ls"), "`ls`");
        assert_eq!(code("a ``b`` c"), "```a ``b`` c```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code_cell("a|b"), "`a\\|b`");
        assert_eq!(fenced("x\n````\ny"), "`````\nx\n````\ny\n`````\n");
        assert_eq!(fenced("x\n"), "```\nx\n```\n");
    }

    #[test]
    fn controls_become_visible() {
        assert_eq!(
            visible("a\u{1b}b\u{202e}c\td", false),
            "a\\x1bb\\u{202e}c\\td"
        );
        assert_eq!(visible("a\nb\r", true), "a\nb\\r");
        assert!(matches!(visible("plain", false), Cow::Borrowed(_)));
    }
}
