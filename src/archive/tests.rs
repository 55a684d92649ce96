use super::*;

fn archive_with(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> tempfile::NamedTempFile {
    let mut b = tar::Builder::new(Vec::new());
    build(&mut b);
    let data = b.into_inner().unwrap();
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), data).unwrap();
    f
}

fn header(kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o644);
    h
}

fn raw_name(h: &mut tar::Header, name: &str) {
    let gnu = h.as_gnu_mut().unwrap();
    gnu.name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_cksum();
}

#[test]
fn refuses_dot_dot_and_absolute_paths() {
    for bad in ["../evil", "/etc/evil", "proc/../../evil"] {
        let f = archive_with(|b| {
            let mut h = header(tar::EntryType::Regular, 1);
            raw_name(&mut h, bad);
            b.append(&h, &b"x"[..]).unwrap();
        });
        let err = extract(f.path()).unwrap_err().to_string();
        assert!(err.contains("absolute or '..' path"), "{bad}: {err}");
    }
}

#[test]
fn refuses_device_files() {
    let f = archive_with(|b| {
        let mut h = header(tar::EntryType::Char, 0);
        raw_name(&mut h, "proc/kcore");
        b.append(&h, &b""[..]).unwrap();
    });
    let err = extract(f.path()).unwrap_err().to_string();
    assert!(
        err.contains("proc/kcore") && err.contains("device"),
        "{err}"
    );
}

#[test]
fn refuses_huge_files() {
    let f = archive_with(|b| {
        let mut h = header(tar::EntryType::Regular, MAX_ENTRY_BYTES + 1);
        raw_name(&mut h, "proc/meminfo");
        b.append(&h, io::repeat(0).take(MAX_ENTRY_BYTES + 1))
            .unwrap();
    });
    let err = extract(f.path()).unwrap_err().to_string();
    assert!(err.contains("larger than 16 MiB"), "{err}");
}

#[test]
fn pack_and_extract_round_trip_keeps_symlinks() {
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join("proc/7/fd")).unwrap();
    std::fs::write(src.path().join("proc/meminfo"), "MemTotal: 4 kB\n").unwrap();
    std::os::unix::fs::symlink("/dev/dri/renderD128", src.path().join("proc/7/fd/3")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("snap.tar.zst");
    pack(src.path(), &file).unwrap();
    let dir = extract(&file).unwrap();
    let base = tree_base(dir.path());
    assert_eq!(
        std::fs::read_to_string(base.join("proc/meminfo")).unwrap(),
        "MemTotal: 4 kB\n"
    );
    assert_eq!(
        std::fs::read_link(base.join("proc/7/fd/3")).unwrap(),
        PathBuf::from("/dev/dri/renderD128")
    );
}

#[test]
fn garbage_is_a_clear_error() {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), [0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3]).unwrap();
    let err = extract(f.path()).unwrap_err().to_string();
    assert!(err.contains("cannot read capture archive"), "{err}");
}

/// A zstd-compressed tar built by `build`, written to a temporary file.
fn zst_archive(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> tempfile::NamedTempFile {
    let plain = archive_with(build);
    let data = zstd::encode_all(std::fs::read(plain.path()).unwrap().as_slice(), 3).unwrap();
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), data).unwrap();
    f
}

fn symlink_entry(b: &mut tar::Builder<Vec<u8>>, name: &str, target: &str) {
    let mut h = header(tar::EntryType::Symlink, 0);
    b.append_link(&mut h, name, target).unwrap();
}

fn file_entry(b: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]) {
    let mut h = header(tar::EntryType::Regular, data.len() as u64);
    b.append_data(&mut h, name, data).unwrap();
}

fn entries_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn a_symlink_then_a_file_through_it_writes_nothing_outside() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().to_str().unwrap().to_string();
    for link in [target.as_str(), "../../../../../../../../tmp"] {
        let f = archive_with(|b| {
            symlink_entry(b, "esc", link);
            file_entry(b, "esc/pwned", b"owned");
            file_entry(b, "proc/meminfo", b"MemTotal: 1 kB\n");
        });
        let sandbox = tempfile::tempdir().unwrap();
        let err = extract_in(f.path(), sandbox.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"esc\""), "{link}: {err}");
        assert_eq!(entries_in(outside.path()), 0, "{link}: wrote outside");
        assert!(!Path::new("/tmp/pwned").exists());
        assert_eq!(
            entries_in(sandbox.path()),
            0,
            "a refused archive leaves nothing"
        );
    }
}

