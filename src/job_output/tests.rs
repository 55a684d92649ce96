use super::*;
use proptest::prelude::*;
use std::io::{Cursor, Read};
use std::sync::Mutex;

fn collect(input: &[u8], rates: Vec<RateSpec>) -> (Collector, Vec<u8>) {
    let sink = Mutex::new(Collector::new(rates));
    let mut out = Vec::new();
    pump(
        Cursor::new(input.to_vec()),
        Some(&mut out),
        Stream::Stderr,
        &sink,
    );
    (sink.into_inner().unwrap(), out)
}

#[test]
fn each_runtime_names_its_kind() {
    let cases = [
        (
            "zeMemAllocDevice: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
            ErrorKind::LevelZero,
        ),
        (
            "<LEVEL_ZERO>[ERROR]: UR_RESULT_ERROR_OUT_OF_RESOURCES",
            ErrorKind::UnifiedRuntime,
        ),
        (
            "terminate called after throwing an instance of 'sycl::_V1::exception'",
            ErrorKind::Sycl,
        ),
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            ErrorKind::Cuda,
        ),
        ("cudaErrorMemoryAllocation", ErrorKind::Cuda),
        (
            "CUBLAS_STATUS_EXECUTION_FAILED when calling cublasSgemm",
            ErrorKind::Cuda,
        ),
        (
            "node1:123:456 [0] NCCL WARN Cuda failure 'out of memory'",
            ErrorKind::Nccl,
        ),
        ("|CCL_ERROR| worker.cpp:338 ze error", ErrorKind::OneCcl),
        (
            "oneCCL: error while creating communicator",
            ErrorKind::OneCcl,
        ),
        ("hipErrorOutOfMemory", ErrorKind::Hip),
        (
            "kwin: Out of memory while allocating",
            ErrorKind::OutOfMemory,
        ),
    ];
    for (line, kind) in cases {
        assert_eq!(classify(line), Some(kind), "{line}");
    }
    for quiet in [
        "wave time 3.0 s",
        "oneCCL 2022.0 initialised",
        "NCCL INFO Bootstrap",
        "",
    ] {
        assert_eq!(classify(quiet), None, "{quiet}");
    }
}

#[test]
fn a_traceback_yields_its_exception_line_even_behind_a_rank_prefix() {
    let text = "[rank0]: Traceback (most recent call last):\n[rank1]: wave time 3.0 s\n[rank0]:   File \"train.py\", line 3, in <module>\n[rank0]:     step()\n[rank0]:     ^^^^^^\n[rank0]: torch.OutOfMemoryError: XPU out of memory\nafter\n";
    let (c, out) = collect(text.as_bytes(), Vec::new());
    assert_eq!(out, text.as_bytes(), "passed through unchanged");
    let mut c = c;
    let batch = c.take();
    let kinds: Vec<(ErrorKind, &str)> = batch
        .errors
        .iter()
        .map(|e| (e.kind, e.line.text.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [(
            ErrorKind::PythonException,
            "[rank0]: torch.OutOfMemoryError: XPU out of memory"
        )]
    );
    assert_eq!(batch.errors[0].line.stream, Stream::Stderr);
    let mut t = Traceback::default();
    assert!(!t.feed("Traceback (most recent call last):"));
    assert!(!t.feed("  File \"x\", line 1"));
    assert!(!t.feed("this is not an exception line"));
    assert!(
        !t.feed("KeyError: 1"),
        "the traceback ended at the line before"
    );
}

#[test]
fn rate_specs_parse_and_refuse_what_they_cannot_use() {
    let r = RateSpec::parse("wave=wave time ([0-9.]+) s:s/wave").unwrap();
    assert_eq!(
        (r.name.as_str(), r.unit.as_deref()),
        ("wave", Some("s/wave"))
    );
    assert_eq!(r.value("12:00 wave time 3.25 s"), Some(3.25));
    assert_eq!(r.value("wave time . s"), None);
    let r = RateSpec::parse("it=(?:step|iter) ([0-9]+)").unwrap();
    assert_eq!((r.unit.as_deref(), r.value("iter 42")), (None, Some(42.0)));
    let r = RateSpec::parse("t=elapsed: ([0-9]+)").unwrap();
    assert_eq!(r.unit, None, "a ':' inside the regex is no unit");
    assert_eq!(r.value("elapsed: 7"), Some(7.0));
    assert!(matches!(
        RateSpec::parse("wave"),
        Err(RateSpecError::Shape(_))
    ));
    assert!(matches!(
        RateSpec::parse("=x(1)"),
        Err(RateSpecError::Shape(_))
    ));
    assert!(matches!(
        RateSpec::parse("a b=(x)"),
        Err(RateSpecError::Name(_))
    ));
    assert!(matches!(
        RateSpec::parse("w=([0-9]"),
        Err(RateSpecError::Regex { .. })
    ));
    assert!(matches!(
        RateSpec::parse("w=[0-9]+"),
        Err(RateSpecError::Groups { groups: 0, .. })
    ));
    assert!(matches!(
        RateSpec::parse("w=([0-9]+) ([0-9]+)"),
        Err(RateSpecError::Groups { groups: 2, .. })
    ));
}

#[test]
fn ten_thousand_error_lines_keep_two_hundred_and_count_the_rest() {
    let text = "UR_RESULT_ERROR_DEVICE_LOST\n".repeat(10_000);
    let (mut c, _) = collect(text.as_bytes(), Vec::new());
    assert_eq!(c.take().errors.len(), MAX_ERROR_LINES);
    let n = c.counts();
    assert_eq!(
        (n.lines, n.errors_kept, n.errors_dropped),
        (10_000, 200, 9_800)
    );
    assert_eq!(c.tail().len(), TAIL_LINES);
}

/// A reader that produces one 10 MB line without ever holding it.
struct Endless(usize);
impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0);
        buf[..n].fill(b'x');
        if n > 0 && n == self.0 {
            buf[n - 1] = b'\n';
        }
        self.0 -= n;
        Ok(n)
    }
}

