//! `report --redact`: the hostname and user names replaced by `<host>` and `<user>`, only where they stand
//! as whole tokens. A token is bounded by anything but ASCII letters, digits, `_` and `-`, so host
//! `vm` leaves `nested_pvm=1` and `vmlinuz` alone; a dot bounds too, so the short name is found as
//! the first label of an FQDN (`vm.example.org`). User names are replaced where the text says they
//! are one (`/home/NAME`, the kernel's `(NAME@HOST)`), since a short name such as `a` is also a word.

use std::borrow::Cow;
use std::cell::RefCell;

thread_local! {
    /// The host names hidden while a report renders ([`with_hosts`]).
    static HOSTS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Runs `render` with `hosts` hidden in every piece of text the report escapes
/// ([`hide_hosts`] is the first step of `escape::visible`), so a name is replaced before
/// Markdown escaping can turn `gpu_node_17` into `gpu\_node\_17`. The list is cleared after,
/// also when `render` panics.
pub(crate) fn with_hosts<T>(hosts: &[String], render: impl FnOnce() -> T) -> T {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            HOSTS.with(|h| h.borrow_mut().clear());
        }
    }
    HOSTS.with(|h| *h.borrow_mut() = hosts.to_vec());
    let _clear = Clear;
    render()
}

/// `text` with the host names of the report being rendered replaced by `<host>`.
pub(crate) fn hide_hosts(text: &str) -> Cow<'_, str> {
    HOSTS.with(|h| {
        let hosts = h.borrow();
        if !hosts.iter().any(|n| text.contains(n.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_string();
        for n in hosts.iter() {
            out = replace_token(&out, n, "<host>");
        }
        Cow::Owned(out)
    })
}

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
    // The builder is in the first parenthesis, which may sit in a code span: `(USER@HOST)`.
    let Some(open) = line.find('(') else {
        return line.to_string();
    };
    let s = open + 1;
    match (line[s..].find('@'), line[s..].find(')')) {
        (Some(at), Some(close)) if at < close => {
            format!("{}<user>@<host>{}", &line[..s], &line[s + close..])
        }
        _ => line.to_string(),
    }
}

/// Every name to hide for a report: each host name given and its first label, longest first
/// (so `n7.c.org` goes before `n7` eats its first label).
pub(crate) fn host_list<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut hosts: Vec<String> = names
        .into_iter()
        .flat_map(|n| host_names(Some(n)))
        .map(String::from)
        .collect();
    hosts.sort_by_key(|h| std::cmp::Reverse(h.len()));
    hosts.dedup();
    hosts
}

/// The report with host and user names replaced.
pub(crate) fn redact(text: &str, hosts: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut l = kernel_builder(&home_dirs(line));
        for h in hosts {
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
        let r = redact(t, &host_list(["node7"]));
        assert_eq!(r, "| kernel | Linux version 7.1.3 (<user>@<host>) #1 |\ncmd /home/<user>/run.py on <host>\n");
    }

    #[test]
    fn only_whole_tokens() {
        let t = "nested_pvm=1 vmlinuz kvm vm-2 vm2 vm vm.example.org /vm/x MASTER=vm:29500 /home/a/x a b\n";
        assert_eq!(
            redact(t, &host_list(["vm"])),
            "nested_pvm=1 vmlinuz kvm vm-2 vm2 <host> <host>.example.org /<host>/x MASTER=<host>:29500 /home/<user>/x a b\n"
        );
        assert_eq!(
            redact("n7.c.org n7 n7.c.orgs\n", &host_list(["n7.c.org"])),
            "<host> <host> <host>.c.orgs\n"
        );
        assert_eq!(redact("a a\n", &host_list(["a"])), "a a\n");
        assert_eq!(
            redact(
                "gpu-07 gpu-08.c.org me\n",
                &host_list(["me", "gpu-07", "gpu-08.c.org"])
            ),
            "<host> <host> <host>\n",
            "other nodes' names too"
        );
    }

    #[test]
    fn hosts_are_hidden_before_escaping() {
        let hosts = host_list(["gpu_node_17"]);
        let inside = with_hosts(&hosts, || hide_hosts("ran on gpu_node_17.").into_owned());
        assert_eq!(inside, "ran on <host>.");
        assert_eq!(
            hide_hosts("gpu_node_17"),
            "gpu_node_17",
            "only while rendering"
        );
    }
}