#[test]
fn a_top_level_link_to_slash_is_not_the_root() {
    let f = archive_with(|b| symlink_entry(b, "x", "/"));
    let root = crate::root::Root::open(f.path()).unwrap();
    assert!(
        root.read("proc/meminfo").is_err(),
        "must not read this machine"
    );
    assert!(
        root.read("x/proc/meminfo").is_err(),
        "links resolve inside the root"
    );
    assert!(root.list_dir("proc").is_err());
}

#[test]
fn a_gnu_long_name_bomb_is_refused_within_the_header_budget() {
    let f = zst_archive(|b| {
        let mut h = header(tar::EntryType::GNULongName, 128 << 20);
        raw_name(&mut h, "././@LongLink");
        b.append(&h, io::repeat(b'a').take(128 << 20)).unwrap();
        file_entry(b, "proc/meminfo", b"x");
    });
    assert!(std::fs::metadata(f.path()).unwrap().len() < 200_000);
    let start = std::time::Instant::now();
    let err = extract(f.path()).unwrap_err().to_string();
    assert!(err.contains("exceed 64 KiB"), "{err}");
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
}

#[test]
fn a_pax_record_bomb_is_refused_within_the_header_budget() {
    let f = zst_archive(|b| {
        let mut h = header(tar::EntryType::XHeader, 128 << 20);
        raw_name(&mut h, "PaxHeader");
        let record = b"20 comment=aaaaaaaa\n".repeat((128 << 20) / 20);
        b.append(&h, record.as_slice()).unwrap();
        file_entry(b, "proc/meminfo", b"x");
    });
    let err = extract(f.path()).unwrap_err().to_string();
    assert!(err.contains("exceed 64 KiB"), "{err}");
}

#[test]
fn too_many_entries_are_refused_before_anything_is_written() {
    let f = zst_archive(|b| {
        for i in 0..=MAX_ENTRIES {
            let mut h = header(tar::EntryType::Directory, 0);
            b.append_data(&mut h, format!("d{i}"), io::empty()).unwrap();
        }
    });
    let sandbox = tempfile::tempdir().unwrap();
    let start = std::time::Instant::now();
    let err = extract_in(f.path(), sandbox.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than 200000 entries"), "{err}");
    assert_eq!(entries_in(sandbox.path()), 0);
    assert!(start.elapsed().as_secs() < 10, "took {:?}", start.elapsed());
}

#[test]
fn hostile_link_orders_cannot_escape() {
    // A link whose parent is itself a link, and a link over an existing directory.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().to_str().unwrap().to_string();
    let f = archive_with(|b| {
        symlink_entry(b, "a", &target);
        symlink_entry(b, "a/b", "/etc");
    });
    assert!(extract(f.path()).is_err());
    assert_eq!(entries_in(outside.path()), 0);
}

/// One pax extended-header record, `"<len> <key>=<value>\n"`, its length counting itself.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while format!("{len}{body}").len() != len {
        len += 1;
    }
    format!("{len}{body}").into_bytes()
}

/// A regular file whose ustar header says 0 bytes and whose pax record says `size`, followed by
/// `size` bytes of data: what the tar reader unpacks.
fn pax_sized_entry<W: io::Write>(b: &mut tar::Builder<W>, name: &str, size: u64) {
    let record = pax_record("size", &size.to_string());
    let mut x = header(tar::EntryType::XHeader, record.len() as u64);
    raw_name(&mut x, "PaxHeader");
    b.append(&x, record.as_slice()).unwrap();
    let mut h = header(tar::EntryType::Regular, 0);
    raw_name(&mut h, name);
    b.append(&h, io::repeat(0).take(size)).unwrap();
}

