//! Text folded to a width: the terminal's, `COLUMNS` when set, or not folded at all when output
//! goes to a pipe or a file (one finding per line, for grep and logs).

/// Columns of the library's plain renderings (`render_snapshot`, `render_text`, `render_diff`)
/// and of a terminal whose size cannot be read.
pub const DEFAULT_WIDTH: usize = 80;

/// A width no line reaches: text is not folded (stdout is a pipe or a file and `COLUMNS` is not
/// set, as `ls` and `git` do).
pub const UNBOUNDED: usize = usize::MAX;

/// Narrowest text column wrapped to; a narrower terminal gets lines this long.
const MIN_COLUMN: usize = 16;

/// Where a word longer than a line may break: after these, inside paths and ids.
fn breaks_inside(c: char) -> bool {
    matches!(c, '/' | ',' | '-' | '_' | ':')
}

/// Words that stay on the line of the number before them.
const UNITS: [&str; 9] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "%", "s", "ms"];

/// `text` split into lines of at most `width` characters (at least [`MIN_COLUMN`]): broken
/// between words (a number keeps its unit); a word longer than a line breaks after a slash,
/// comma, dash, underscore or colon, else where the line ends.
pub fn lines(text: &str, width: usize) -> Vec<String> {
    fold(text, width, width)
}

/// The pieces a line may end after, each with its trailing space: words (a unit joined to its
/// number), and the parts of a word longer than `longest`.
fn pieces(text: &str, longest: usize) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for w in text.split(' ') {
        match words.last_mut() {
            Some(last)
                if UNITS.contains(&w.trim_end_matches([',', ';', ':', ')', '.']))
                    && !last.trim_end().is_empty() =>
            {
                last.push_str(w);
                last.push(' ');
            }
            _ => words.push(format!("{w} ")),
        }
    }
    if let Some(last) = words.last_mut() {
        last.pop();
    }
    let mut out = Vec::new();
    for w in words {
        if w.trim_end().chars().count() <= longest {
            out.push(w);
            continue;
        }
        let mut piece = String::new();
        for c in w.chars() {
            piece.push(c);
            if breaks_inside(c) {
                out.push(std::mem::take(&mut piece));
            }
        }
        if !piece.is_empty() {
            out.push(piece);
        }
    }
    out
}

/// [`lines`] with the first line `first` wide and the others `rest` wide.
fn fold(text: &str, first: usize, rest: usize) -> Vec<String> {
    let (first, rest) = (first.max(MIN_COLUMN), rest.max(MIN_COLUMN));
    let pieces = pieces(text, first.min(rest));
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut cols = 0;
    for p in pieces {
        let width = if out.is_empty() { first } else { rest };
        let visible = p.trim_end_matches(' ').chars().count();
        if cols > 0 && cols + visible > width {
            out.push(line.trim_end().to_string());
            line.clear();
            cols = 0;
        }
        if cols == 0 {
            let p = p.trim_start_matches(' ');
            for c in p.chars() {
                let width = if out.is_empty() { first } else { rest };
                if cols == width && c != ' ' {
                    out.push(std::mem::take(&mut line));
                    cols = 0;
                }
                line.push(c);
                cols += 1;
            }
        } else {
            line.push_str(&p);
            cols += p.chars().count();
        }
    }
    if !line.trim_end().is_empty() || out.is_empty() {
        out.push(line.trim_end().to_string());
    }
    out
}

/// `text` after `first` (shown `first_cols` wide, which colour codes make differ from its
/// length), continued on lines indented by `hang` spaces; every line at most `width` columns
/// where the words allow, each ending in a newline.
pub fn hanging(first: &str, first_cols: usize, hang: usize, text: &str, width: usize) -> String {
    let mut out = String::from(first);
    let pad = " ".repeat(hang);
    let folded = fold(
        text,
        width.saturating_sub(first_cols),
        width.saturating_sub(hang),
    );
    for (i, l) in folded.iter().enumerate() {
        if i > 0 {
            out.push_str(&pad);
        }
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// A paragraph: every line starts with `indent`, continuation lines with two more spaces.
pub fn paragraph(indent: &str, text: &str, width: usize) -> String {
    hanging(indent, indent.len(), indent.len() + 2, text, width)
}

/// Every line of `text` longer than `width` columns wrapped at words, its continuation lines
/// indented two spaces more than the line itself; lines that fit are kept as they are.
pub fn fit(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.chars().count() <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        out.push_str(&hanging(
            indent,
            indent.len(),
            indent.len() + 2,
            body,
            width,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_wraps_only_long_lines_under_their_indent() {
        let text = "short\n  a long line of words that goes past the width\n";
        let got = fit(text, 20);
        assert!(
            got.starts_with("short\n  a long line of\n    words"),
            "{got}"
        );
        assert!(got.lines().all(|l| l.chars().count() <= 20), "{got}");
        assert_eq!(fit("fits\n", 20), "fits\n");
    }

    #[test]
    fn words_stay_whole_and_lines_fit() {
        let text =
            "the GPU driver holds 25.9 GiB of host RAM (GPUActive 25.9 GiB, 40 % of MemTotal)";
        let l = lines(text, 30);
        assert!(l.iter().all(|x| x.chars().count() <= 30), "{l:?}");
        assert_eq!(l.join(" "), text);
        assert_eq!(l[0], "the GPU driver holds 25.9 GiB");
    }

    #[test]
    fn long_paths_break_after_slashes_and_anything_longer_is_cut() {
        let l = lines("/kubepods.slice/kubepods-burstable.slice/x", 20);
        assert_eq!(l, ["/kubepods.slice/", "kubepods-", "burstable.slice/x"]);
        let l = lines(&"a".repeat(40), 16);
        assert_eq!(l, ["a".repeat(16), "a".repeat(16), "a".repeat(8)]);
    }

    #[test]
    fn hanging_indent_keeps_the_first_line_beside_its_label() {
        let s = hanging(
            "  CRITICAL  ",
            12,
            12,
            "peer_mirror: one two three four",
            30,
        );
        assert_eq!(
            s,
            "  CRITICAL  peer_mirror: one\n            two three four\n"
        );
        assert_eq!(hanging("  x ", 4, 4, "", 30), "  x \n");
    }

    #[test]
    fn a_number_keeps_its_unit_and_names_stay_whole() {
        let l = lines("driver-held 25.9 GiB of driver_held_host", 19);
        assert_eq!(l, ["driver-held", "25.9 GiB of", "driver_held_host"]);
        let l = lines("held 25.9 GiB of driver_held_host", 16);
        assert_eq!(l, ["held 25.9 GiB of", "driver_held_host"]);
    }

    #[test]
    fn empty_text_is_one_empty_line() {
        assert_eq!(lines("", 20), [""]);
    }
}
