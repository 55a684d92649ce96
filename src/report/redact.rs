//! `--redact`: the hostname and user names replaced by `<host>` and `<user>`, only where they stand
//! as whole tokens. A token is bounded by anything but ASCII letters, digits, `_` and `-`, so host
//! `vm` leaves `nested_pvm=1` and `vmlinuz` alone; a dot bounds too, so the short name is found as
//! the first label of an FQDN (`vm.example.org`). User names are replaced where the text says they
//! are one (`/home/NAME`, the kernel's `(NAME@HOST)`), since a short name such as `a` is also a word.

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `text` with every whole-token `name` replaced by `with`.
fn replace_token(text: &str, name: &str, with: &str) -> String {
    if name.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in text.match_indices(name) {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        if i < last || before.is_some_and(is_word) || after.is_some_and(is_word) {
            continue;
        }
        out.push_str(&text[last..i]);
        out.push_str(with);
        last = i + name.len();
    }
    out.push_str(&text[last..]);
    out
}

/// The names to hide for `hostname`: the name as given and its first label, longest first. A
/// one-letter name is not hidden: it cannot be told from a word of the report's own prose.
fn host_names(hostname: Option<&str>) -> Vec<&str> {
    let Some(h) = hostname.map(str::trim).filter(|h| h.len() > 1) else {
        return Vec::new();
    };
    let short = h.split('.').next().unwrap_or(h);
    if short != h && short.len() > 1 {
        vec![h, short]
    } else {
        vec![h]
    }
}

/// `/home/NAME` → `/home/<user>`, NAME ending at the next `/`, whitespace or non-name character.
fn home_dirs(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("/home/") {
        let (head, tail) = rest.split_at(i + "/home/".len());
        out.push_str(head);
        let end = tail
            .find(|c: char| !(is_word(c) || c == '.'))
            .unwrap_or(tail.len());
        out.push_str(if end > 0 { "<user>" } else { "" });
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The kernel's `Linux version … (USER@HOST) …` builder names.
fn kernel_builder(line: &str) -> String {
    if !(line.starts_with("| kernel") || line.contains("Linux version")) {
        return line.to_string();
    }
    let Some(open) = line.find(" (") else {
        return line.to_string();
    };
    let s = open + 2;
    match (line[s..].find('@'), line[s..].find(')')) {
        (Some(at), Some(close)) if at < close => {
            format!("{}<user>@<host>{}", &line[..s], &line[s + close..])
        }
        _ => line.to_string(),
    }
}

/// The report with host and user names replaced.
pub(super) fn redact(text: &str, hostname: Option<&str>, others: &[String]) -> String {
    let mut hosts = host_names(hostname);
    for o in others {
        hosts.extend(host_names(Some(o)));
    }
    // Longest first, so `n7.c.org` goes before `n7` eats its first label.
    hosts.sort_by_key(|h| std::cmp::Reverse(h.len()));
    hosts.dedup();
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut l = kernel_builder(&home_dirs(line));
        for h in &hosts {
            l = replace_token(&l, h, "<host>");
        }
        out.push_str(&l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_names() {
        let t = "| kernel | Linux version 7.1.3 (builder@buildhost) #1 |\ncmd /home/alice/run.py on node7\n";
        let r = redact(t, Some("node7"), &[]);
        assert_eq!(r, "| kernel | Linux version 7.1.3 (<user>@<host>) #1 |\ncmd /home/<user>/run.py on <host>\n");
    }

    #[test]
    fn only_whole_tokens() {
        let t = "nested_pvm=1 vmlinuz kvm vm-2 vm2 vm vm.example.org /vm/x MASTER=vm:29500 /home/a/x a b\n";
        assert_eq!(
            redact(t, Some("vm"), &[]),
            "nested_pvm=1 vmlinuz kvm vm-2 vm2 <host> <host>.example.org /<host>/x MASTER=<host>:29500 /home/<user>/x a b\n"
        );
        assert_eq!(
            redact("n7.c.org n7 n7.c.orgs\n", Some("n7.c.org"), &[]),
            "<host> <host> <host>.c.orgs\n"
        );
        assert_eq!(redact("a a\n", Some("a"), &[]), "a a\n");
        assert_eq!(
            redact(
                "gpu-07 gpu-08.c.org me\n",
                Some("me"),
                &["gpu-07".into(), "gpu-08.c.org".into()]
            ),
            "<host> <host> <host>\n",
            "other nodes' names too"
        );
    }
}