#[test]
fn a_pax_size_counts_against_the_entry_cap() {
    let f = archive_with(|b| pax_sized_entry(b, "proc/meminfo", MAX_ENTRY_BYTES + 1));
    let sandbox = tempfile::tempdir().unwrap();
    let err = extract_in(f.path(), sandbox.path()).unwrap_err();
    assert!(
        matches!(
            err,
            ArchiveError::OverBudget {
                limit: Limit::EntryBytes,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(entries_in(sandbox.path()), 0);
}

#[test]
fn pax_sizes_count_against_the_total_before_anything_is_written() {
    // The shape: ustar size 0 and a pax `size=61440` per entry, 1.2 GiB in all.
    let f = tempfile::NamedTempFile::new().unwrap();
    {
        let enc = zstd::Encoder::new(f.as_file(), 1).unwrap().auto_finish();
        let mut b = tar::Builder::new(enc);
        for i in 0..21_000 {
            pax_sized_entry(&mut b, &format!("f{i}"), 61_440);
        }
        b.into_inner().unwrap();
    }
    assert!(std::fs::metadata(f.path()).unwrap().len() < 4 << 20);
    let sandbox = tempfile::tempdir().unwrap();
    let err = extract_in(f.path(), sandbox.path()).unwrap_err();
    assert!(
        matches!(
            err,
            ArchiveError::OverBudget {
                limit: Limit::TotalBytes,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(entries_in(sandbox.path()), 0, "refused before writing");
}

#[test]
fn a_pax_sized_file_unpacks_with_its_pax_size() {
    let f = archive_with(|b| pax_sized_entry(b, "proc/meminfo", 1000));
    let dir = extract(f.path()).unwrap();
    let len = std::fs::metadata(dir.path().join("proc/meminfo"))
        .unwrap()
        .len();
    assert_eq!(len, 1000);
}

#[test]
fn a_symlink_name_bomb_is_refused_by_the_total_before_anything_is_written() {
    // The shape (30 KB name and target) is refused at its first entry; links just under
    // the per-name cap run into the total of symlink text.
    let long = |c: char| vec![c.to_string().repeat(200); 19].join("/");
    for (name, target) in [
        ("a".repeat(30_000), "b".repeat(30_000)),
        (long('a'), long('b')),
    ] {
        let f = zst_archive(|b| {
            for i in 0..6_000 {
                let mut h = header(tar::EntryType::Symlink, 0);
                b.append_link(&mut h, format!("{name}{i}"), &target)
                    .unwrap();
            }
        });
        let sandbox = tempfile::tempdir().unwrap();
        let err = extract_in(f.path(), sandbox.path()).unwrap_err();
        let ArchiveError::OverBudget { limit, .. } = err else {
            panic!("{err}")
        };
        let want = match name.len() > MAX_NAME_BYTES {
            true => Limit::NameBytes,
            false => Limit::LinkBytes,
        };
        assert_eq!(limit, want);
        assert_eq!(entries_in(sandbox.path()), 0);
    }
}

#[test]
fn deep_trees_are_refused_before_anything_is_created() {
    // The shape: paths of 30,000 levels (as GNU long names), then a clashing symlink.
    let deep = "a/".repeat(30_000);
    let f = zst_archive(|b| {
        for i in 0..20 {
            file_entry(b, &format!("{deep}{i}"), b"x");
        }
        symlink_entry(b, "a", "/");
    });
    let sandbox = tempfile::tempdir().unwrap();
    let start = std::time::Instant::now();
    let err = extract_in(f.path(), sandbox.path()).unwrap_err();
    assert!(matches!(err, ArchiveError::OverBudget { .. }), "{err}");
    assert_eq!(entries_in(sandbox.path()), 0);
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
    // Under the name cap, depth is what refuses.
    let f = archive_with(|b| file_entry(b, &format!("{}f", "d/".repeat(MAX_DEPTH)), b"x"));
    let err = extract_in(f.path(), sandbox.path()).unwrap_err();
    assert!(
        matches!(
            err,
            ArchiveError::OverBudget {
                limit: Limit::Depth,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn implied_directories_count_against_the_budget() {
    // Every file implies 60 new directories; no directory entry is ever named.
    let f = zst_archive(|b| {
        let chain = "d/".repeat(59);
        for i in 0..4_000 {
            file_entry(b, &format!("x{i}/{chain}f"), b"x");
        }
    });
    let sandbox = tempfile::tempdir().unwrap();
    let err = extract_in(f.path(), sandbox.path()).unwrap_err();
    assert!(
        matches!(
            err,
            ArchiveError::OverBudget {
                limit: Limit::Dirs,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(entries_in(sandbox.path()), 0);
}

#[test]
fn long_names_are_shortened_in_errors() {
    let f = archive_with(|b| file_entry(b, &format!("{}f", "d/".repeat(3000)), b"x"));
    let err = extract(f.path()).unwrap_err().to_string();
    assert!(err.len() < 500, "{err}");
    assert!(err.contains("(6001 bytes)"), "{err}");
}
