use super::*;
use proptest::prelude::*;

fn any_event() -> impl Strategy<Value = Event> {
    (
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        0..Api::ALL.len(),
        0..Op::ALL.len(),
        any::<bool>(),
        proptest::option::of(0u32..=i32::MAX as u32),
        (any::<u64>(), any::<u64>(), any::<u32>(), any::<i32>()),
    )
        .prop_map(
            |(t_ns, pid, tid, a, o, ze, device, (bytes, address, flags, result))| Event {
                t_ns,
                pid,
                tid,
                api: Api::ALL[a],
                op: Op::ALL[o],
                platform: if ze {
                    Platform::LevelZero
                } else {
                    Platform::Cuda
                },
                device,
                bytes,
                address,
                flags,
                result,
            },
        )
}

proptest! {
    #[test]
    fn events_round_trip(events in proptest::collection::vec(any_event(), 0..70)) {
        let mut buf = Vec::new();
        for e in &events {
            let mut b = [0u8; EVENT_BYTES];
            e.encode(&mut b);
            buf.extend_from_slice(&b);
        }
        prop_assert_eq!(Event::decode_all(&buf).unwrap(), events);
    }

    #[test]
    fn any_bytes_decode_or_fail_without_panic(buf in proptest::collection::vec(any::<u8>(), 0..200)) {
        let r = Event::decode_all(&buf);
        if buf.len() % EVENT_BYTES != 0 {
            prop_assert_eq!(r, Err(DecodeError::Length(buf.len())));
        }
    }
}

#[test]
fn unknown_kind_byte_is_an_error() {
    let mut b = [0u8; EVENT_BYTES];
    b[16] = 200;
    assert_eq!(
        Event::decode(&b),
        Err(DecodeError::UnknownByte {
            field: "api",
            value: 200
        })
    );
}

#[test]
fn names_read_back() {
    for a in Api::ALL {
        assert_eq!(Api::from_name(a.name()), Some(a));
    }
    for o in Op::ALL {
        assert_eq!(Op::from_name(o.name()), Some(o));
    }
    assert_eq!(
        OffReason::from_code(OffReason::NoCupti.as_result()),
        Some(OffReason::NoCupti)
    );
}

#[test]
fn residency_flags_carry_the_owner_and_the_skip() {
    let f = residency_flags(Some(1), true);
    assert_eq!((owner_device(f), f & SKIPPED != 0), (Some(1), true));
    let f = residency_flags(None, false);
    assert_eq!((owner_device(f), f & SKIPPED), (None, 0));
    assert_eq!(Api::from_name("peer_residency"), Some(Api::PeerResidency));
    assert_eq!(
        Platform::LevelZero.result_name(0x7000_0003_u32 as i32),
        Some("ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY")
    );
}

proptest! {
    #[test]
    fn an_inherited_channel_reads_back_as_written(fd in 0..i32::MAX, inode: u64) {
        let c = Inherited { fd, inode };
        prop_assert_eq!(Inherited::parse(&c.to_env()), Some(c));
    }

    #[test]
    fn only_digits_colon_digits_is_an_inherited_channel(s in "[0-9:a -]{0,24}") {
        let well_formed = s.split_once(':').is_some_and(|(a, b)| {
            [a, b].iter().all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
        });
        if let Some(c) = Inherited::parse(&s) {
            prop_assert!(well_formed, "{s:?} read as {c:?}");
        }
    }
}

#[test]
fn fd_values_that_are_not_fd_colon_inode_are_refused() {
    for bad in [
        "",
        "5",
        ":5",
        "5:",
        "-1:2",
        "5:x",
        "5:2:3",
        " 5:2",
        "99999999999:1",
    ] {
        assert_eq!(Inherited::parse(bad), None, "{bad:?}");
    }
    assert_eq!(
        Inherited::parse("7:12"),
        Some(Inherited { fd: 7, inode: 12 })
    );
}