#[test]
fn a_ten_megabyte_line_is_cut_and_binary_is_lossy() {
    let sink = Mutex::new(Collector::new(Vec::new()));
    let mut passed = 0usize;
    struct Count<'a>(&'a mut usize);
    impl std::io::Write for Count<'_> {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            *self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    pump(
        Endless(10 << 20),
        Some(Count(&mut passed)),
        Stream::Stdout,
        &sink,
    );
    assert_eq!(passed, 10 << 20, "every byte passed through");
    let c = sink.into_inner().unwrap();
    let tail = c.tail();
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0].text.len(), MAX_LINE_BYTES);
    let (c, out) = collect(b"a\xff\x01b\r\nno newline at the end", Vec::new());
    assert_eq!(out, b"a\xff\x01b\r\nno newline at the end");
    let texts: Vec<String> = c.tail().into_iter().map(|l| l.text).collect();
    assert_eq!(texts, ["a\u{fffd}\u{1}b", "no newline at the end"]);
    let long = "é".repeat(MAX_LINE_BYTES);
    assert!(stored_text(long.as_bytes()).len() <= MAX_LINE_BYTES);
}

#[test]
fn markers_are_read_as_appended_and_again_after_truncation() {
    let sink = Mutex::new(Collector::new(Vec::new()));
    let mut m = MarkerFile::create().unwrap();
    let path = m.path().to_path_buf();
    let append = |s: &str| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(s.as_bytes()).unwrap();
    };
    append("epoch 1\n\nepoch 2 part");
    m.read_new(1, &sink).unwrap();
    append("ial\n");
    m.read_new(2, &sink).unwrap();
    std::fs::write(&path, "restart\n").unwrap();
    m.read_new(3, &sink).unwrap();
    let got: Vec<(u64, String)> = sink
        .lock()
        .unwrap()
        .take()
        .markers
        .into_iter()
        .map(|m| (m.t_ms, m.text))
        .collect();
    assert_eq!(
        got,
        [
            (1, "epoch 1".to_string()),
            (2, "epoch 2 partial".into()),
            (3, "restart".into())
        ]
    );
}

proptest! {
    #[test]
    fn classifier_finds_an_error_token_anywhere(pre in ".{0,40}", post in ".{0,40}", i in 0usize..4) {
        let token = ["ZE_RESULT_ERROR_", "UR_RESULT_ERROR_", "CUBLAS_STATUS_", "hipError"][i];
        let line = format!("{pre}{token}{post}");
        prop_assert!(classify(&line).is_some());
    }

    #[test]
    fn classifier_and_rate_parser_never_panic(s in "\\PC{0,80}") {
        let _ = classify(&s);
        let _ = RateSpec::parse(&s);
        let mut t = Traceback::default();
        let _ = t.feed(&s);
    }

    #[test]
    fn a_rate_gives_back_the_number_printed(x in -1e9f64..1e9, name in "[a-z_]{1,10}", unit in "[a-z/]{1,6}") {
        let spec = RateSpec::parse(&format!("{name}=took ([-+0-9.eE]+) {unit}:{unit}")).unwrap();
        prop_assert_eq!(spec.unit.as_deref(), Some(unit.as_str()));
        prop_assert_eq!(spec.value(&format!("[1] took {x} {unit} ok")), Some(x));
    }
}

/// The marker file swapped for `make(path)` by the job: every read returns at once, and the
/// record's last read too.
fn swapped_markers_end_promptly(make: impl FnOnce(&std::path::Path)) {
    let sink = Mutex::new(Collector::new(Vec::new()));
    let mut m = MarkerFile::create().unwrap();
    let path = m.path().to_path_buf();
    std::fs::remove_file(&path).unwrap();
    make(&path);
    let start = std::time::Instant::now();
    for t in 0..3 {
        let _ = m.read_new(t, &sink);
    }
    assert!(
        start.elapsed() < std::time::Duration::from_secs(2),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn a_fifo_or_device_in_place_of_the_marker_file_does_not_hang_the_record() {
    swapped_markers_end_promptly(|p| {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap()
    });
    swapped_markers_end_promptly(|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap());
}

#[test]
fn an_endless_marker_file_is_read_a_bounded_amount_at_a_time() {
    let sink = Mutex::new(Collector::new(Vec::new()));
    let mut m = MarkerFile::create().unwrap();
    let f = std::fs::File::create(m.path()).unwrap();
    f.set_len(64 << 30).unwrap();
    m.read_new(1, &sink).unwrap();
    m.read_new(2, &sink).unwrap();
    assert!(sink.lock().unwrap().take().markers.is_empty());
}

#[test]
fn a_link_out_of_the_marker_directory_is_not_followed() {
    let sink = Mutex::new(Collector::new(Vec::new()));
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "root:secret\n").unwrap();
    let mut m = MarkerFile::create().unwrap();
    std::fs::remove_file(m.path()).unwrap();
    std::os::unix::fs::symlink(secret.path(), m.path()).unwrap();
    assert!(m.read_new(1, &sink).is_err());
    assert!(sink.lock().unwrap().take().markers.is_empty());
}

#[test]
fn the_marker_directory_is_private_and_removed() {
    use std::os::unix::fs::PermissionsExt;
    let m = MarkerFile::create().unwrap();
    let dir = m.path().parent().unwrap().to_path_buf();
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    drop(m);
    assert!(!dir.exists());
}
